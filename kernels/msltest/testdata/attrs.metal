// Test kernel for msltest: every thread writes the attributes it was given.
#include <metal_stdlib>
using namespace metal;

// Row of 16 uints per thread, indexed by thread_position_in_grid in a grid
// of width grid_w (threads outside the grid must not run).
kernel void attrs(
    device uint* out [[buffer(0)]],
    uint3 tpig [[thread_position_in_grid]],
    uint2 tpitg [[thread_position_in_threadgroup]],
    uint3 tgpig [[threadgroup_position_in_grid]],
    uint3 tptg [[threads_per_threadgroup]],
    uint2 tpg [[threads_per_grid]],
    uint tgpg [[threadgroups_per_grid]],
    uint tiitg [[thread_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]],
    uint nsg [[simdgroups_per_threadgroup]],
    uint w [[threads_per_simdgroup]],
    uint3 dtptg [[dispatch_threads_per_threadgroup]]) {
  device uint* o = out + (tpig.y * tpg.x + tpig.x) * 16;
  o[0] = tpig.x; o[1] = tpig.y; o[2] = tpitg.x; o[3] = tpitg.y;
  o[4] = tgpig.x; o[5] = tgpig.y; o[6] = tptg.x; o[7] = tptg.y;
  o[8] = tgpg; o[9] = tiitg; o[10] = lane; o[11] = sg;
  o[12] = nsg; o[13] = w; o[14] = dtptg.x * 1000 + dtptg.y; o[15] = 1;
}
