package metal

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeProbe is a device's answers to Accept, and a record of what was asked.
type fakeProbe struct {
	macOS        int
	name         string
	apple7       bool
	width, wrote int
	probeErr     error
	probed       bool
}

func (f *fakeProbe) MacOSMajor() int      { return f.macOS }
func (f *fakeProbe) DeviceName() string   { return f.name }
func (f *fakeProbe) SupportsApple7() bool { return f.apple7 }
func (f *fakeProbe) ProbeSIMD() (int, int, error) {
	f.probed = true
	return f.width, f.wrote, f.probeErr
}

// m2 is an Apple-silicon Mac that Accept takes.
func m2() *fakeProbe {
	return &fakeProbe{macOS: 15, name: "Apple M2 Max", apple7: true, width: 32, wrote: 32}
}

func TestAcceptAppleSilicon(t *testing.T) {
	f := m2()
	require.NoError(t, Accept(f))
	require.True(t, f.probed, "the probe ran")
}

// TestAcceptParavirtual: the virtual GPU of GitHub's arm64 macOS runners advertises no
// Apple family (it reports Apple5 only); the SIMD probe decides for it.
func TestAcceptParavirtual(t *testing.T) {
	f := m2()
	f.name, f.apple7 = "Apple Paravirtual device", false
	require.NoError(t, Accept(f))
}

// TestAcceptRefusals: each reason Metal is refused, with the exact message --device
// auto prints before it falls back to the CPU. The old NewGPU checked the macOS
// version only, and nothing refused the others.
func TestAcceptRefusals(t *testing.T) {
	cases := []struct {
		name   string
		change func(f *fakeProbe)
		want   string
		probed bool // whether the probe ran before the refusal
	}{
		{"macOS 13", func(f *fakeProbe) { f.macOS = 13 },
			"metal: no Metal device: macOS 14 or later is needed (the kernels are MSL 3.1); this is macOS 13", false},
		{"Intel Mac", func(f *fakeProbe) { f.name, f.apple7, f.width = "AMD Radeon Pro 5500M", false, 64 },
			"metal: no Metal device: AMD Radeon Pro 5500M is not an Apple-silicon GPU (no MTLGPUFamilyApple7); the kernels assume one", false},
		{"SIMD width 64", func(f *fakeProbe) { f.width, f.wrote = 64, 64 },
			"metal: no Metal device: Apple M2 Max runs SIMD groups of 64 threads; the kernels assume 32", true},
		{"probe without effect", func(f *fakeProbe) { f.wrote = 0 },
			"metal: no Metal device: Apple M2 Max ran the probe kernel without effect (it stored 0, want 32)", true},
		{"probe fails", func(f *fakeProbe) { f.probeErr = errors.New("Compiler encountered an internal error") },
			"metal: no Metal device: Apple M2 Max: the probe kernel: Compiler encountered an internal error", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := m2()
			c.change(f)
			err := Accept(f)
			require.ErrorIs(t, err, ErrUnavailable)
			require.EqualError(t, err, c.want)
			require.Equal(t, c.probed, f.probed, "the probe ran")
		})
	}
}
