package tensor_test

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// gdCase is one gated-delta problem held on the host.
type gdCase struct {
	B, T, Hk, Hv, Dk, Dv       int
	q, k, v, g, beta, state    []float32
	mask                       []bool // nil: no mask
	qArr, kArr, vArr, gArr     tensor.Array
	betaArr, stateArr, maskArr tensor.Array
}

// newGDCase draws model-like inputs (unit k, q scaled by Dk^-0.5, g < 0, beta in (0, 1))
// and uploads them; q arrives as a transposed view and v as a slice, so the op's
// densifying copies are exercised.
func newGDCase(g *graph.Graph, rng *rand.Rand, b, t, hk, hv, dk, dv int, masked bool) *gdCase {
	c := &gdCase{B: b, T: t, Hk: hk, Hv: hv, Dk: dk, Dv: dv}
	c.q = rnnUnit(rng, b*t*hk, dk, 1/math.Sqrt(float64(dk)))
	c.k = rnnUnit(rng, b*t*hk, dk, 1)
	c.v = rnnRand(rng, b*t*hv*dv, -1, 1)
	c.g = rnnRand(rng, b*t*hv, -1, -0.01)
	c.beta = rnnRand(rng, b*t*hv, 0.05, 0.95)
	c.state = rnnRand(rng, b*hv*dv*dk, -0.5, 0.5)

	// q as [B, Hk, T, Dk] in memory, viewed as [B, T, Hk, Dk].
	qt := make([]float32, len(c.q))
	for bi := 0; bi < b; bi++ {
		for ti := 0; ti < t; ti++ {
			for h := 0; h < hk; h++ {
				copy(qt[((bi*hk+h)*t+ti)*dk:][:dk], c.q[((bi*t+ti)*hk+h)*dk:][:dk])
			}
		}
	}
	c.qArr = tensor.SwapAxes(tensor.FromFloat32(g, qt, b, hk, t, dk), 1, 2)
	c.kArr = tensor.FromFloat32(g, c.k, b, t, hk, dk)
	// v as the first Dv of 2*Dv features.
	vw := make([]float32, 2*len(c.v))
	for i := 0; i < b*t*hv; i++ {
		copy(vw[i*2*dv:][:dv], c.v[i*dv:][:dv])
		vw[i*2*dv+dv] = float32(math.NaN())
	}
	c.vArr = tensor.SliceAxis(tensor.FromFloat32(g, vw, b, t, hv, 2*dv), 3, 0, dv)
	c.gArr = tensor.FromFloat32(g, c.g, b, t, hv)
	c.betaArr = tensor.FromFloat32(g, c.beta, b, t, hv)
	c.stateArr = tensor.FromFloat32(g, c.state, b, hv, dv, dk)
	if masked {
		c.mask = make([]bool, b*t)
		for i := range c.mask {
			c.mask[i] = rng.Intn(3) != 0
		}
		// A masked and a valid step whenever there are two (a lone step stays valid, so y
		// is not all zeros).
		c.mask[0] = false
		c.mask[len(c.mask)-1] = true
		c.maskArr = tensor.FromBool(g, c.mask, b, t)
	}
	return c
}

// reference runs the recurrence in float64 from the formulas of tensor.GatedDelta.
func (c *gdCase) reference() (y, st []float64) {
	st = rnnF64s(c.state)
	y = make([]float64, c.B*c.T*c.Hv*c.Dv)
	r := c.Hv / c.Hk
	for b := 0; b < c.B; b++ {
		for t := 0; t < c.T; t++ {
			if c.mask != nil && !c.mask[b*c.T+t] {
				continue
			}
			for h := 0; h < c.Hv; h++ {
				ko := ((b*c.T+t)*c.Hk + h/r) * c.Dk
				gi := (b*c.T+t)*c.Hv + h
				S := st[(b*c.Hv+h)*c.Dv*c.Dk:][:c.Dv*c.Dk]
				decay := math.Exp(float64(c.g[gi]))
				for i := range S {
					S[i] *= decay
				}
				for dv := 0; dv < c.Dv; dv++ {
					row := S[dv*c.Dk:][:c.Dk]
					var kv float64
					for j, s := range row {
						kv += s * float64(c.k[ko+j])
					}
					delta := (float64(c.v[gi*c.Dv+dv]) - kv) * float64(c.beta[gi])
					var o float64
					for j := range row {
						row[j] += delta * float64(c.k[ko+j])
						o += row[j] * float64(c.q[ko+j])
					}
					y[gi*c.Dv+dv] = o
				}
			}
		}
	}
	return y, st
}

func (c *gdCase) run() (y, st tensor.Array) {
	return tensor.GatedDelta(c.qArr, c.kArr, c.vArr, c.gArr, c.betaArr, c.stateArr, c.maskArr)
}

func TestGatedDeltaMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for _, dk := range []int{16, 32, 33, 128} { // 33: not a multiple of the unrolling
		for _, r := range []int{1, 2} {
			for _, T := range []int{1, 17} {
				for _, B := range []int{1, 2} {
					for _, masked := range []bool{false, true} {
						name := fmt.Sprintf("Dk%d_r%d_T%d_B%d_mask%v", dk, r, T, B, masked)
						t.Run(name, func(t *testing.T) {
							g := graph.NewCPU(graph.Options{})
							hk, dv := 2, 5+dk%7 // Dv differs from Dk
							c := newGDCase(g, rng, B, T, hk, hk*r, dk, dv, masked)
							y, st := c.run()
							require.Equal(t, []int{B, T, hk * r, dv}, y.Shape())
							require.Equal(t, []int{B, hk * r, dv, dk}, st.Shape())
							wy, ws := c.reference()
							gy, gs := rnnEval(t, y), rnnEval(t, st)
							require.Less(t, rnnNormErr(t, gy, wy), 1e-6, "y")
							require.Less(t, rnnNormErr(t, gs, ws), 1e-6, "state")
							for i, ok := range c.mask {
								if !ok {
									n := c.Hv * c.Dv
									require.Equal(t, make([]float32, n), gy[i*n:(i+1)*n], "masked step %d", i)
								}
							}
						})
					}
				}
			}
		}
	}
}

// TestGatedDeltaChainedSteps: one T-step call equals T calls of one step each, the state
// threaded through (bit for bit: the per-step arithmetic is the same).
func TestGatedDeltaChainedSteps(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for _, dk := range []int{16, 32} {
		t.Run(fmt.Sprintf("Dk%d", dk), func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			const T = 17
			c := newGDCase(g, rng, 2, T, 2, 4, dk, 16, true)
			yAll, stAll := c.run()
			state := c.stateArr
			var ys []tensor.Array
			for s := 0; s < T; s++ {
				step := func(a tensor.Array) tensor.Array { return tensor.SliceAxis(a, 1, s, s+1) }
				var y tensor.Array
				y, state = tensor.GatedDelta(step(c.qArr), step(c.kArr), step(c.vArr), step(c.gArr),
					step(c.betaArr), state, step(c.maskArr))
				ys = append(ys, y)
			}
			require.Equal(t, rnnEval(t, stAll), rnnEval(t, state))
			require.Equal(t, rnnEval(t, yAll), rnnEval(t, tensor.Concatenate(1, ys...)))
		})
	}
}

// TestGatedDeltaOneBuffer: y and the state are views of one packed output buffer.
func TestGatedDeltaOneBuffer(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(2))
	b, T, hk, hv, dk, dv := 1, 3, 2, 4, 16, 8
	q := tensor.FromFloat32(g, rnnUnit(rng, b*T*hk, dk, 0.25), b, T, hk, dk)
	k := tensor.FromFloat32(g, rnnUnit(rng, b*T*hk, dk, 1), b, T, hk, dk)
	v := tensor.FromFloat32(g, rnnRand(rng, b*T*hv*dv, -1, 1), b, T, hv, dv)
	gg := tensor.FromFloat32(g, rnnRand(rng, b*T*hv, -1, 0), b, T, hv)
	beta := tensor.FromFloat32(g, rnnRand(rng, b*T*hv, 0, 1), b, T, hv)
	st := tensor.FromFloat32(g, rnnRand(rng, b*hv*dv*dk, -1, 1), b, hv, dv, dk)
	base := live(t, g)
	y, ns := tensor.GatedDelta(q, k, v, gg, beta, st, tensor.Array{})
	require.NoError(t, tensor.Eval(y, ns))
	require.Equal(t, base+1, live(t, g), "one packed buffer for both outputs")
	runtime.KeepAlive([]tensor.Array{q, k, v, gg, beta, st}) // the inputs count in base
	yl, sl := y.Layout(), ns.Layout()
	require.Equal(t, 0, yl.Offset)
	require.Equal(t, b*T*hv*dv, sl.Offset, "the state follows y")
	require.True(t, yl.IsContiguous())
	require.True(t, sl.IsContiguous())
}
