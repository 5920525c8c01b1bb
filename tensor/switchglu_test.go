package tensor_test

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// unfusedSwitchGLU is the expert block one op at a time (the fused kernel's reference).
func unfusedSwitchGLU(x, gate, up, down, idx, scores tensor.Array) tensor.Array {
	n, h, k := x.Dim(0), x.Dim(1), idx.Dim(1)
	act := tensor.Mul(tensor.Silu(tensor.GatherMM(x, gate, idx)), tensor.GatherMM(x, up, idx)) // [n, k, I]
	rows := tensor.Reshape(act, n*k, act.Dim(-1))
	d := tensor.Reshape(tensor.GatherMM(rows, down, tensor.Reshape(idx, n*k, 1)), n, k, h)
	return tensor.Sum(tensor.Mul(d, tensor.ExpandDims(scores, -1)), 1, false)
}

// TestSwitchGLUMatchesOps: the fused kernel equals the op-by-op composition (float32
// noise only) and a float64 reference, including indices that wrap or fall outside.
func TestSwitchGLUMatchesOps(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(5))
	rnd := func(lo, hi float64, shape ...int) ([]float32, tensor.Array) {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(lo + rng.Float64()*(hi-lo))
		}
		return v, tensor.FromFloat32(g, v, shape...)
	}
	for _, c := range []struct{ n, h, k, e, i int }{{1, 64, 2, 8, 32}, {3, 16, 2, 4, 10}, {4, 8, 3, 5, 6}} {
		xv, x := rnd(-1, 1, c.n, c.h)
		gv, gate := rnd(-0.4, 0.4, c.e, c.i, c.h)
		uv, up := rnd(-0.4, 0.4, c.e, c.i, c.h)
		dv, down := rnd(-0.4, 0.4, c.e, c.h, c.i)
		sv, scores := rnd(0, 1, c.n, c.k)
		iv := make([]int32, c.n*c.k)
		for j := range iv {
			iv[j] = int32(rng.Intn(c.e))
		}
		idx := tensor.FromInt32(g, iv, c.n, c.k)
		got, err := tensor.SwitchGLU(x, gate, up, down, idx, scores).Float32s()
		require.NoError(t, err)
		ops, err := unfusedSwitchGLU(x, gate, up, down, idx, scores).Float32s()
		require.NoError(t, err)
		for r := 0; r < c.n; r++ {
			for hh := 0; hh < c.h; hh++ {
				want, scale := 0.0, 0.0
				for j := 0; j < c.k; j++ {
					e := int(iv[r*c.k+j])
					for q := 0; q < c.i; q++ {
						var gs, us float64
						for z := 0; z < c.h; z++ {
							gs += float64(gv[(e*c.i+q)*c.h+z]) * float64(xv[r*c.h+z])
							us += float64(uv[(e*c.i+q)*c.h+z]) * float64(xv[r*c.h+z])
						}
						a := gs / (1 + math.Exp(-gs)) * us
						term := float64(sv[r*c.k+j]) * float64(dv[(e*c.h+hh)*c.i+q]) * a
						want += term
						scale += math.Abs(term)
					}
				}
				i := r*c.h + hh
				require.InDelta(t, want, got[i], 1e-5*(scale+1e-3), "case %+v [%d]", c, i)
				require.InDelta(t, ops[i], got[i], 1e-6*(scale+1e-3), "fused vs ops, case %+v [%d]", c, i)
			}
		}
	}
	// Shapes it cannot take panic with a clear message.
	_, x := rnd(-1, 1, 2, 8)
	_, w := rnd(-1, 1, 4, 6, 8)
	_, bad := rnd(-1, 1, 4, 8, 5)
	_, sc := rnd(0, 1, 2, 2)
	idx := tensor.FromInt32(g, []int32{0, 1, 2, 3}, 2, 2)
	require.PanicsWithError(t, "tensor: switch_glu: x [2 8], gate [4 6 8], up [4 6 8], down [4 8 5]: want gate and up [E, I, H], down [E, H, I]",
		func() { tensor.SwitchGLU(x, w, w, bad, idx, sc) })
}
