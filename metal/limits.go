package metal

import "github.com/ingotml/ingot/alloc"

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
