package qwen35

import (
	"math"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

// The fused per-layer path (Options.Unfused off): blocks of a layer that run as one
// kernel each. A block takes the fused path only when every weight it reads is a
// plain float32 array (no quantization, no bias) and the graph's device takes the
// block at its sizes (graph.TakesFused: the GPU only at small sizes); otherwise
// it runs op by op, with the same result within float32 noise.

// plainWeight returns l's weight when l is an nn.Linear without bias holding float32.
func plainWeight(l nn.LinearLayer) (tensor.Array, bool) {
	lin, ok := l.(*nn.Linear)
	if !ok || lin.Bias.Valid() || lin.Weight.DType() != tensor.Float32 {
		return tensor.Array{}, false
	}
	return lin.Weight, true
}

// fusedMoE returns the fused block's weights for a sparse layer, or nil when the layer
// cannot take the fused kernel.
func fusedMoE(post nn.RMSNorm, s *sparseMoE) *tensor.MoEWeights {
	sw, ok := s.experts.(*nn.SwitchGLU)
	if !ok || !post.Weight.Valid() || post.Weight.DType() != tensor.Float32 {
		return nil
	}
	w := &tensor.MoEWeights{Norm: post.Weight, Gate: sw.Gate, Up: sw.Up, Down: sw.Down}
	for _, a := range []tensor.Array{w.Gate, w.Up, w.Down} {
		if a.DType() != tensor.Float32 {
			return nil
		}
	}
	var oks [5]bool
	w.Router, oks[0] = plainWeight(s.gate)
	w.SharedGate, oks[1] = plainWeight(s.shared.Gate)
	w.SharedUp, oks[2] = plainWeight(s.shared.Up)
	w.SharedDown, oks[3] = plainWeight(s.shared.Down)
	w.SharedExpertGate, oks[4] = plainWeight(s.sharedGate)
	for _, ok := range oks {
		if !ok {
			return nil
		}
	}
	h, e, i := w.Gate.Dim(2), w.Gate.Dim(0), w.Gate.Dim(1)
	if !tensor.MoEBlockFits(post.Weight.Graph(), h, e, s.topK, i, w.SharedGate.Dim(0)) {
		return nil
	}
	return w
}

// fusedMLP returns the fused block's weights for a dense layer, or nil when the layer
// cannot take the fused kernel.
func fusedMLP(post nn.RMSNorm, mlp *nn.MLP) *tensor.MLPWeights {
	if !post.Weight.Valid() || post.Weight.DType() != tensor.Float32 {
		return nil
	}
	w := &tensor.MLPWeights{Norm: post.Weight}
	var oks [3]bool
	w.Gate, oks[0] = plainWeight(mlp.Gate)
	w.Up, oks[1] = plainWeight(mlp.Up)
	w.Down, oks[2] = plainWeight(mlp.Down)
	if !oks[0] || !oks[1] || !oks[2] || !tensor.MLPBlockFits(w.Gate.Graph(), w.Gate.Dim(1), w.Gate.Dim(0)) {
		return nil
	}
	return w
}

// fusedGDN returns the weights and sizes of a GDN layer's fused decode step, or nil
// when the layer cannot take it.
func fusedGDN(m *Model, in nn.RMSNorm, d *gatedDeltaNet) (*tensor.GDNWeights, *tensor.GDNParams) {
	if m.act != tensor.Float32 || !d.negA.Valid() {
		return nil, nil
	}
	cfg := m.cfg
	p := &tensor.GDNParams{H: cfg.HiddenSize, Hk: d.hk, Hv: d.hv, Dk: d.dk, Dv: d.dv, K: d.kernel,
		Grouped: d.qkvz != nil, Eps: cfg.RMSNormEps, QKEps: m.k.qkEps,
		QScale: 1 / float64(d.dk), KScale: 1 / math.Sqrt(float64(d.dk))}
	if !tensor.GDNBlockFits(m.g, *p) || in.Eps != d.norm.Eps || in.Eps != p.Eps {
		return nil, nil
	}
	w := &tensor.GDNWeights{Norm: in.Weight, Conv: d.conv, NegA: d.negA, DtBias: d.dtBias, GatedNorm: d.norm.Weight}
	projs := []nn.LinearLayer{d.qkv, d.z, d.b, d.a, d.out}
	dst := []*tensor.Array{&w.QKV, &w.Z, &w.B, &w.A, &w.Out}
	if p.Grouped {
		projs = []nn.LinearLayer{d.qkvz, d.ba, d.out}
		dst = []*tensor.Array{&w.QKV, &w.B, &w.Out}
	}
	for i, l := range projs {
		a, ok := plainWeight(l)
		if !ok {
			return nil, nil
		}
		*dst[i] = a
	}
	for _, a := range []tensor.Array{w.Norm, w.Conv, w.DtBias, w.GatedNorm} {
		if !a.Valid() || a.DType() != tensor.Float32 {
			return nil, nil
		}
	}
	return w, p
}

// fusedStep is the fused decode step of a GDN layer on x [B, 1, H] (the layer's input,
// before its norm), or nil when the step needs the op-by-op path: no fused weights
// (see build), no cache or no state yet, or per-row lengths of a right-padded prefill
// not yet finalized.
func (d *gatedDeltaNet) fusedStep(x, mask tensor.Array, c *cache.ArraysCache) *tensor.GDNStep {
	if d.fw == nil || c == nil || x.Dim(1) != 1 || c.Lengths().Valid() {
		return nil
	}
	conv, state := c.ConvState(), c.SSMState()
	if !conv.Valid() || !state.Valid() || conv.DType() != tensor.Float32 || state.DType() != tensor.Float32 ||
		conv.Dim(0) != x.Dim(0) || state.Dim(0) != x.Dim(0) {
		return nil
	}
	return tensor.GDNDecode(x, d.fw, *d.fp, conv, state, mask)
}
