//go:build darwin

package metal

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/progrium/macdriver/macos/metal"
	"github.com/progrium/macdriver/objc"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// TestMacReport writes scripts/mac-check.sh's device section to the file named by
// INGOT_MAC_REPORT (skipped without it): the macOS version, the GPU's name, family and
// SIMD probe, Accept's verdict, each family's compile result and time, and the device's
// real bytes for a 4-byte buffer. It fails when any of them is wrong.
func TestMacReport(t *testing.T) {
	path := os.Getenv("INGOT_MAC_REPORT")
	if path == "" {
		t.Skip("INGOT_MAC_REPORT is not set (scripts/mac-check.sh sets it)")
	}
	var b strings.Builder
	defer func() { require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644)) }()
	d := openOrSkip(t)
	p := darwinProbe{d}
	fmt.Fprintf(&b, "macOS major version: %d\n", p.MacOSMajor())
	fmt.Fprintf(&b, "GPU: %s (architecture %q)\n", d.Name(), d.arch)
	fmt.Fprintf(&b, "MTLGPUFamilyApple7: %v; paravirtual: %v\n", p.SupportsApple7(), paravirtual(d.Name()))
	width, wrote, err := p.ProbeSIMD()
	fmt.Fprintf(&b, "SIMD probe: threadExecutionWidth %d, the kernel stored %d, error %v\n", width, wrote, err)
	fmt.Fprintf(&b, "max buffer %d bytes, working set %d bytes, resource limit %d, heaps %v\n",
		d.MaxBufferLength(), d.RecommendedWorkingSet(), d.ResourceLimit(), d.heaps)

	var real uint64
	objc.WithAutoreleasePool(func() {
		buf := objc.Call[metal.BufferWrapper](d.mtl, selNewBuffer, uint(4), bufferOptions)
		require.False(t, buf.IsNil(), "a 4-byte buffer")
		real = objc.Call[uint64](buf, objc.Sel("allocatedSize"))
		buf.Release()
	})
	fmt.Fprintf(&b, "a 4-byte buffer: allocatedSize %d bytes\n", real)

	failed := 0
	for _, f := range Families() {
		src, err := kernels.Source(f)
		require.NoError(t, err)
		start := time.Now()
		_, err = d.compile(f, src)
		ms := time.Since(start).Milliseconds()
		if err != nil {
			failed++
			fmt.Fprintf(&b, "compile %-12s FAILED after %d ms: %v\n", f, ms, err)
			continue
		}
		fmt.Fprintf(&b, "compile %-12s ok, %d ms\n", f, ms)
	}
	g, err := NewGPU(GPUOptions{})
	fmt.Fprintf(&b, "NewGPU (Accept): %v\n", errText(err))
	if err == nil {
		err = g.Ready()
		fmt.Fprintf(&b, "GPU.Ready (every family, compiled in the background): %v\n", errText(err))
	}
	require.NoError(t, err)
	require.Zero(t, failed, "families that failed to compile")
	require.Equal(t, 32, width)
	require.Equal(t, 32, wrote)
	require.NotZero(t, real)
}

// errText is "ok" for nil, else the error's text.
func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
