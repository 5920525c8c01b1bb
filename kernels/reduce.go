package kernels

import (
	"math"
	"math/rand"
)

// Reductions over the last axis of a contiguous input viewed as [rows, cols]; the output
// has one element per row. The input must be contiguous (the tensor op moves the reduced
// axis last and copies first). Both twins handle float32 inputs, and int32 and uint32
// ones for sum, max, min and argmax (integer sums wrap around); the Go twin also takes
// any other dtype through float64 loads. Float sums accumulate in float64 on the Go twin
// and in float (a SIMD-group tree) on the MSL twin. Max and min propagate NaN;
// argmax counts NaN as the largest value and breaks ties toward the lowest index.

// ReduceOp names a reduction.
type ReduceOp struct {
	Name string
	kind reduceKind
}

type reduceKind uint8

const (
	redSum reduceKind = iota
	redMax
	redMin
	redMean
	redArgmax
	redLogSumExp
)

// The reductions, each registered as kernel "reduce_<name>".
var (
	RedSum       = &ReduceOp{"sum", redSum}
	RedMax       = &ReduceOp{"max", redMax}
	RedMin       = &ReduceOp{"min", redMin}
	RedMean      = &ReduceOp{"mean", redMean} // float output
	RedArgmax    = &ReduceOp{"argmax", redArgmax}
	RedLogSumExp = &ReduceOp{"logsumexp", redLogSumExp} // float output
)

// ReduceOps lists every reduction.
var ReduceOps = []*ReduceOp{RedSum, RedMax, RedMin, RedMean, RedArgmax, RedLogSumExp}

var reduceKernels = map[*ReduceOp]*Kernel{}

// ReduceKernel returns the registered kernel of op.
func ReduceKernel(op *ReduceOp) *Kernel { return reduceKernels[op] }

func init() {
	for _, op := range ReduceOps {
		op := op
		reduceKernels[op] = Register(&Kernel{Name: "reduce_" + op.Name, Family: "reduce",
			CPU:    func(l *Launch) { reduceCPU(op, l) },
			Encode: func(l *Launch, e Encoder) { reduceEncode(op, l, e) }})
	}
	RegisterSamples("reduce", reduceSamples)
}

// rowsCols views a launch's first argument as [rows, cols] (reduced along the last axis).
func rowsCols(in *Arg) (rows, cols int) {
	if in.NDim == 0 {
		return 1, 1
	}
	cols = in.Shape[in.NDim-1]
	rows = 1
	for i := 0; i < in.NDim-1; i++ {
		rows *= in.Shape[i]
	}
	return rows, cols
}

func reduceCPU(op *ReduceOp, l *Launch) {
	in, o := &l.Args[0], &l.Args[1]
	rows, cols := rowsCols(in)
	if rows == 0 {
		return
	}
	if in.DType == Float32 && (o.DType == Float32 || (op == RedArgmax && o.DType == Int32)) {
		var x []float32
		if cols > 0 {
			x = F32(in.Data)[in.Offset : in.Offset+rows*cols]
		}
		if op == RedArgmax {
			y := I32(o.Data)[o.Offset : o.Offset+rows]
			for r := range y {
				y[r] = int32(argmaxRow(x[r*cols : r*cols+cols]))
			}
			return
		}
		y := F32(o.Data)[o.Offset : o.Offset+rows]
		for r := range y {
			y[r] = float32(reduceRow(op.kind, x[r*cols:r*cols+cols]))
		}
		return
	}
	if in.DType == Int32 && o.DType == Int32 && op != RedMean && op != RedLogSumExp {
		var x []int32
		if cols > 0 {
			x = I32(in.Data)[in.Offset : in.Offset+rows*cols]
		}
		y := I32(o.Data)[o.Offset : o.Offset+rows]
		for r := range y {
			y[r] = reduceRowInt32(op.kind, x[r*cols:r*cols+cols])
		}
		return
	}
	// Any other dtype: load each row as float64 (exact for every dtype), reduce, store.
	row := make([]float64, cols)
	for r := 0; r < rows; r++ {
		for c := range row {
			row[c] = Load(in.DType, in.Data, in.Offset+r*cols+c)
		}
		var v float64
		if op == RedArgmax {
			v = float64(argmaxRow(row))
		} else {
			v = reduceRow(op.kind, row)
		}
		Store(o.DType, o.Data, o.Offset+r, v)
	}
}

// reduceRow computes every reduction but argmax over one row.
func reduceRow[T float32 | float64](k reduceKind, x []T) float64 {
	switch k {
	case redSum:
		return sumRow(x)
	case redMax:
		return float64(maxRow(x))
	case redMin:
		return float64(minRow(x))
	case redMean:
		return sumRow(x) / float64(len(x))
	case redLogSumExp:
		return logSumExpRow(x)
	}
	panic("kernels: unknown reduction")
}

// reduceRowInt32 reduces an int32 row exactly; sums wrap around as int32 arithmetic
// does, on Metal too.
func reduceRowInt32(k reduceKind, x []int32) int32 {
	switch k {
	case redSum:
		var s int32
		for _, v := range x {
			s += v
		}
		return s
	case redMax:
		m := int32(math.MinInt32)
		for _, v := range x {
			m = max(m, v)
		}
		return m
	case redMin:
		m := int32(math.MaxInt32)
		for _, v := range x {
			m = min(m, v)
		}
		return m
	case redArgmax:
		return int32(argmaxRow(x))
	}
	panic("kernels: unknown int32 reduction")
}

// sumRow adds in float64 with four independent accumulators.
func sumRow[T float32 | float64](x []T) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += float64(x[i])
		s1 += float64(x[i+1])
		s2 += float64(x[i+2])
		s3 += float64(x[i+3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// maxRow is the largest element (NaN if any is NaN, -Inf for an empty row).
func maxRow[T float32 | float64](x []T) T {
	m := T(math.Inf(-1))
	for _, v := range x {
		if v > m || v != v {
			m = v
			if v != v {
				return m
			}
		}
	}
	return m
}

// minRow is the smallest element (NaN if any is NaN, +Inf for an empty row).
func minRow[T float32 | float64](x []T) T {
	m := T(math.Inf(1))
	for _, v := range x {
		if v < m || v != v {
			m = v
			if v != v {
				return m
			}
		}
	}
	return m
}

// argmaxRow is the index of the first maximum, NaN counting as the maximum (0 if empty).
func argmaxRow[T float32 | float64 | int32](x []T) int {
	if len(x) == 0 {
		return 0
	}
	best, bi := x[0], 0
	if best != best {
		return 0
	}
	for i, v := range x {
		if v > best {
			best, bi = v, i
		} else if v != v {
			return i
		}
	}
	return bi
}

// logSumExpRow is log(sum(exp(x))), shifted by the row's maximum (by 0 when that is
// infinite, so an all -Inf row gives -Inf and a +Inf gives +Inf).
func logSumExpRow[T float32 | float64](x []T) float64 {
	m := float64(maxRow(x))
	if math.IsInf(m, 0) {
		m = 0
	}
	var s float64
	for _, v := range x {
		s += expF64(float64(v) - m)
	}
	return math.Log(s) + m
}

// RowGroup is the threadgroup of a row kernel that works at any multiple of 32 threads:
// RowThreads(cols), clamped to the pipeline's limit (rounded down to a multiple of 32,
// and at least 32, so a limit under 32 is left for the encoder to report).
func RowGroup(cols int, e Encoder) [3]int { return ClampGroup(RowThreads(cols), e) }

// ClampGroup is a 1-D threadgroup of the given width (a multiple of 32) for a kernel that
// works at any multiple of 32, clamped to the pipeline's limit rounded down to a multiple
// of 32 (at least 32, so a limit under 32 is left for the encoder to report).
func ClampGroup(threads int, e Encoder) [3]int {
	return [3]int{min(threads, max(threadLimit(e)/32*32, 32)), 1, 1}
}

// threadLimit is the selected pipeline's limit on threads per threadgroup: 1024 for an
// encoder that does not know it, and at least 1.
func threadLimit(e Encoder) int {
	if tl, ok := e.(ThreadLimiter); ok {
		return max(tl.MaxThreads(), 1)
	}
	return 1024
}

// LimitThreads is a threadgroup width of at most want threads (and at least 1) that
// the selected pipeline accepts, for a dispatchThreads kernel that works at any width
// (no threadgroup memory, no SIMD-group functions).
func LimitThreads(want int, e Encoder) int { return max(min(want, threadLimit(e)), 1) }

// Groups1DFor is Groups1D with the threadgroup clamped to the selected pipeline's limit
// (see LimitThreads).
func Groups1DFor(n int, e Encoder) (grid, group [3]int) {
	grid, group = Groups1D(n)
	group[0] = LimitThreads(group[0], e)
	return grid, group
}

// RowThreads is the threadgroup size for one row of cols elements: a multiple of 32
// giving each thread about four elements, at most 1024.
func RowThreads(cols int) int {
	t := (cols + 3) / 4
	t = (t + 31) / 32 * 32
	return min(max(t, 32), 1024)
}

// rowConsts is the setBytes struct of the row-wise twins (reduce, softmax): rows of cols.
type rowConsts struct {
	Rows int `msl:"rows"`
	Cols int `msl:"cols"`
}

func reduceEncode(op *ReduceOp, l *Launch, e Encoder) {
	in, o := &l.Args[0], &l.Args[1]
	rows, cols := rowsCols(in)
	e.Entry("reduce_" + op.Name + "_" + in.DType.String())
	e.SetArg(0, in)
	e.SetArg(1, o)
	e.SetBytes(2, mslPack(&rowConsts{rows, cols}))
	e.DispatchThreadgroups([3]int{max(rows, 1), 1, 1}, RowGroup(cols, e))
}

// reduceSamples covers small and long rows, odd sizes, float32, int32 and uint32 inputs,
// and a row holding NaN and ties.
func reduceSamples(rng *rand.Rand) []*Launch {
	var out []*Launch
	for _, op := range ReduceOps {
		for _, sh := range [][]int{{1, 1}, {3, 7}, {2, 64}, {5, 130}, {2, 3000}} {
			for _, dt := range []DType{Float32, Int32, UInt32} {
				if dt != Float32 && (op == RedMean || op == RedLogSumExp) {
					continue
				}
				odt := dt
				if op == RedArgmax {
					odt = Int32
				}
				l := &Launch{Kernel: ReduceKernel(op), NArgs: 2}
				l.Args[0] = NewArg(Contiguous(dt, sh...))
				lo := -50.0
				if dt == UInt32 {
					lo = 0
				}
				Fill(rng, &l.Args[0], lo, 50)
				if dt == Float32 && sh[1] == 130 {
					x := F32(l.Args[0].Data)
					x[3], x[77] = x[100], x[100] // ties in row 0
					x[130+9] = float32(math.NaN())
				}
				l.Args[1] = NewArg(Contiguous(odt, sh[0]))
				Poison(&l.Args[1])
				out = append(out, l)
			}
		}
	}
	return out
}

// expF64 is e^x to about 1e-13 relative error, ample for float32 results and faster
// than math.Exp (the Go twins' softmax, SDPA and silu call it per element):
// x = (k/32) ln2 + r with |r| <= ln2/64, e^r by a degree-5 polynomial, times
// 2^(k mod 32 / 32) from a table and 2^floor(k/32). Results below float32's smallest
// subnormal are 0, above its range +Inf.
func expF64(x float64) float64 {
	if !(x >= -104) {
		if x != x {
			return x
		}
		return 0
	}
	if x > 89 {
		return math.Inf(1)
	}
	t := x*(32*math.Log2E) + expRound
	k := int64(int32(uint32(math.Float64bits(t)))) // round(32 x log2 e)
	r := x - (t-expRound)*(math.Ln2/32)
	r2 := r * r
	p := (1 + r) + r2*((0.5+r*(1.0/6))+r2*(1.0/24+r*(1.0/120)))
	return p * exp2Frac[k&31] * math.Float64frombits(uint64(k>>5+1023)<<52)
}

// expRound is 1.5 * 2^52: adding it to a float64 of magnitude < 2^51 rounds it to an
// integer held in the low mantissa bits.
const expRound = 6755399441055744.0

// exp2Frac[j] is 2^(j/32).
var exp2Frac = func() (t [32]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 32)
	}
	return t
}()
