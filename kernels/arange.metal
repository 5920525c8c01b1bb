// arange family: out[i] = start + i * step, written in the output dtype.
#include "prelude.metal"

kernel void arange_float32(device float* out [[buffer(0)]],
                           constant ArangeConsts& p [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
    if (int(i) < p.n) {
        out[i] = p.start + float(i) * p.step;
    }
}

kernel void arange_int32(device int* out [[buffer(0)]],
                         constant ArangeConsts& p [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) {
    if (int(i) < p.n) {
        out[i] = int(p.start + float(i) * p.step);
    }
}
