package nn

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

func randVals(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func values(t *testing.T, a tensor.Array) []float32 {
	t.Helper()
	v, err := a.Float32s()
	require.NoError(t, err)
	return v
}

// near checks got against a float64 reference with a relative tolerance.
func near(t *testing.T, want []float64, got []float32) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.InDelta(t, want[i], float64(got[i]), 1e-5*(1+math.Abs(want[i])), "element %d", i)
	}
}

func silu(x float64) float64 { return x / (1 + math.Exp(-x)) }

// dot is sum_k a[k] * b[k] in float64.
func dot(a, b []float32) float64 {
	s := 0.0
	for k := range a {
		s += float64(a[k]) * float64(b[k])
	}
	return s
}

func TestLinear(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	g := graph.NewCPU(graph.Options{})
	const n, in, out = 3, 7, 5
	x, w, b := randVals(rng, n*in), randVals(rng, out*in), randVals(rng, out)
	for _, bias := range []bool{false, true} {
		l := Linear{Weight: tensor.FromFloat32(g, w, out, in)}
		if bias {
			l.Bias = tensor.FromFloat32(g, b, out)
		}
		y := l.Forward(tensor.FromFloat32(g, x, 1, n, in))
		require.Equal(t, []int{1, n, out}, y.Shape())
		want := make([]float64, 0, n*out)
		for i := 0; i < n; i++ {
			for o := 0; o < out; o++ {
				v := dot(x[i*in:(i+1)*in], w[o*in:(o+1)*in])
				if bias {
					v += float64(b[o])
				}
				want = append(want, v)
			}
		}
		near(t, want, values(t, y))
	}
}

func TestEmbedding(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	g := graph.NewCPU(graph.Options{})
	const vocab, dim = 11, 4
	w := randVals(rng, vocab*dim)
	e := Embedding{Weight: tensor.FromFloat32(g, w, vocab, dim)}
	ids := []int32{3, 0, 10, 3, 7, 1}
	y := e.Forward(tensor.FromInt32(g, ids, 2, 3))
	require.Equal(t, []int{2, 3, dim}, y.Shape())
	want := make([]float64, 0, len(ids)*dim)
	for _, id := range ids {
		for d := 0; d < dim; d++ {
			want = append(want, float64(w[int(id)*dim+d]))
		}
	}
	near(t, want, values(t, y))

	x := randVals(rng, 2*dim)
	head := e.AsLinear(tensor.FromFloat32(g, x, 2, dim))
	want = want[:0]
	for i := 0; i < 2; i++ {
		for v := 0; v < vocab; v++ {
			want = append(want, dot(x[i*dim:(i+1)*dim], w[v*dim:(v+1)*dim]))
		}
	}
	near(t, want, values(t, head))
}

func TestNorms(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	g := graph.NewCPU(graph.Options{})
	const rows, dim, eps = 3, 16, 1e-6
	x, z, w := randVals(rng, rows*dim), randVals(rng, rows*dim), randVals(rng, dim)
	wa := tensor.FromFloat32(g, w, dim)
	plain := (&RMSNorm{Weight: wa, Eps: eps}).Forward(tensor.FromFloat32(g, x, rows, dim))
	gated := (&GatedRMSNorm{Weight: wa, Eps: eps}).Forward(tensor.FromFloat32(g, x, rows, dim), tensor.FromFloat32(g, z, rows, dim))
	var wantPlain, wantGated []float64
	for r := 0; r < rows; r++ {
		row := x[r*dim : (r+1)*dim]
		inv := 1 / math.Sqrt(dot(row, row)/dim+eps)
		for d := 0; d < dim; d++ {
			v := float64(row[d]) * inv * float64(w[d])
			wantPlain = append(wantPlain, v)
			wantGated = append(wantGated, v*silu(float64(z[r*dim+d])))
		}
	}
	near(t, wantPlain, values(t, plain))
	near(t, wantGated, values(t, gated))
}

func TestRoPE(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	g := graph.NewCPU(graph.Options{})
	const b, h, s, d, dims, base = 2, 2, 3, 8, 4, 10000.0
	x := randVals(rng, b*h*s*d)
	offsets := []int32{0, 5}
	y := (&RoPE{Dims: dims, Base: base}).Forward(tensor.FromFloat32(g, x, b, h, s, d), tensor.FromInt32(g, offsets, b))
	want := make([]float64, len(x))
	for bi := 0; bi < b; bi++ {
		for hi := 0; hi < h; hi++ {
			for si := 0; si < s; si++ {
				o := ((bi*h+hi)*s + si) * d
				pos := float64(int(offsets[bi]) + si)
				for i := 0; i < d; i++ {
					want[o+i] = float64(x[o+i])
				}
				for i := 0; i < dims/2; i++ {
					th := pos * math.Pow(base, -2*float64(i)/dims)
					a, c := float64(x[o+i]), float64(x[o+i+dims/2])
					want[o+i] = a*math.Cos(th) - c*math.Sin(th)
					want[o+i+dims/2] = a*math.Sin(th) + c*math.Cos(th)
				}
			}
		}
	}
	near(t, want, values(t, y))
}

func TestMLP(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	g := graph.NewCPU(graph.Options{})
	const n, hid, inter = 2, 6, 5
	x, wg, wu, wd := randVals(rng, n*hid), randVals(rng, inter*hid), randVals(rng, inter*hid), randVals(rng, hid*inter)
	m := MLP{
		Gate: &Linear{Weight: tensor.FromFloat32(g, wg, inter, hid)},
		Up:   &Linear{Weight: tensor.FromFloat32(g, wu, inter, hid)},
		Down: &Linear{Weight: tensor.FromFloat32(g, wd, hid, inter)},
	}
	near(t, refMLP(x, wg, wu, wd, n, hid, inter, nil), values(t, m.Forward(tensor.FromFloat32(g, x, n, hid))))
}

// refMLP is down(silu(gate x) * up x) per row, each row's output scaled by scale[row]
// (nil: 1).
func refMLP(x, wg, wu, wd []float32, n, hid, inter int, scale []float64) []float64 {
	out := make([]float64, n*hid)
	for r := 0; r < n; r++ {
		row := x[r*hid : (r+1)*hid]
		act := make([]float32, inter)
		for i := 0; i < inter; i++ {
			act[i] = float32(silu(dot(row, wg[i*hid:(i+1)*hid])) * dot(row, wu[i*hid:(i+1)*hid]))
		}
		s := 1.0
		if scale != nil {
			s = scale[r]
		}
		for o := 0; o < hid; o++ {
			out[r*hid+o] = s * dot(act, wd[o*inter:(o+1)*inter])
		}
	}
	return out
}

// TestSwitchGLU checks the expert bank against each routed expert run as its own MLP.
func TestSwitchGLU(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	g := graph.NewCPU(graph.Options{})
	const n, hid, inter, e, k = 3, 8, 5, 4, 2
	x := randVals(rng, n*hid)
	wg, wu, wd := randVals(rng, e*inter*hid), randVals(rng, e*inter*hid), randVals(rng, e*hid*inter)
	idx := []int32{2, 0, 3, 3, 1, 2}
	scores := []float32{0.7, 0.3, 0.5, 0.5, 0.9, 0.1}
	s := SwitchGLU{
		Gate: tensor.FromFloat32(g, wg, e, inter, hid),
		Up:   tensor.FromFloat32(g, wu, e, inter, hid),
		Down: tensor.FromFloat32(g, wd, e, hid, inter),
	}
	y := s.Forward(tensor.FromFloat32(g, x, 1, n, hid), tensor.FromInt32(g, idx, 1, n, k), tensor.FromFloat32(g, scores, 1, n, k))
	require.Equal(t, []int{1, n, hid}, y.Shape())
	want := make([]float64, n*hid)
	for r := 0; r < n; r++ {
		for j := 0; j < k; j++ {
			ex := int(idx[r*k+j])
			one := refMLP(x[r*hid:(r+1)*hid], wg[ex*inter*hid:(ex+1)*inter*hid], wu[ex*inter*hid:(ex+1)*inter*hid],
				wd[ex*hid*inter:(ex+1)*hid*inter], 1, hid, inter, []float64{float64(scores[r*k+j])})
			for o := range one {
				want[r*hid+o] += one[o]
			}
		}
	}
	near(t, want, values(t, y))
}
