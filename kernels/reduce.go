package kernels

import "math"

// Reductions over the last axis of a contiguous input viewed as [rows, cols]; the output
// has one element per row. Accumulation is in float64 on the Go twin.

// ReduceOp names a reduction.
type ReduceOp struct {
	Name string
	Init float64
	Step func(acc, x float64) float64
}

// The reductions, each registered as kernel "reduce_<name>".
var (
	RedSum = &ReduceOp{"sum", 0, func(a, x float64) float64 { return a + x }}
	RedMax = &ReduceOp{"max", math.Inf(-1), math.Max}
	RedMin = &ReduceOp{"min", math.Inf(1), math.Min}
)

var reduceKernels = map[*ReduceOp]*Kernel{}

// ReduceKernel returns the registered kernel of op.
func ReduceKernel(op *ReduceOp) *Kernel { return reduceKernels[op] }

func init() {
	for _, op := range []*ReduceOp{RedSum, RedMax, RedMin} {
		op := op
		reduceKernels[op] = Register(&Kernel{Name: "reduce_" + op.Name, Family: "reduce",
			CPU: func(l *Launch) { reduceCPU(op, l) }})
	}
}

func reduceCPU(op *ReduceOp, l *Launch) {
	in, o := &l.Args[0], &l.Args[1]
	cols := 1
	if in.NDim > 0 {
		cols = in.Shape[in.NDim-1]
	}
	rows := o.Size()
	if in.DType == Float32 && o.DType == Float32 && op == RedSum {
		x := F32(in.Data)[in.Offset : in.Offset+rows*cols]
		y := F32(o.Data)[o.Offset : o.Offset+rows]
		for r := range y {
			var s float32
			for _, v := range x[r*cols : r*cols+cols] {
				s += v
			}
			y[r] = s
		}
		return
	}
	for r := 0; r < rows; r++ {
		acc := op.Init
		for c := 0; c < cols; c++ {
			acc = op.Step(acc, Load(in.DType, in.Data, in.Offset+r*cols+c))
		}
		Store(o.DType, o.Data, o.Offset+r, acc)
	}
}
