// Package alloc is ingot's device-memory allocator. It mirrors the
// accounting of MLX's Metal allocator exactly, on every device, so that a
// program run on Linux with the CPU provider reaches MLX's
//
//	[metal::malloc] Resource limit (499000) exceeded.
//
// at the same buffer-object count a Mac does.
//
// # What is counted
//
// One counter: device buffer objects alive, meaning buffers in use plus
// buffers parked in the reuse cache (ActiveBufferCount). Only a cache miss
// compares it with the resource limit, after first dropping cached buffers;
// so in effect the error means the live buffers reached the limit. Size-0
// requests return a nil Buffer and count nothing. Histogram breaks the live
// buffers down by power-of-two size class, which is how a leak of 4-byte
// scalars shows up.
//
// A Provider only creates and destroys raw buffers (Go memory from
// CPUProvider, MTLBuffers from the metal package); the rules live here once.
//
// # Limits
//
// The resource limit defaults to 499000, MLX's fallback when macOS does not
// report iogpu.rsrc_limit. Config.ResourceLimit overrides it; when that is 0
// the environment variable INGOT_RESOURCE_LIMIT is used if it holds a
// positive integer (otherwise it is ignored).
//
// Byte limits follow MLX from the recommended working set rws (the
// provider's figure, or 0.75 x RAM when it reports 0) and RAM (from
// sysinfo(2) on Linux, a fixed 16 GiB elsewhere):
//
//	memory limit = min(1.5 x rws, 0.95 x RAM)
//	gc limit     = min(0.95 x rws, memory limit)
//	cache limit  = memory limit
//
// For CPUProvider, rws = 0.75 x RAM, which gives memory limit 0.95 x RAM,
// gc limit 0.7125 x RAM, cache limit 0.95 x RAM, and a largest single buffer
// of 0.75 x RAM. The memory limit is reported but, as in MLX, not enforced
// by Malloc.
//
// # Differences from MLX
//
// The accounting is MLX's; two mechanics are ingot's own. Malloc keeps its
// lock while the provider creates a buffer, so concurrent misses cannot
// overshoot the limit. And when a miss still finds the count at the limit
// after dropping the cache, Malloc first calls the reclaimer (see
// SetReclaimer), which lets the graph package free buffers whose arrays Go's
// GC has found unreachable, drops the cache again, and only then fails.
package alloc
