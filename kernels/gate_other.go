//go:build !amd64

package kernels

func gateSiluAVX(y, z *float32, n8 int, c *[10]float64, tab *[32]float64) {
	panic("kernels: gateSiluAVX without assembly")
}
