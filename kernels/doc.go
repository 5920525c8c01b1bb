// Package kernels is ingot's kernel catalog: every operation the engine runs, each with
// a name, a parameter struct and two twins. The Go twin (Kernel.CPU) runs on the CPU
// device everywhere and is the oracle; the MSL twin (a .metal file per family, bound
// by Kernel.Encode) runs on Apple GPUs. Devices execute Launch values by kernel name,
// so "does Metal compute what the CPU computes" is one generic test over the catalog.
//
// Kernels receive buffers as Args: the whole buffer's bytes plus a Layout (shape,
// strides and offset in elements, dtype). Outputs are contiguous; elementwise kernels
// accept strided and broadcast inputs, the others document what they require.
//
// Summation order. The Go twin fixes every order, and its fast paths keep it bit for
// bit. A dot product (linear, switch_glu's three projections, sdpa's scores) runs in
// four float32 lanes, lane j taking k = j mod 4 in increasing k, the tail k >= K&^3
// added to lane 0, then (lane0 + lane1) + (lane2 + lane3); every product is rounded
// before it is added (no FMA). On amd64 with AVX, simd_amd64.s computes eight such rows
// at once (two rows per ymm register, one row's four lanes per 128-bit half, VMULPS then
// VADDPS), so it rounds exactly as the Go loop; K not a multiple of 4 and the last
// rows of a block take the Go loop. sdpa's weighted sum of values adds key by key in
// key order per output element (vectorised across elements, not keys); its weights'
// float64 sum runs in four lanes like the dot. The exponential of silu, sigmoid,
// switch_glu and sdpa is exp32 (float32, under 1 ulp; elementwise_exp.go),
// eight at a time in assembly with AVX2, bit-identical again. The MSL twins
// use their own orders and agree within the catalog's tolerance.
package kernels
