package tensor_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// sdpaRef is naive float64 attention on dense q [B,Hq,Sq,D], k [B,Hkv,Skv,D],
// v [B,Hkv,Skv,Dv]; attend(b,h,i,j) says whether the key is attended. An output's error
// scale is the largest |v| among its attended keys (0 for a fully masked row: exact 0).
func sdpaRef(q, k, v []float64, B, Hq, Hkv, Sq, Skv, D, Dv int, scale float64,
	attend func(b, h, i, j int) bool) (want, errScale []float64) {
	for b := 0; b < B; b++ {
		for h := 0; h < Hq; h++ {
			kh := b*Hkv + h/(Hq/Hkv)
			for i := 0; i < Sq; i++ {
				qr := q[((b*Hq+h)*Sq+i)*D:][:D]
				s := make([]float64, Skv)
				mx := math.Inf(-1)
				for j := range s {
					s[j] = math.Inf(-1)
					if !attend(b, h, i, j) {
						continue
					}
					dot := 0.0
					for d, x := range qr {
						dot += x * k[(kh*Skv+j)*D+d]
					}
					s[j] = dot * scale
					mx = math.Max(mx, s[j])
				}
				out := make([]float64, Dv)
				vmax, sum := 0.0, 0.0
				for j := range s {
					if math.IsInf(s[j], -1) {
						continue
					}
					w := math.Exp(s[j] - mx)
					sum += w
					for d := range out {
						x := v[(kh*Skv+j)*Dv+d]
						out[d] += w * x
						vmax = math.Max(vmax, math.Abs(x))
					}
				}
				for d := range out {
					if sum > 0 {
						out[d] /= sum
					}
					want = append(want, out[d])
					errScale = append(errScale, vmax)
				}
			}
		}
	}
	return want, errScale
}

// TestSDPAMatchesReference: decode and prefill, GQA, 2-D causal and 4-D padding masks
// (one batch row fully masked), keys and values as slices of a preallocated cache and as
// transposed [B, S, H, D] views (read in place); the Go twin within 8 float32 epsilons
// of the value magnitude.
func TestSDPAMatchesReference(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(9))
	for _, c := range []struct {
		B, Hq, Hkv, Sq, Skv, D, Dv int
		mask                       string // "", "causal", "pad"
		layout                     string // "cache" slices a [B, H, 2*Skv, D] buffer; "bshd" transposes
	}{
		{1, 4, 2, 1, 128, 32, 32, "", "cache"},
		{1, 4, 2, 7, 7, 32, 32, "causal", "bshd"},
		{2, 4, 2, 1, 9, 16, 16, "pad", "cache"},
		{2, 3, 1, 5, 13, 20, 12, "causal", "cache"},
		{2, 2, 2, 3, 6, 8, 8, "pad", "bshd"},
	} {
		what := fmt.Sprintf("%+v", c)
		q, _ := nnRand(g, rng, -1, 1, c.B, c.Hq, c.Sq, c.D)
		kv := func(d int) tensor.Array {
			if c.layout == "bshd" {
				a, _ := nnRand(g, rng, -1, 1, c.B, c.Skv, c.Hkv, d)
				return tensor.Transpose(a, 0, 2, 1, 3)
			}
			a, _ := nnRand(g, rng, -1, 1, c.B, c.Hkv, 2*c.Skv, d)
			return tensor.SliceAxis(a, 2, 3, 3+c.Skv)
		}
		k, v := kv(c.D), kv(c.Dv)
		attend := func(b, h, i, j int) bool { return true }
		mask := tensor.Array{}
		switch c.mask {
		case "causal":
			m := make([]bool, c.Sq*c.Skv)
			for i := 0; i < c.Sq; i++ {
				for j := 0; j <= i+c.Skv-c.Sq; j++ {
					m[i*c.Skv+j] = true
				}
			}
			mask = tensor.FromBool(g, m, c.Sq, c.Skv)
			attend = func(b, h, i, j int) bool { return m[i*c.Skv+j] }
		case "pad": // batch row b skips its first 2+b keys; the last row attends to nothing
			m := make([]bool, c.B*c.Skv)
			for b := 0; b < c.B-1; b++ {
				for j := 2 + b; j < c.Skv; j++ {
					m[b*c.Skv+j] = true
				}
			}
			mask = tensor.FromBool(g, m, c.B, 1, 1, c.Skv)
			attend = func(b, h, i, j int) bool { return m[b*c.Skv+j] }
		}
		scale := 1 / math.Sqrt(float64(c.D))
		var r tensor.Array
		nodes := nnNodes(g, func() { r = tensor.SDPA(q, k, v, scale, mask) })
		wantNodes := 1 // no copies of q, k, v
		if mask.Valid() {
			wantNodes++ // the mask's broadcast view
		}
		require.Equal(t, wantNodes, nodes, what)
		require.Equal(t, []int{c.B, c.Hq, c.Sq, c.Dv}, r.Shape(), what)
		want, es := sdpaRef(nnVals(t, q), nnVals(t, k), nnVals(t, v), c.B, c.Hq, c.Hkv, c.Sq, c.Skv, c.D, c.Dv, scale, attend)
		got := nnVals(t, r)
		nnClose(t, got, want, es, 1e-6, what)
		if c.mask == "pad" {
			per := c.Hq * c.Sq * c.Dv
			require.Equal(t, make([]float64, per), got[len(got)-per:], "fully masked rows output 0")
		}
	}
}

func TestSDPACopiesKeysWithoutUnitStride(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(10))
	q, _ := nnRand(g, rng, -1, 1, 1, 2, 1, 4)
	kt, _ := nnRand(g, rng, -1, 1, 1, 2, 4, 5) // transposed below: last-axis stride 5
	k := tensor.SwapAxes(kt, 2, 3)
	v, _ := nnRand(g, rng, -1, 1, 1, 2, 5, 3)
	var r tensor.Array
	require.Equal(t, 2, nnNodes(g, func() { r = tensor.SDPA(q, k, v, 0.5, tensor.Array{}) }), "one copy of k")
	want, es := sdpaRef(nnVals(t, q), nnVals(t, k), nnVals(t, v), 1, 2, 2, 1, 5, 4, 3, 0.5,
		func(b, h, i, j int) bool { return true })
	nnClose(t, nnVals(t, r), want, es, 1e-6, "strided k")
}

func TestSDPADTypes(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(11))
	q, _ := nnRand(g, rng, -1, 1, 1, 2, 3, 8)
	k, _ := nnRand(g, rng, -1, 1, 1, 1, 4, 8)
	v, _ := nnRand(g, rng, -1, 1, 1, 1, 4, 8)
	h := tensor.SDPA(q.AsType(tensor.Float16), k.AsType(tensor.Float16), v.AsType(tensor.Float16), 0.3, tensor.Array{})
	require.Equal(t, tensor.Float16, h.DType())
	f := tensor.SDPA(q.AsType(tensor.Float16), k, v, 0.3, tensor.Array{})
	require.Equal(t, tensor.Float32, f.DType(), "float16 with float32 promotes")
}

func TestSDPAShapeErrors(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	z := func(s ...int) tensor.Array { return tensor.Zeros(g, tensor.Float32, s...) }
	q, k, v := z(1, 4, 2, 8), z(1, 2, 5, 8), z(1, 2, 5, 6)
	for _, c := range []struct {
		f    func()
		want string
	}{
		{func() { tensor.SDPA(z(4, 2, 8), k, v, 1, tensor.Array{}) }, "tensor: sdpa: q [4 2 8], k [1 2 5 8], v [1 2 5 6] must all be rank 4"},
		{func() { tensor.SDPA(q, z(1, 2, 5, 7), v, 1, tensor.Array{}) },
			"tensor: sdpa: q [1 4 2 8], k [1 2 5 7], v [1 2 5 6] do not match (want k [1, Hkv, Skv, 8], v [1, Hkv, Skv, Dv])"},
		{func() { tensor.SDPA(q, z(1, 3, 5, 8), z(1, 3, 5, 6), 1, tensor.Array{}) }, "tensor: sdpa: 4 query heads are not a multiple of 3 kv heads"},
		{func() { tensor.SDPA(z(1, 1, 1, 300), z(1, 1, 1, 300), v, 1, tensor.Array{}) },
			"tensor: sdpa: q [1 1 1 300], k [1 1 1 300], v [1 2 5 6] do not match (want k [1, Hkv, Skv, 300], v [1, Hkv, Skv, Dv])"},
		{func() { tensor.SDPA(z(1, 1, 1, 300), z(1, 1, 1, 300), z(1, 1, 1, 4), 1, tensor.Array{}) }, "tensor: sdpa: head dims 300, 4 exceed 256"},
		{func() { tensor.SDPA(q, k, v, math.NaN(), tensor.Array{}) }, "tensor: sdpa: scale NaN must be finite"},
		{func() { tensor.SDPA(q, k, v, 1, z(2, 5)) }, "tensor: sdpa: mask must be bool (true = attend), got float32"},
		{func() { tensor.SDPA(q, k, v, 1, tensor.FromBool(g, make([]bool, 6), 2, 3)) }, "tensor: sdpa: shapes [[2 3] [1 4 2 5]] do not broadcast"},
		{func() { tensor.SDPA(q, k, v, 1, tensor.FromBool(g, make([]bool, 10), 2, 1, 1, 1, 5)) }, "tensor: sdpa: mask shape [2 1 1 1 5] does not broadcast to [1 4 2 5]"},
		{func() { tensor.SDPA(q, tensor.Array{}, v, 1, tensor.Array{}) }, "tensor: sdpa: invalid array"},
	} {
		require.PanicsWithError(t, c.want, c.f)
	}
}

// BenchmarkNNOpsGraph times the ops through the graph (build one node, evaluate it) on
// decode shapes: RMSNorm [1, 64] and SDPA Sq 1, Skv 128, Hq 4, Hkv 2, D 32.
func BenchmarkNNOpsGraph(b *testing.B) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(1))
	x, _ := nnRand(g, rng, -1, 1, 1, 64)
	w, _ := nnRand(g, rng, 0.5, 1.5, 64)
	q, _ := nnRand(g, rng, -1, 1, 1, 4, 1, 32)
	k, _ := nnRand(g, rng, -1, 1, 1, 2, 128, 32)
	v, _ := nnRand(g, rng, -1, 1, 1, 2, 128, 32)
	for _, c := range []struct {
		name string
		op   func() tensor.Array
	}{
		{"rms_norm_1x64", func() tensor.Array { return tensor.RMSNorm(x, w, 1e-6) }},
		{"sdpa_decode_D32", func() tensor.Array { return tensor.SDPA(q, k, v, 0.17, tensor.Array{}) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var r tensor.Array
				tensor.WithScope(g, func() { r = tensor.Keep(c.op()) })
				if err := tensor.Eval(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
