// moe family: the fused SwitchGLU expert block. One threadgroup per token t: for each
// routed expert in turn, its threads compute the I activations silu(gate . x) * (up . x)
// once into threadgroup memory, then each thread adds s_j * (down row h . act) to the
// outputs h it owns. Each activation is computed once per (token, expert): O(T*K*I*H)
// per dispatch. Dots use the Go twin's fixed order (prelude's fixed_dot).
#include "prelude.metal"

// MOE_MAX_I bounds the expert width I (16 KiB of threadgroup memory; the host refuses
// more).
#define MOE_MAX_I 4096

kernel void switch_glu_float32(const device float* x [[buffer(0)]],
                               const device float* gate [[buffer(1)]],
                               const device float* up [[buffer(2)]],
                               const device float* down [[buffer(3)]],
                               const device int* idx [[buffer(4)]],
                               const device float* scores [[buffer(5)]],
                               device float* out [[buffer(6)]],
                               constant SwitchGLUParams& p [[buffer(7)]],
                               uint t [[threadgroup_position_in_grid]],
                               uint tid [[thread_index_in_threadgroup]],
                               uint ntg [[threads_per_threadgroup]]) {
    threadgroup float act[MOE_MAX_I];
    if (int(t) >= p.T) return;
    const device float* xr = x + size_t(t) * size_t(p.H);
    device float* yr = out + size_t(t) * size_t(p.H);
    // Thread tid owns outputs tid, tid + ntg, ...: no other thread touches them.
    for (int h = int(tid); h < p.H; h += int(ntg)) {
        yr[h] = 0.0f;
    }
    for (int j = 0; j < p.K; j++) {
        int e = idx[t * uint(p.K) + uint(j)];
        if (e < 0) e += p.E;
        if (e < 0 || e >= p.E) continue; // the same for the whole threadgroup
        // 64-bit offsets: all experts' weights can pass 2^31 elements.
        size_t ei = size_t(e) * size_t(p.I);
        for (int i = int(tid); i < p.I; i += int(ntg)) {
            float g = fixed_dot(xr, gate + (ei + size_t(i)) * size_t(p.H), p.H);
            float u = fixed_dot(xr, up + (ei + size_t(i)) * size_t(p.H), p.H);
            act[i] = (g / (1.0f + exp(-g))) * u;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup); // every activation written
        float s = scores[t * uint(p.K) + uint(j)];
        size_t eh = size_t(e) * size_t(p.H);
        for (int h = int(tid); h < p.H; h += int(ntg)) {
            yr[h] += fixed_dot(down + (eh + size_t(h)) * size_t(p.I), act, p.I) * s;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup); // every read done before the next expert's
    }
}
