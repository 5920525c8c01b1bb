package kernels

// Groups1D is the usual dispatch of a 1-D elementwise kernel over n threads.
func Groups1D(n int) (grid, group [3]int) {
	g := 256
	if n < g {
		g = max(n, 1)
	}
	return [3]int{max(n, 1), 1, 1}, [3]int{g, 1, 1}
}
