package tensor

import (
	"fmt"
	"slices"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
)

// Quantized ops run the quant kernels (kernels/quant.go) on MLX's packed weights kept
// on the device: no float copy of a weight is ever made. They compute and return float32.

// QuantizedWeight is an affine-quantized matrix (or a stack of them) on the device:
// Weight uint32 [..., rows, cols*Bits/32], Scales and Biases [..., rows, cols/GroupSize]
// in one float dtype.
type QuantizedWeight struct {
	Weight, Scales, Biases Array
	Bits, GroupSize        int
}

// NewQuantizedWeight checks that the three arrays fit bits and group size and returns
// the weight; the error says which shape is wrong.
func NewQuantizedWeight(w, scales, biases Array, bits, group int) (QuantizedWeight, error) {
	q := QuantizedWeight{Weight: w, Scales: scales, Biases: biases, Bits: bits, GroupSize: group}
	ws, ss := w.Shape(), scales.Shape()
	switch {
	case w.DType() != UInt32:
		return q, fmt.Errorf("quantized weight: dtype %s, want uint32", w.DType())
	case !scales.DType().IsFloat() || scales.DType() != biases.DType():
		return q, fmt.Errorf("quantized weight: scales %s and biases %s, want one float dtype", scales.DType(), biases.DType())
	case len(ws) < 2 || len(ss) != len(ws) || !slices.Equal(ss, biases.Shape()) || !slices.Equal(ws[:len(ws)-1], ss[:len(ss)-1]):
		return q, fmt.Errorf("quantized weight: weight %v, scales %v, biases %v: want [..., rows, words] and [..., rows, groups]",
			ws, ss, biases.Shape())
	}
	cols, whole := kernels.QuantCols(ws[len(ws)-1], bits, group)
	if !whole || cols/group != ss[len(ss)-1] {
		return q, fmt.Errorf("quantized weight: weight %v and scales %v do not fit %d bits, group %d", ws, ss, bits, group)
	}
	if _, _, err := kernels.CheckQuant(cols, bits, group); err != nil {
		return q, err
	}
	return q, nil
}

// Shape is the float matrix's shape [..., rows, cols].
func (q *QuantizedWeight) Shape() []int {
	s := q.Scales.Shape()
	s[len(s)-1] *= q.GroupSize
	return s
}

// promptRows reports whether x [..., L, K] is a prompt's activations on a graph made
// with Options.FastPrompts: three or more dims and L >= 2 tokens a sequence (a decode
// step has L = 1, whatever its batch).
func promptRows(x Array) bool {
	return x.Graph().FastPrompts() && x.NDim() >= 3 && x.Dim(-2) >= 2
}

// apply builds a float32 node of kernel k on the inputs.
func apply(g *graph.Graph, k *kernels.Kernel, p any, shape []int, in ...Array) Array {
	hs := make([]*graph.Handle, len(in))
	for i, a := range in {
		hs[i] = a.Handle()
	}
	return Wrap(g.Apply(k, p, Float32, shape, hs...))
}

// QuantizedMatmul computes x [..., K] @ dequant(q)^T for a 2-D q: qmv for decode-sized
// inputs (fewer than 4 rows), qmm otherwise; both give every row the same bits. On a
// graph made with Options.FastPrompts, a prompt's product (x [..., L, K] with L >= 2
// tokens a sequence) asks for the int8 path (kernels.QuantParams.Int8).
func QuantizedMatmul(x Array, q QuantizedWeight) Array {
	shape := q.Shape()
	if len(shape) != 2 || x.NDim() < 1 || x.Dim(-1) != shape[1] {
		panic(&ShapeError{Op: "quantized_matmul", Msg: fmt.Sprintf("cannot multiply %v by the transpose of a quantized %v", x.Shape(), shape)})
	}
	x = Contiguous(x.AsType(Float32))
	xs := x.Shape()
	m := 1
	for _, d := range xs[:len(xs)-1] {
		m *= d
	}
	k := kernels.KQMV
	if m >= 4 {
		k = kernels.KQMM
	}
	xs[len(xs)-1] = shape[0]
	p := &kernels.QuantParams{M: m, N: shape[0], K: shape[1], Bits: q.Bits, Group: q.GroupSize,
		Int8: promptRows(x)}
	return Array{x.Graph().Apply(k, p, Float32, xs, handles([]Array{x, q.Weight, q.Scales, q.Biases})...)}
}

// QuantizedTake dequantizes the rows of int32 ids (any shape) of a quantized [vocab,
// dim] table into float32 ids.shape + [dim]. Negative ids wrap; an id outside
// [-vocab, vocab) fails the evaluation, as Take does.
func QuantizedTake(q QuantizedWeight, ids Array) Array {
	shape := q.Shape()
	if len(shape) != 2 || ids.DType() != Int32 {
		panic(&ShapeError{Op: "quantized_embedding", Msg: fmt.Sprintf("ids %s %v into a quantized %v table", ids.DType(), ids.Shape(), shape)})
	}
	ids = Contiguous(ids)
	out := append(ids.Shape(), shape[1])
	p := &kernels.QEmbedParams{T: ids.Size(), V: shape[0], D: shape[1], Bits: q.Bits, Group: q.GroupSize}
	return Array{ids.Graph().Apply(kernels.KQEmbed, p, Float32, out, handles([]Array{ids, q.Weight, q.Scales, q.Biases})...)}
}

// QuantizedSwitchGLU runs token t through experts idx[t, :] of quantized stacked
// experts (gate and up [E, I, H], down [E, H, I]: mlx-lm's switch_mlp layout) and
// mixes their outputs with scores[t, :]: x [..., H], idx int32 [..., k], scores
// [..., k] -> float32 [..., H]. One fused kernel, as SwitchGLU.
func QuantizedSwitchGLU(x, idx, scores Array, gate, up, down QuantizedWeight) Array {
	gs, us, ds := gate.Shape(), up.Shape(), down.Shape()
	xs, is := x.Shape(), idx.Shape()
	h := xs[len(xs)-1]
	if len(gs) != 3 || !slices.Equal(gs, us) || len(ds) != 3 || gs[2] != h || ds[0] != gs[0] || ds[1] != h || ds[2] != gs[1] ||
		len(is) != len(xs) || !slices.Equal(is, scores.Shape()) || !slices.Equal(is[:len(is)-1], xs[:len(xs)-1]) || idx.DType() != Int32 {
		panic(&ShapeError{Op: "quantized_switch_glu", Msg: fmt.Sprintf(
			"x %v, gate %v, up %v, down %v, idx %v, scores %v", xs, gs, us, ds, is, scores.Shape())})
	}
	f := func(a Array) Array { return Contiguous(a.AsType(Float32)) }
	p := &kernels.QSwitchGLUParams{T: x.Size() / h, H: h, K: is[len(is)-1], E: gs[0], I: gs[1],
		GateBits: gate.Bits, UpBits: up.Bits, DownBits: down.Bits,
		GateGroup: gate.GroupSize, UpGroup: up.GroupSize, DownGroup: down.GroupSize}
	in := []Array{f(x), gate.Weight, gate.Scales, gate.Biases, up.Weight, up.Scales, up.Biases,
		down.Weight, down.Scales, down.Biases, Contiguous(idx), f(scores)}
	return Array{x.Graph().Apply(kernels.KQSwitchGLU, p, Float32, xs, handles(in)...)}
}
