package kernels

// gdRows512 runs gdRowsAVX's step over n16*16 interleaved state rows (gd512.go).
//
//go:noescape
func gdRows512(s, k, q, v, y *float32, n16, dk4 int, decay, beta float32)
