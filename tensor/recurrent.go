package tensor

import (
	"slices"

	"github.com/ingotml/ingot/kernels"
)

// Recurrent ops of the Gated DeltaNet layers: the causal depthwise conv and the gated
// delta rule. Both copy non-contiguous inputs to dense ones first (their kernels index
// dense rows).

// DepthwiseConv1d is a valid (unpadded) depthwise cross-correlation over time:
// x [B, T, C] with T >= K, w [C, K] -> [B, T-K+1, C], out[b,t,c] = sum_j w[c,j]*x[b,t+j,c].
// (The model concatenates its conv state [B, K-1, C] in front of the new inputs first.)
// x and w are promoted to a common float dtype (integers become float32), the output's.
func DepthwiseConv1d(x, w Array) Array {
	const op = "depthwise_conv1d"
	same(op, x, w)
	if x.NDim() != 3 || w.NDim() != 2 {
		shapePanic(op, "x %v must be [B, T, C] and w %v [C, K]", x.Shape(), w.Shape())
	}
	b, t, c := x.Dim(0), x.Dim(1), x.Dim(2)
	k := w.Dim(1)
	if w.Dim(0) != c || k < 1 || t < k {
		shapePanic(op, "x %v and w %v: need w [C, K] with 1 <= K <= T", x.Shape(), w.Shape())
	}
	dt := promote(x.DType(), w.DType())
	if !dt.IsFloat() {
		dt = Float32
	}
	x, w = Contiguous(x.AsType(dt)), Contiguous(w.AsType(dt))
	return Array{x.Graph().Apply(kernels.KDepthwiseConv1d, nil, dt, []int{b, t - k + 1, c}, x.h, w.h)}
}

// GatedDelta runs the gated delta recurrence over T steps. q, k [B, T, Hk, Dk] (q
// l2-normalised and scaled by Dk^-0.5, k l2-normalised, by the caller); v [B, T, Hv, Dv];
// g (log-decay) and beta [B, T, Hv]; state [B, Hv, Dv, Dk] (mlx-lm's layout,
// state[b,h,dv,dk]); mask bool [B, T] (true = valid step) or an invalid Array{} for none.
// Value head h uses key head h/(Hv/Hk); Hv must be a multiple of Hk and Dk at most
// kernels.GatedDeltaMaxDk. Per (b, h) and step t, with S the [Dv, Dk] state:
//
//	S = S * exp(g);  kv[dv] = sum_dk S[dv,dk]*k[dk];  delta = (v - kv) * beta;
//	S[dv,dk] += delta[dv] * k[dk];  y[dv] = sum_dk S[dv,dk]*q[dk].
//
// A masked step leaves the state unchanged and outputs 0. All arithmetic is float32
// (inputs are cast). It returns y [B, T, Hv, Dv] and the final state [B, Hv, Dv, Dk],
// two views of one node whose buffer packs y and then the state.
func GatedDelta(q, k, v, g, beta, state, mask Array) (y, newState Array) {
	const op = "gated_delta"
	for _, a := range []Array{k, v, g, beta, state} {
		same(op, q, a)
	}
	if q.NDim() != 4 || v.NDim() != 4 {
		shapePanic(op, "q %v and v %v must be [B, T, H, D]", q.Shape(), v.Shape())
	}
	b, t, hk, dk := q.Dim(0), q.Dim(1), q.Dim(2), q.Dim(3)
	hv, dv := v.Dim(2), v.Dim(3)
	switch {
	case !slices.Equal(k.Shape(), q.Shape()):
		shapePanic(op, "k %v differs from q %v", k.Shape(), q.Shape())
	case v.Dim(0) != b || v.Dim(1) != t:
		shapePanic(op, "v %v does not match q %v in [B, T]", v.Shape(), q.Shape())
	case hk == 0 || hv%hk != 0:
		shapePanic(op, "value heads %d are not a multiple of key heads %d", hv, hk)
	case dk > kernels.GatedDeltaMaxDk:
		shapePanic(op, "key head size %d exceeds %d", dk, kernels.GatedDeltaMaxDk)
	case !slices.Equal(g.Shape(), []int{b, t, hv}) || !slices.Equal(beta.Shape(), []int{b, t, hv}):
		shapePanic(op, "g %v and beta %v must be [B, T, Hv] = %v", g.Shape(), beta.Shape(), []int{b, t, hv})
	case !slices.Equal(state.Shape(), []int{b, hv, dv, dk}):
		shapePanic(op, "state %v must be [B, Hv, Dv, Dk] = %v", state.Shape(), []int{b, hv, dv, dk})
	}
	ins := []Array{q, k, v, g, beta, state}
	for i, a := range ins {
		ins[i] = Contiguous(a.AsType(Float32))
	}
	if mask.Valid() {
		same(op, q, mask)
		if !slices.Equal(mask.Shape(), []int{b, t}) {
			shapePanic(op, "mask %v must be [B, T] = %v", mask.Shape(), []int{b, t})
		}
		ins = append(ins, Contiguous(mask.AsType(Bool)))
	}
	ny, ns := b*t*hv*dv, b*hv*dv*dk
	packed := Array{q.Graph().Apply(kernels.KGatedDelta, nil, Float32, []int{ny + ns}, handles(ins)...)}
	yl := kernels.Contiguous(Float32, b, t, hv, dv)
	sl := kernels.Contiguous(Float32, b, hv, dv, dk)
	sl.Offset = ny
	y, newState = view(packed, yl), view(packed, sl)
	if ny > ns {
		// A prompt's y is larger than the state (t > dk): the state, which a cache keeps
		// until the next forward, gets a buffer of its own instead of pinning y's.
		newState = Copy(newState)
	}
	return y, newState
}
