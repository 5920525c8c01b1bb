package kernels

// gateSiluAVX runs gateSilu over n8*8 elements (useAVX512 must hold); c is gateConsts,
// tab exp2Frac.
//
//go:noescape
func gateSiluAVX(y, z *float32, n8 int, c *[10]float64, tab *[32]float64)
