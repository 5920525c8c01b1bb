package metal

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/ingotml/ingot/kernels"
)

// This file decides whether NewGPU accepts the system's Metal device. The decision
// is plain Go over a Probe's answers, so the tests drive it on every platform with
// fake devices; on darwin NewGPU asks the real one.

// Probe is what NewGPU asks a Metal device before accepting it. On darwin it is the
// system's default device; tests implement it with fixed answers.
type Probe interface {
	// MacOSMajor is the running macOS's major version.
	MacOSMajor() int
	// DeviceName is the device's name, e.g. "Apple M2 Max".
	DeviceName() string
	// SupportsApple7 is supportsFamily:MTLGPUFamilyApple7 (M1 and later).
	SupportsApple7() bool
	// ProbeSIMD compiles and runs a one-thread probe kernel: width is its pipeline's
	// threadExecutionWidth, wrote what the kernel stored (threads_per_simdgroup; 0 if
	// the device ran nothing, as some virtual GPUs do).
	ProbeSIMD() (width, wrote int, err error)
}

// simdWidth is the SIMD-group width every kernel assumes: simd_sum and the shuffles
// reduce over 32 lanes, and the threadgroup sizes are multiples of 32.
const simdWidth = 32

// paravirtual reports whether name is the virtual GPU of a macOS virtual machine on
// Apple silicon (GitHub's arm64 runners): it advertises no Apple GPU family, but runs
// on one, so the SIMD probe decides for it.
func paravirtual(name string) bool { return strings.Contains(name, "Paravirtual") }

// Accept is nil when NewGPU may run on the device p describes, else why not, wrapping
// ErrUnavailable: a macOS older than 14 (MSL 3.1), a GPU that is not Apple silicon
// (no Apple7 family: an Intel Mac's AMD or Intel GPU), a SIMD width other than 32, or
// a probe kernel that ran without effect. The checks go cheapest first, so a refused
// machine compiles nothing. The families are compiled after it, in the background
// (startBuilds); a family that does not compile refuses the device at GPU.Ready
// (readyError).
func Accept(p Probe) error {
	if err := checkMacOS(p.MacOSMajor()); err != nil {
		return err
	}
	name := p.DeviceName()
	if !p.SupportsApple7() && !paravirtual(name) {
		return fmt.Errorf("%w: %s is not an Apple-silicon GPU (no MTLGPUFamilyApple7); the kernels assume one",
			ErrUnavailable, name)
	}
	width, wrote, err := p.ProbeSIMD()
	if err != nil {
		return fmt.Errorf("%w: %s: the probe kernel: %w", ErrUnavailable, name, err)
	}
	if width != simdWidth {
		return fmt.Errorf("%w: %s runs SIMD groups of %d threads; the kernels assume %d",
			ErrUnavailable, name, width, simdWidth)
	}
	if wrote != simdWidth {
		return fmt.Errorf("%w: %s ran the probe kernel without effect (it stored %d, want %d)",
			ErrUnavailable, name, wrote, simdWidth)
	}
	return nil
}

// readyError waits for every family's compile and is nil when all compiled, else the
// first failure in family order, worded as Accept's refusals (wrapping ErrUnavailable
// and the *CompileError): GPU.Ready's answer.
func readyError(name string, s *familyBuilds) error {
	if err := s.waitAll(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, name, err)
	}
	return nil
}

// Families is the name of every kernel family with a Metal twin, sorted: what
// NewGPU starts compiling once it accepts a device.
func Families() []string {
	seen := map[string]bool{}
	var out []string
	for _, k := range kernels.All() {
		if k.Encode != nil && !seen[k.Family] {
			seen[k.Family] = true
			out = append(out, k.Family)
		}
	}
	sort.Strings(out)
	return out
}

// RequireEnv names the environment variable that turns the Metal tests' skips (no
// device, a refused device) into failures: the macOS CI job sets it, so that a runner
// without a working Metal device fails instead of passing with nothing run.
const RequireEnv = "INGOT_REQUIRE_METAL"

// Required reports whether RequireEnv is set (to anything but "" or "0").
func Required() bool {
	v := os.Getenv(RequireEnv)
	return v != "" && v != "0"
}
