package kernels

// ConcatParams is the parameter struct of KConcatenate.
type ConcatParams struct{ Axis int }

// KConcatenate joins its inputs along Axis into a contiguous output. Args in..., out.
var KConcatenate = Register(&Kernel{Name: "concatenate", Family: "copy", CPU: concatCPU})

func concatCPU(l *Launch) {
	p := l.Params.(*ConcatParams)
	o := l.Out()
	start := 0
	for i := 0; i < l.NArgs-1; i++ {
		in := &l.Args[i]
		// The output region for input i is a view of o: same strides, shifted along Axis.
		dst := Arg{Data: o.Data, Layout: o.Layout}
		dst.Shape[p.Axis] = in.Shape[p.Axis]
		dst.Offset += start * o.Strides[p.Axis]
		start += in.Shape[p.Axis]
		cp := Launch{Kernel: KCopy, NArgs: 2}
		cp.Args[0], cp.Args[1] = *in, dst
		copyCPU(&cp)
	}
}

// KSliceUpdate writes update into a copy of base at a strided region. Args base, update,
// out; Params *SliceUpdateParams. The output may reuse base's buffer (donation).
var KSliceUpdate = Register(&Kernel{Name: "slice_update", Family: "copy", CPU: sliceUpdateCPU, Donates: true})

// SliceUpdateParams locates the region: element offset and strides within the output
// (the region's shape is the update's).
type SliceUpdateParams struct {
	Offset  int
	Strides [MaxDims]int
}

func sliceUpdateCPU(l *Launch) {
	p := l.Params.(*SliceUpdateParams)
	base, upd, o := &l.Args[0], &l.Args[1], &l.Args[2]
	if &base.Data[0] != &o.Data[0] || base.Offset != o.Offset {
		cp := Launch{Kernel: KCopy, NArgs: 2}
		cp.Args[0], cp.Args[1] = *base, *o
		copyCPU(&cp)
	}
	dst := Arg{Data: o.Data, Layout: upd.Layout}
	dst.DType = o.DType
	dst.Offset = o.Offset + p.Offset
	dst.Strides = p.Strides
	cp := Launch{Kernel: KCopy, NArgs: 2}
	cp.Args[0], cp.Args[1] = *upd, dst
	copyCPU(&cp)
}
