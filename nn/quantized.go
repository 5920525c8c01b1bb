package nn

import (
	"fmt"
	"slices"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/tensor"
)

// Quantized layers keep MLX's packed weights on the device and run the quant kernels on
// them (kernels/quant.go): no float copy of a weight is ever made. Activations are float32.

// ExpertsLayer runs routed tokens through a bank of experts: SwitchGLU and
// QuantizedSwitchGLU.
type ExpertsLayer interface {
	Forward(x, idx, scores tensor.Array) tensor.Array
}

var (
	_ LinearLayer    = (*QuantizedLinear)(nil)
	_ EmbeddingLayer = (*QuantizedEmbedding)(nil)
	_ ExpertsLayer   = (*QuantizedSwitchGLU)(nil)
	_ ExpertsLayer   = (*SwitchGLU)(nil)
)

// QuantizedWeight is an affine-quantized matrix (or a stack of them) on the device:
// Weight uint32 [..., rows, cols*Bits/32], Scales and Biases [..., rows, cols/GroupSize]
// in one float dtype.
type QuantizedWeight struct {
	Weight, Scales, Biases tensor.Array
	Bits, GroupSize        int
}

// NewQuantizedWeight checks that the three arrays fit bits and group size and returns
// the weight; the error says which shape is wrong.
func NewQuantizedWeight(w, scales, biases tensor.Array, bits, group int) (QuantizedWeight, error) {
	q := QuantizedWeight{Weight: w, Scales: scales, Biases: biases, Bits: bits, GroupSize: group}
	ws, ss := w.Shape(), scales.Shape()
	switch {
	case w.DType() != tensor.UInt32:
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

// matmul computes x [..., K] @ dequant(q)^T for a 2-D q: qmv for decode-sized inputs
// (fewer than 4 rows), qmm otherwise; both give every row the same bits.
func (q *QuantizedWeight) matmul(x tensor.Array) tensor.Array {
	shape := q.Shape()
	if len(shape) != 2 || x.NDim() < 1 || x.Dim(-1) != shape[1] {
		panic(&tensor.ShapeError{Op: "quantized_matmul", Msg: fmt.Sprintf("cannot multiply %v by the transpose of a quantized %v", x.Shape(), shape)})
	}
	x = tensor.Contiguous(x.AsType(tensor.Float32))
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
	p := &kernels.QuantParams{M: m, N: shape[0], K: shape[1], Bits: q.Bits, Group: q.GroupSize}
	return apply(x.Graph(), k, p, xs, x, q.Weight, q.Scales, q.Biases)
}

// apply builds a float32 node of kernel k on the inputs.
func apply(g *graph.Graph, k *kernels.Kernel, p any, shape []int, in ...tensor.Array) tensor.Array {
	hs := make([]*graph.Handle, len(in))
	for i, a := range in {
		hs[i] = a.Handle()
	}
	return tensor.Wrap(g.Apply(k, p, tensor.Float32, shape, hs...))
}

// QuantizedLinear is Linear with an affine-quantized weight [out, in].
type QuantizedLinear struct {
	QuantizedWeight
	Bias tensor.Array // [out], or invalid for no bias
}

// Forward maps x [..., in] to float32 [..., out].
func (l *QuantizedLinear) Forward(x tensor.Array) tensor.Array {
	y := l.matmul(x)
	if l.Bias.Valid() {
		y = tensor.Add(y, l.Bias.AsType(tensor.Float32))
	}
	return y
}

// QuantizedEmbedding is Embedding with an affine-quantized [vocab, dim] table.
type QuantizedEmbedding struct {
	QuantizedWeight
}

// Forward dequantizes the rows of int32 ids (any shape) into float32 ids.shape + [dim].
// Negative ids wrap; an id outside [-vocab, vocab) fails the evaluation, as Take does.
func (e *QuantizedEmbedding) Forward(ids tensor.Array) tensor.Array {
	shape := e.Shape()
	if len(shape) != 2 || ids.DType() != tensor.Int32 {
		panic(&tensor.ShapeError{Op: "quantized_embedding", Msg: fmt.Sprintf("ids %s %v into a quantized %v table", ids.DType(), ids.Shape(), shape)})
	}
	ids = tensor.Contiguous(ids)
	out := append(ids.Shape(), shape[1])
	p := &kernels.QEmbedParams{T: ids.Size(), V: shape[0], D: shape[1], Bits: e.Bits, Group: e.GroupSize}
	return apply(ids.Graph(), kernels.KQEmbed, p, out, ids, e.Weight, e.Scales, e.Biases)
}

// AsLinear projects x [..., dim] onto the quantized table: float32 [..., vocab] (a tied
// output head reading the embedding's packed matrix).
func (e *QuantizedEmbedding) AsLinear(x tensor.Array) tensor.Array { return e.matmul(x) }

// QuantizedSwitchGLU is SwitchGLU with quantized stacked experts: Gate and Up
// [E, I, H], Down [E, H, I] (mlx-lm's switch_mlp layout).
type QuantizedSwitchGLU struct {
	Gate, Up, Down QuantizedWeight
}

// Forward runs token t through experts idx[t, :] and mixes their outputs with
// scores[t, :]: x [..., H], idx int32 [..., k], scores [..., k] -> float32 [..., H].
// One fused kernel, as SwitchGLU.
func (s *QuantizedSwitchGLU) Forward(x, idx, scores tensor.Array) tensor.Array {
	gs, us, ds := s.Gate.Shape(), s.Up.Shape(), s.Down.Shape()
	xs, is := x.Shape(), idx.Shape()
	h := xs[len(xs)-1]
	if len(gs) != 3 || !slices.Equal(gs, us) || len(ds) != 3 || gs[2] != h || ds[0] != gs[0] || ds[1] != h || ds[2] != gs[1] ||
		len(is) != len(xs) || !slices.Equal(is, scores.Shape()) || !slices.Equal(is[:len(is)-1], xs[:len(xs)-1]) || idx.DType() != tensor.Int32 {
		panic(&tensor.ShapeError{Op: "quantized_switch_glu", Msg: fmt.Sprintf(
			"x %v, gate %v, up %v, down %v, idx %v, scores %v", xs, gs, us, ds, is, scores.Shape())})
	}
	f := func(a tensor.Array) tensor.Array { return tensor.Contiguous(a.AsType(tensor.Float32)) }
	p := &kernels.QSwitchGLUParams{T: x.Size() / h, H: h, K: is[len(is)-1], E: gs[0], I: gs[1],
		GateBits: s.Gate.Bits, UpBits: s.Up.Bits, DownBits: s.Down.Bits,
		GateGroup: s.Gate.GroupSize, UpGroup: s.Up.GroupSize, DownGroup: s.Down.GroupSize}
	return apply(x.Graph(), kernels.KQSwitchGLU, p, xs, f(x),
		s.Gate.Weight, s.Gate.Scales, s.Gate.Biases, s.Up.Weight, s.Up.Scales, s.Up.Biases,
		s.Down.Weight, s.Down.Scales, s.Down.Biases, tensor.Contiguous(idx), f(scores))
}
