// Package membw measures the machine's memory read bandwidth, so that benchmarks can
// report their effective bytes per second as a share of what the machine delivers in
// the same run (a shared machine's bandwidth moves by tens of percent between runs).
//
// Probe streams a buffer far larger than the caches with 256-bit loads (AVX2 where the
// CPU has it, a plain Go loop elsewhere) from one goroutine per core and reports the best of a few
// passes.
package membw
