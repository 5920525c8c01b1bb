package tensor

import (
	"math"
	"slices"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
)

// Fused neural-network ops. Their kernels take float32 only: other dtypes are cast to
// float32 on the way in and the result back to the input's float dtype (float32 for
// integer inputs). For float32 inputs in the layout a kernel needs, each op is one node.

// f32c returns a as a contiguous float32 array (a itself when it already is one).
func f32c(a Array) Array { return Contiguous(a.AsType(Float32)) }

// floatOut is the result dtype of a float op on inputs of dtypes ds: their promotion,
// or float32 when that is not a float type.
func floatOut(ds ...DType) DType {
	d := ds[0]
	for _, e := range ds[1:] {
		d = promote(d, e)
	}
	if !d.IsFloat() {
		return Float32
	}
	return d
}

// Softmax is exp(a - max) / sum(exp(a - max)) along axis, computed in float32. A slice
// along axis holding NaN, or only -Inf, gives NaN.
func Softmax(a Array, axis int) Array {
	if !a.Valid() {
		shapePanic("softmax", "invalid array")
	}
	ax := opAxis("softmax", axis, a.NDim())
	x, back := moveLast(a, ax)
	x = f32c(x)
	r := Array{x.Graph().Apply(kernels.KSoftmax, nil, Float32, x.Shape(), x.h)}
	r = r.AsType(floatOut(a.DType()))
	if back != nil {
		r = Transpose(r, back...)
	}
	return r
}

// checkNorm validates the operands of the RMS norms: x of rank >= 1, z (if valid)
// shaped like x, w (if valid) of shape [D] with D = x's last dim, eps >= 0.
func checkNorm(op string, x, z, w Array, eps float64) {
	if !x.Valid() {
		shapePanic(op, "invalid array")
	}
	if x.NDim() == 0 {
		shapePanic(op, "x must have at least one axis")
	}
	if z.Valid() {
		same(op, x, z)
		if !slices.Equal(x.Shape(), z.Shape()) {
			shapePanic(op, "gate shape %v differs from x shape %v", z.Shape(), x.Shape())
		}
	}
	if w.Valid() {
		same(op, x, w)
		if w.NDim() != 1 || w.Dim(0) != x.Dim(-1) {
			shapePanic(op, "weight shape %v for x shape %v (want [%d])", w.Shape(), x.Shape(), x.Dim(-1))
		}
	}
	if !(eps >= 0) || math.IsInf(eps, 0) {
		shapePanic(op, "eps %v must be finite and >= 0", eps)
	}
}

// RMSNorm normalises over the last axis: x * rsqrt(mean(x^2) + eps) * w, with w of shape
// [D]; an invalid Array{} w means no weight. Computed in float32.
func RMSNorm(x, w Array, eps float64) Array {
	checkNorm("rms_norm", x, Array{}, w, eps)
	out := floatOut(x.DType())
	hs := []*graph.Handle{f32c(x).h}
	if w.Valid() {
		out = floatOut(x.DType(), w.DType())
		hs = append(hs, f32c(w).h)
	}
	r := Array{x.Graph().Apply(kernels.KRMSNorm, &kernels.NormParams{Eps: eps}, Float32, x.Shape(), hs...)}
	return r.AsType(out)
}

// GatedRMSNorm is RMSNorm(x, w, eps) * silu(z), z shaped like x (Qwen3.5's
// linear_attn.norm, whose weight is used as is). Computed in float32.
func GatedRMSNorm(x, z, w Array, eps float64) Array {
	if !z.Valid() {
		shapePanic("gated_rms_norm", "invalid gate")
	}
	checkNorm("gated_rms_norm", x, z, w, eps)
	out := floatOut(x.DType(), z.DType())
	hs := []*graph.Handle{f32c(x).h, f32c(z).h}
	if w.Valid() {
		out = floatOut(x.DType(), z.DType(), w.DType())
		hs = append(hs, f32c(w).h)
	}
	r := Array{x.Graph().Apply(kernels.KGatedRMSNorm, &kernels.NormParams{Eps: eps}, Float32, x.Shape(), hs...)}
	return r.AsType(out)
}

// RoPE applies rotary position embeddings to x [B, H, S, D] with rotate-half (NeoX)
// pairing on the first dims (even, <= D) of each head: theta_i = pos * base^(-2i/dims)
// for i < dims/2; dims from `dims` on pass through. The position of x[b, :, s, :] is
// offsets[b] + s, offsets an integer array of shape [B] (per-row offsets for batched
// caches). Computed in float32 with float64 angles on the CPU.
func RoPE(x Array, dims int, base float64, offsets Array) Array {
	const op = "rope"
	if !x.Valid() || !offsets.Valid() {
		shapePanic(op, "invalid array")
	}
	same(op, x, offsets)
	if x.NDim() != 4 {
		shapePanic(op, "x must be [B, H, S, D], got %v", x.Shape())
	}
	if dims <= 0 || dims%2 != 0 || dims > x.Dim(3) {
		shapePanic(op, "dims %d must be even, positive and <= head dim %d", dims, x.Dim(3))
	}
	if dims > 512 {
		shapePanic(op, "dims %d exceeds 512 (the Metal twin's frequency table)", dims)
	}
	if !(base > 0) || math.IsInf(base, 0) {
		shapePanic(op, "base %v must be finite and > 0", base)
	}
	if offsets.NDim() != 1 || offsets.Dim(0) != x.Dim(0) {
		shapePanic(op, "offsets shape %v for batch %d (want [%d])", offsets.Shape(), x.Dim(0), x.Dim(0))
	}
	if offsets.DType().IsFloat() {
		shapePanic(op, "offsets must be integers, got %s", offsets.DType())
	}
	xs, off := f32c(x), Contiguous(offsets.AsType(Int32))
	p := &kernels.RoPEParams{Dims: dims, Base: base}
	r := Array{x.Graph().Apply(kernels.KRoPE, p, Float32, x.Shape(), xs.h, off.h)}
	return r.AsType(floatOut(x.DType()))
}

// unitLast returns a as float32 with a unit stride on its last axis (copying only when
// it has another stride), the layout KSDPA takes for keys and values.
func unitLast(a Array) Array {
	a = a.AsType(Float32)
	l := a.Layout()
	if l.Shape[l.NDim-1] > 1 && l.Strides[l.NDim-1] != 1 {
		return Copy(a)
	}
	return a
}

// SDPA is scaled dot-product attention: q [B, Hq, Sq, D], k [B, Hkv, Skv, D] and
// v [B, Hkv, Skv, Dv] (GQA: query head h reads kv head h / (Hq/Hkv)), scores scaled by
// scale, softmax in float32. mask is bool, broadcastable to [B, Hq, Sq, Skv] (true =
// attend), or an invalid Array{} for none; a query row with no attended key outputs 0.
// The result is [B, Hq, Sq, Dv]. D and Dv are at most kernels.SDPAMaxHeadDim. Keys and
// values may be strided views (a slice of a preallocated cache is read in place).
func SDPA(q, k, v Array, scale float64, mask Array) Array {
	const op = "sdpa"
	if !q.Valid() || !k.Valid() || !v.Valid() {
		shapePanic(op, "invalid array")
	}
	same(op, q, k)
	same(op, q, v)
	if q.NDim() != 4 || k.NDim() != 4 || v.NDim() != 4 {
		shapePanic(op, "q %v, k %v, v %v must all be rank 4", q.Shape(), k.Shape(), v.Shape())
	}
	B, Hq, Sq, D := q.Dim(0), q.Dim(1), q.Dim(2), q.Dim(3)
	Hkv, Skv, Dv := k.Dim(1), k.Dim(2), v.Dim(3)
	if k.Dim(0) != B || k.Dim(3) != D || v.Dim(0) != B || v.Dim(1) != Hkv || v.Dim(2) != Skv {
		shapePanic(op, "q %v, k %v, v %v do not match (want k [%d, Hkv, Skv, %d], v [%d, Hkv, Skv, Dv])",
			q.Shape(), k.Shape(), v.Shape(), B, D, B)
	}
	if Hkv == 0 || Hq%Hkv != 0 {
		shapePanic(op, "%d query heads are not a multiple of %d kv heads", Hq, Hkv)
	}
	if D > kernels.SDPAMaxHeadDim || Dv > kernels.SDPAMaxHeadDim {
		shapePanic(op, "head dims %d, %d exceed %d", D, Dv, kernels.SDPAMaxHeadDim)
	}
	if math.IsNaN(scale) || math.IsInf(scale, 0) {
		shapePanic(op, "scale %v must be finite", scale)
	}
	out := floatOut(q.DType(), k.DType(), v.DType())
	hs := []*graph.Handle{f32c(q).h, unitLast(k).h, unitLast(v).h}
	if mask.Valid() {
		same(op, q, mask)
		if mask.DType() != Bool {
			shapePanic(op, "mask must be bool (true = attend), got %s", mask.DType())
		}
		want := []int{B, Hq, Sq, Skv}
		if mask.NDim() > 4 || !slices.Equal(BroadcastShapes(op, mask.Shape(), want), want) {
			shapePanic(op, "mask shape %v does not broadcast to %v", mask.Shape(), want)
		}
		hs = append(hs, BroadcastTo(mask, want...).h)
	}
	p := &kernels.SDPAParams{Scale: scale}
	r := Array{q.Graph().Apply(kernels.KSDPA, p, Float32, []int{B, Hq, Sq, Dv}, hs...)}
	return r.AsType(out)
}
