package metal

import (
	"fmt"
	"strings"

	"github.com/ingotml/ingot/alloc"
)

// DefaultResourceLimit is the buffer-object limit MLX assumes when the
// iogpu.rsrc_limit sysctl is missing or zero, which is what current macOS
// reports.
const DefaultResourceLimit = alloc.DefaultResourceLimit

// resourceLimitFrom turns a raw iogpu.rsrc_limit reading into the limit in
// force; ok is false when the sysctl could not be read.
func resourceLimitFrom(v int64, ok bool) int {
	if !ok || v <= 0 {
		return DefaultResourceLimit
	}
	return int(v)
}

// minMacOS is the oldest macOS NewGPU accepts: the kernels are MSL 3.1 (bfloat), which
// macOS 13's compiler does not know, and would then fail whole families for good.
const minMacOS = 14

// checkMacOS refuses a macOS older than minMacOS, with an error wrapping ErrUnavailable.
func checkMacOS(major int) error {
	if major < minMacOS {
		return fmt.Errorf("%w: macOS %d or later is needed (the kernels are MSL 3.1); this is macOS %d",
			ErrUnavailable, minMacOS, major)
	}
	return nil
}

// heapsUsable reports whether small buffers may come from MTLHeaps on the named device:
// not on the paravirtual GPU of macOS virtual machines (CI runners), where heap
// creation can assert, as MLX also avoids.
func heapsUsable(deviceName string) bool {
	return !strings.Contains(deviceName, "Paravirtual")
}

// chipCommitLimits is MLX's command-buffer cut for a GPU architecture name (MTLDevice's
// architecture.name, e.g. "applegpu_g13s"), by its last letter, the chip class: 20
// dispatches and 40 MiB on phones (p), 40 and 40 MiB on base and Pro chips (g), 50 and
// 50 MiB on Max and Ultra (s, d), and 40 and 40 MiB for anything else.
func chipCommitLimits(arch string) (dispatches, bytes int) {
	switch arch[max(len(arch)-1, 0):] {
	case "p":
		return 20, 40 << 20
	case "s", "d":
		return 50, 50 << 20
	}
	return 40, 40 << 20
}
