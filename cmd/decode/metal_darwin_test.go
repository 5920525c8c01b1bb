//go:build darwin

package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/metal"
)

// TestMetalCrashesAtTheCPUToken: the same config crashes at the same token on the GPU
// as on the CPU device (the allocator counts the same objects), and survives with the
// eager cache. Runs only on a Mac with a Metal device.
func TestMetalCrashesAtTheCPUToken(t *testing.T) {
	if !metal.Available() {
		if metal.Required() {
			t.Fatalf("%s is set, and there is no Metal device", metal.RequireEnv)
		}
		t.Skip("no Metal device: this test needs a Mac with a GPU")
	}
	args := []string{"--layers", "12", "--limit", "8000", "--tokens", "5000", "--report-every", "100"}
	code, out, cpu := decode(t, append(args, "--device", "cpu")...)
	require.Equal(t, exitCrash, code, out)
	code, out, gpu := decode(t, append(args, "--device", "metal")...)
	require.Equal(t, exitCrash, code, out)
	require.Equal(t, "metal", gpu["device"])
	require.Equal(t, cpu["crash_token"], gpu["crash_token"], out)
	code, out, _ = decode(t, append(args, "--device", "metal", "--cache", "eager")...)
	require.Equal(t, exitFlat, code, out)
}

// TestMetalDeviceFlag: --device metal exits 69 on a Mac without a Metal device, and
// runs on one that has it.
func TestMetalDeviceFlag(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"--device", "metal", "--layers", "4", "--tokens", "16", "--cache", "eager"}, &out, &errb)
	if !metal.Available() {
		require.False(t, metal.Required(), "%s is set, and there is no Metal device", metal.RequireEnv)
		require.Equal(t, exitNoDev, code, errb.String())
		require.Contains(t, errb.String(), "metal")
		return
	}
	require.Equal(t, exitFlat, code, out.String()+errb.String())
	require.Contains(t, out.String(), "device=metal")
}
