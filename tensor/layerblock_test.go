package tensor_test

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/tensor"
)

// moeFixture is a random MoE block of hidden size 16, 4 experts of width 8, top-2, a
// shared expert of width 6.
func moeFixture(g *graph.Graph, rng *rand.Rand) *tensor.MoEWeights {
	r := func(lo, hi float64, shape ...int) tensor.Array {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(lo + rng.Float64()*(hi-lo))
		}
		return tensor.FromFloat32(g, v, shape...)
	}
	return &tensor.MoEWeights{
		Norm: r(0.5, 1.5, 16), Router: r(-0.5, 0.5, 4, 16),
		Gate: r(-0.3, 0.3, 4, 8, 16), Up: r(-0.3, 0.3, 4, 8, 16), Down: r(-0.3, 0.3, 4, 16, 8),
		SharedGate: r(-0.3, 0.3, 6, 16), SharedUp: r(-0.3, 0.3, 6, 16), SharedDown: r(-0.3, 0.3, 16, 6),
		SharedExpertGate: r(-0.3, 0.3, 1, 16),
	}
}

// unfusedMoE is what MoEBlock replaces, one op at a time.
func unfusedMoE(x, r tensor.Array, w *tensor.MoEWeights, k int, renorm bool) tensor.Array {
	x = tensor.Add(x, r)
	h := tensor.RMSNorm(x, w.Norm, 1e-6)
	probs := tensor.Softmax(tensor.Linear(h, w.Router), -1)
	idx := tensor.ArgTopK(probs, k)
	scores := tensor.TakeAlongAxis(probs, idx, -1)
	if renorm {
		scores = tensor.Div(scores, tensor.Sum(scores, -1, true))
	}
	y := tensor.SwitchGLU(h, w.Gate, w.Up, w.Down, idx, scores)
	sh := tensor.Linear(tensor.Mul(tensor.Silu(tensor.Linear(h, w.SharedGate)), tensor.Linear(h, w.SharedUp)), w.SharedDown)
	sh = tensor.Mul(sh, tensor.Sigmoid(tensor.Linear(h, w.SharedExpertGate)))
	return tensor.Add(x, tensor.Add(y, sh))
}

// TestMoEBlockMatchesOps: one node, the op-by-op result bit for bit (the same
// arithmetic in the same order), with and without renormalisation.
func TestMoEBlockMatchesOps(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(3))
	w := moeFixture(g, rng)
	x, r := laRand(g, rng, 3, 1, 16), laRand(g, rng, 3, 1, 16)
	for _, renorm := range []bool{true, false} {
		want, err := unfusedMoE(x, r, w, 2, renorm).Float32s()
		require.NoError(t, err)
		var got tensor.Array
		require.Equal(t, 1, nnNodes(g, func() { got = tensor.MoEBlock(x, r, w, 1e-6, 2, renorm) }))
		require.Equal(t, []int{3, 1, 16}, got.Shape())
		gv, err := got.Float32s()
		require.NoError(t, err)
		require.Equal(t, want, gv, "renorm %v", renorm)
	}
}

// TestMoEBlockAfterGDN: reading r in place from a GDN step's output gives MoEBlock's
// result through the view, bit for bit, with one node fewer.
func TestMoEBlockAfterGDN(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(4))
	mw := moeFixture(g, rng)
	r := func(shape ...int) tensor.Array { return tensor.MulScalar(laRand(g, rng, shape...), 0.3) }
	p := tensor.GDNParams{H: 16, Hk: 1, Hv: 2, Dk: 4, Dv: 4, K: 4, Eps: 1e-6, QKEps: 1e-6 / 4, QScale: 0.25, KScale: 0.5}
	gw := &tensor.GDNWeights{Norm: tensor.AddScalar(r(16), 1), QKV: r(16, 16), Z: r(8, 16), B: r(2, 16), A: r(2, 16),
		Conv: r(16, 4), NegA: tensor.AddScalar(r(2), -1), DtBias: r(2), GatedNorm: tensor.AddScalar(r(4), 1), Out: r(16, 8)}
	x := laRand(g, rng, 2, 1, 16)
	st := tensor.GDNDecode(x, gw, p, laRand(g, rng, 2, 3, 16), r(2, 2, 4, 4), tensor.Array{})
	want, err := tensor.MoEBlock(x, st.R(), mw, 1e-6, 2, true).Float32s()
	require.NoError(t, err)
	var got tensor.Array
	require.Equal(t, 1, nnNodes(g, func() { got = tensor.MoEBlockAfter(x, st, mw, 1e-6, 2, true) }))
	gv, err := got.Float32s()
	require.NoError(t, err)
	require.Equal(t, want, gv)
	require.PanicsWithError(t, "tensor: moe_block: x [2 16] is not the GDN step's input [2 1 16]",
		func() { tensor.MoEBlockAfter(tensor.Zeros(g, tensor.Float32, 2, 16), st, mw, 1e-6, 2, true) })
}

func TestMoEBlockShapeErrors(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	w := moeFixture(g, rand.New(rand.NewSource(1)))
	x := tensor.Zeros(g, tensor.Float32, 2, 16)
	bad := *w
	bad.Down = tensor.Zeros(g, tensor.Float32, 4, 8, 16)
	for _, c := range []struct {
		f    func()
		want string
	}{
		{func() { tensor.MoEBlock(x, tensor.Zeros(g, tensor.Float32, 2, 8), w, 1e-6, 2, true) },
			"tensor: moe_block: x [2 16] and r [2 8] must have one shape [..., H]"},
		{func() { tensor.MoEBlock(x, x, &bad, 1e-6, 2, true) },
			"tensor: moe_block: weight 4 has shape [4 8 16], want [4 16 8] (H 16, E 4, I 8, Is 6)"},
		{func() { tensor.MoEBlock(x, x, w, 1e-6, 5, true) },
			"tensor: moe_block: sizes H 16, E 4, k 5, I 8, Is 6 exceed the kernel's limits"},
		{func() { tensor.MoEBlock(x, x, w, math.NaN(), 2, true) }, "tensor: moe_block: eps NaN must be finite and >= 0"},
		{func() { tensor.MoEBlock(x.AsType(tensor.Float16), x, w, 1e-6, 2, true) }, "tensor: moe_block: takes float32 only, got float16"},
	} {
		require.PanicsWithError(t, c.want, c.f)
	}
}

func TestGDNDecodeShapeErrors(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	p := tensor.GDNParams{H: 8, Hk: 1, Hv: 2, Dk: 4, Dv: 4, K: 4, Eps: 1e-6, QKEps: 1e-6, QScale: 0.25, KScale: 0.5}
	z := func(shape ...int) tensor.Array { return tensor.Zeros(g, tensor.Float32, shape...) }
	w := &tensor.GDNWeights{Norm: z(8), QKV: z(16, 8), Z: z(8, 8), B: z(2, 8), A: z(2, 8), Conv: z(16, 4),
		NegA: z(2), DtBias: z(2), GatedNorm: z(4), Out: z(8, 8)}
	x, conv, state := z(1, 1, 8), z(1, 3, 16), z(1, 2, 4, 4)
	st := tensor.GDNDecode(x, w, p, conv, state, tensor.Array{})
	require.Equal(t, []int{1, 1, 8}, st.R().Shape())
	require.Equal(t, []int{1, 3, 16}, st.Conv.Shape())
	require.Equal(t, []int{1, 2, 4, 4}, st.State.Shape())
	big := p
	big.Hk = 3 // does not divide Hv
	for _, c := range []struct {
		f    func()
		want string
	}{
		{func() { tensor.GDNDecode(z(1, 2, 8), w, p, conv, state, tensor.Array{}) }, "tensor: gdn_decode: x [1 2 8] must be [B, 1, H]"},
		{func() { tensor.GDNDecode(x, w, p, z(1, 4, 16), state, tensor.Array{}) }, "tensor: gdn_decode: conv state is float32 [1 4 16], want float32 [1 3 16]"},
		{func() { tensor.GDNDecode(x, w, p, conv, state, z(1, 2)) }, "tensor: gdn_decode: mask [1 2] must be [B, 1] = [1 1]"},
		{func() { tensor.GDNDecode(x, w, big, conv, state, tensor.Array{}) },
			"tensor: gdn_decode: x [1 1 8] and sizes {B:1 H:8 Hk:3 Hv:2 Dk:4 Dv:4 K:4 Grouped:false Masked:false Eps:1e-06 QKEps:1e-06 QScale:0.25 KScale:0.5}: outside the kernel's limits"},
	} {
		require.PanicsWithError(t, c.want, c.f)
	}
}

// TestMLPBlockMatchesOps: one node, the op-by-op dense block bit for bit; MLPBlockAfter
// reads r from a GDN step in place; shape errors.
func TestMLPBlockMatchesOps(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(6))
	s := func(shape ...int) tensor.Array { return tensor.MulScalar(laRand(g, rng, shape...), 0.3) }
	w := &tensor.MLPWeights{Norm: tensor.AddScalar(s(16), 1), Gate: s(12, 16), Up: s(12, 16), Down: s(16, 12)}
	x, r := laRand(g, rng, 3, 1, 16), laRand(g, rng, 3, 1, 16)
	x1 := tensor.Add(x, r)
	h := tensor.RMSNorm(x1, w.Norm, 1e-6)
	want, err := tensor.Add(x1, tensor.Linear(tensor.Mul(tensor.Silu(tensor.Linear(h, w.Gate)), tensor.Linear(h, w.Up)), w.Down)).Float32s()
	require.NoError(t, err)
	var got tensor.Array
	require.Equal(t, 1, nnNodes(g, func() { got = tensor.MLPBlock(x, r, w, 1e-6) }))
	gv, err := got.Float32s()
	require.NoError(t, err)
	require.Equal(t, want, gv)

	p := tensor.GDNParams{H: 16, Hk: 1, Hv: 2, Dk: 4, Dv: 4, K: 4, Eps: 1e-6, QKEps: 1e-6 / 4, QScale: 0.25, KScale: 0.5}
	gw := &tensor.GDNWeights{Norm: tensor.AddScalar(s(16), 1), QKV: s(16, 16), Z: s(8, 16), B: s(2, 16), A: s(2, 16),
		Conv: s(16, 4), NegA: tensor.AddScalar(s(2), -1), DtBias: s(2), GatedNorm: tensor.AddScalar(s(4), 1), Out: s(16, 8)}
	xs := laRand(g, rng, 2, 1, 16)
	st := tensor.GDNDecode(xs, gw, p, laRand(g, rng, 2, 3, 16), s(2, 2, 4, 4), tensor.Array{})
	want, err = tensor.MLPBlock(xs, st.R(), w, 1e-6).Float32s()
	require.NoError(t, err)
	gv, err = tensor.MLPBlockAfter(xs, st, w, 1e-6).Float32s()
	require.NoError(t, err)
	require.Equal(t, want, gv)

	bad := *w
	bad.Down = s(12, 16)
	for _, c := range []struct {
		f    func()
		want string
	}{
		{func() { tensor.MLPBlock(x, s(3, 16), w, 1e-6) }, "tensor: mlp_block: x [3 1 16] and r [3 16] must have one shape [..., H]"},
		{func() { tensor.MLPBlock(x, r, &bad, 1e-6) }, "tensor: mlp_block: weight 3 has shape [12 16], want [16 12] (H 16, I 12)"},
		{func() { tensor.MLPBlock(x, r, w, -1) }, "tensor: mlp_block: eps -1 must be finite and >= 0"},
		{func() { tensor.MLPBlockAfter(x, st, w, 1e-6) }, "tensor: mlp_block: x [3 1 16] is not the GDN step's input [2 1 16]"},
	} {
		require.PanicsWithError(t, c.want, c.f)
	}
}

// refusing is the CPU device refusing every fused block.
type refusing struct{ graph.Device }

func (refusing) Name() string                             { return "refusing" }
func (refusing) TakesFused(k *kernels.Kernel, p any) bool { return false }

// TestFusedBlocksAskTheDevice: the fused blocks take sizes the graph's device takes
// (graph.TakesFused), and fail by name on one that does not.
func TestFusedBlocksAskTheDevice(t *testing.T) {
	g := graph.New(refusing{graph.CPU()}, graph.Options{})
	rng := rand.New(rand.NewSource(1))
	w := moeFixture(g, rng)
	x := tensor.Zeros(g, tensor.Float32, 2, 16)
	require.False(t, tensor.MoEBlockFits(g, 16, 4, 2, 8, 6))
	cpu := graph.NewCPU(graph.Options{})
	require.True(t, tensor.MoEBlockFits(cpu, 16, 4, 2, 8, 6))
	require.True(t, tensor.MLPBlockFits(cpu, 16, 12))
	require.False(t, tensor.MLPBlockFits(g, 16, 12))
	p := tensor.GDNParams{H: 8, Hk: 1, Hv: 2, Dk: 4, Dv: 4, K: 4, Eps: 1e-6, QKEps: 1e-6, QScale: 0.25, KScale: 0.5}
	require.True(t, tensor.GDNBlockFits(cpu, p))
	require.False(t, tensor.GDNBlockFits(g, p))

	mw := &tensor.MLPWeights{Norm: tensor.Zeros(g, tensor.Float32, 16), Gate: tensor.Zeros(g, tensor.Float32, 12, 16),
		Up: tensor.Zeros(g, tensor.Float32, 12, 16), Down: tensor.Zeros(g, tensor.Float32, 16, 12)}
	z := func(shape ...int) tensor.Array { return tensor.Zeros(g, tensor.Float32, shape...) }
	gw := &tensor.GDNWeights{Norm: z(8), QKV: z(16, 8), Z: z(8, 8), B: z(2, 8), A: z(2, 8), Conv: z(16, 4),
		NegA: z(2), DtBias: z(2), GatedNorm: z(4), Out: z(8, 8)}
	require.PanicsWithError(t, "tensor: moe_block: the refusing device takes the unfused kernels at sizes H 16, E 4, k 2, I 8, Is 6 (graph.TakesFused)",
		func() { tensor.MoEBlock(x, x, w, 1e-6, 2, true) })
	require.PanicsWithError(t, "tensor: mlp_block: the refusing device takes the unfused kernels at sizes H 16, I 12 (graph.TakesFused)",
		func() { tensor.MLPBlock(x, x, mw, 1e-6) })
	require.PanicsWithError(t, "tensor: gdn_decode: the refusing device takes the unfused kernels at sizes {B:1 H:8 Hk:1 Hv:2 Dk:4 Dv:4 K:4 Grouped:false Masked:false Eps:1e-06 QKEps:1e-06 QScale:0.25 KScale:0.5} (graph.TakesFused)",
		func() { tensor.GDNDecode(z(1, 1, 8), gw, p, z(1, 3, 16), z(1, 2, 4, 4), tensor.Array{}) })
}
