//go:build !linux

package alloc

// totalRAM reports the fallback figure: outside Linux there is no portable
// system call for it, and the figure only sets byte limits that rarely bind.
func totalRAM() int64 { return fallbackRAM }
