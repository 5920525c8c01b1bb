package kernels

import (
	"math"
	"math/rand"
)

// KSoftmax is softmax over the last axis of a contiguous float32 input viewed as
// [rows, cols]: out = exp(x - max) / sum(exp(x - max)). Args x, out; no params. Only
// float32 (the tensor op casts other dtypes). A row holding NaN, or only -Inf, gives NaN.
// The output may reuse x's buffer: each element is read before it is written.
var KSoftmax = Register(&Kernel{Name: "softmax", Family: "softmax", CPU: softmaxCPU,
	Encode: softmaxEncode, Donates: true})

func init() { RegisterSamples("softmax", softmaxSamples) }

func softmaxCPU(l *Launch) {
	in, o := &l.Args[0], &l.Args[1]
	mustFloat32("softmax", in, o)
	rows, cols := rowsCols(in)
	if rows*cols == 0 {
		return
	}
	x := F32(in.Data)[in.Offset : in.Offset+rows*cols]
	y := F32(o.Data)[o.Offset : o.Offset+rows*cols]
	for r := 0; r < rows; r++ {
		softmaxRow(x[r*cols:r*cols+cols], y[r*cols:r*cols+cols])
	}
}

// softmaxRow writes softmax(x) to y (len(y) == len(x); y may be x). The shift, exp and
// sum are in float64, the stored exponentials in float32.
func softmaxRow(x, y []float32) {
	y = y[:len(x)]
	m := float64(maxRow(x))
	var s float64
	for i, v := range x {
		e := expF64(float64(v) - m)
		y[i] = float32(e)
		s += e
	}
	inv := 1 / s
	for i, e := range y {
		y[i] = float32(float64(e) * inv)
	}
}

// mustFloat32 guards the float32-only Go twins: a launch of another dtype is a bug in
// the tensor op that built it.
func mustFloat32(kernel string, args ...*Arg) {
	for _, a := range args {
		if a.DType != Float32 {
			panic("kernels: " + kernel + " takes float32 only, got " + a.DType.String())
		}
	}
}

func softmaxEncode(l *Launch, e Encoder) {
	in, o := &l.Args[0], &l.Args[1]
	rows, cols := rowsCols(in)
	e.Entry("softmax_float32")
	e.SetArg(0, in)
	e.SetArg(1, o)
	e.SetBytes(2, mslPack(&rowConsts{rows, cols}))
	e.DispatchThreadgroups([3]int{max(rows, 1), 1, 1}, RowGroup(cols, e))
}

// softmaxSamples covers short, decode-sized and long rows, some entries -Inf (masked).
func softmaxSamples(rng *rand.Rand) []*Launch {
	var out []*Launch
	for _, sh := range [][]int{{1, 1}, {3, 7}, {4, 64}, {2, 130}, {2, 3000}} {
		l := &Launch{Kernel: KSoftmax, NArgs: 2}
		l.Args[0] = NewArg(Contiguous(Float32, sh...))
		Fill(rng, &l.Args[0], -8, 8)
		if sh[1] > 2 {
			F32(l.Args[0].Data)[1] = float32(math.Inf(-1))
		}
		l.Args[1] = NewArg(Contiguous(Float32, sh...))
		Poison(&l.Args[1])
		out = append(out, l)
	}
	return out
}
