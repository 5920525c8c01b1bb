//go:build linux

package alloc

import "syscall"

// totalRAM reports the machine's physical memory, or the fallback when the
// kernel will not say.
func totalRAM() int64 {
	var info syscall.Sysinfo_t
	if err := syscall.Sysinfo(&info); err != nil || info.Totalram == 0 {
		return fallbackRAM
	}
	unit := uint64(info.Unit)
	if unit == 0 {
		unit = 1
	}
	return int64(uint64(info.Totalram) * unit)
}
