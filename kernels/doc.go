// Package kernels is ingot's kernel catalog: every operation the engine runs, each with
// a name, a parameter struct and two twins. The Go twin (Kernel.CPU) runs on the CPU
// device everywhere and is the oracle; the MSL twin (a .metal file per family, bound
// by Kernel.Encode) runs on Apple GPUs. Devices execute Launch values by kernel name,
// so "does Metal compute what the CPU computes" is one generic test over the catalog.
//
// Kernels receive buffers as Args: the whole buffer's bytes plus a Layout (shape,
// strides and offset in elements, dtype). Outputs are contiguous; elementwise kernels
// accept strided and broadcast inputs, the others document what they require.
package kernels
