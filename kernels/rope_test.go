package kernels_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// ropeRef rotates in float64. Both twins form the angle theta = pos * base^-e'
// (e' = 2i/dims) in float32, as MLX does (so they agree with each other), so a rotated
// element's error scales with (|x_i| + |x_pair|) * (1 + theta * (1 + e' log2 base)):
// float32 rounding of the angle and of the frequency. Passed-through elements must
// match exactly.
func ropeRef(l *kernels.Launch) ref {
	xa := &l.Args[0]
	x, offs := dense(xa), dense(&l.Args[1])
	p := l.Params.(*kernels.RoPEParams)
	B, H, S, D := xa.Shape[0], xa.Shape[1], xa.Shape[2], xa.Shape[3]
	half := p.Dims / 2
	r := ref{want: make([]float64, len(x)), scale: make([]float64, len(x))}
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			for s := 0; s < S; s++ {
				base := ((b*H+h)*S + s) * D
				pos := offs[b] + float64(s)
				for i := 0; i < half; i++ {
					e := 2 * float64(i) / float64(p.Dims)
					theta := pos * math.Pow(p.Base, -e)
					c, sn := math.Cos(theta), math.Sin(theta)
					x1, x2 := x[base+i], x[base+i+half]
					mag := math.Abs(x1) + math.Abs(x2)
					for k, v := range map[int]float64{i: x1*c - x2*sn, i + half: x1*sn + x2*c} {
						r.want[base+k] = v
						r.scale[base+k] = mag * (1 + theta*(1+e*math.Log2(p.Base)))
					}
				}
				copy(r.want[base+p.Dims:base+D], x[base+p.Dims:base+D])
			}
		}
	}
	return r
}

// TestRoPETwins: both twins (float32 angles, positions up to 4000) within a few float32
// roundings of the angle-aware scale, which at position 4000 allows an absolute error
// near 1e-3 against float64; against each other they agree to ~1e-7 (TestMSLMatchesGoTwin).
func TestRoPETwins(t *testing.T) {
	checkTwins(t, "rope", ropeRef, 2.4e-7, 3.6e-7)
}

func TestRoPEInPlaceMatchesOutOfPlace(t *testing.T) {
	mk := func() *kernels.Launch {
		l := &kernels.Launch{Kernel: kernels.KRoPE, Params: &kernels.RoPEParams{Dims: 6, Base: 500}, NArgs: 3}
		l.Args[0] = kernels.NewArg(kernels.Contiguous(kernels.Float32, 2, 2, 3, 10))
		for i := range kernels.F32(l.Args[0].Data) {
			kernels.F32(l.Args[0].Data)[i] = float32(math.Sin(float64(i)))
		}
		l.Args[1] = kernels.NewArg(kernels.Contiguous(kernels.Int32, 2))
		copy(kernels.I32(l.Args[1].Data), []int32{5, 300})
		l.Args[2] = kernels.NewArg(kernels.Contiguous(kernels.Float32, 2, 2, 3, 10))
		return l
	}
	out := mk()
	want := goRun(out)
	in := mk()
	in.Args[2] = in.Args[0]
	kernels.Run(in)
	require.Equal(t, want, dense(&in.Args[0]))
	require.Equal(t, ropeRef(out).want[7:10], want[7:10], "dims 6..9 pass through")
}
