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
		dst := concatRegion(o, in, p.Axis, start)
		start += in.Shape[p.Axis]
		copyArgs(in, &dst, l.Helper)
	}
}

// concatRegion is the part of o that input in fills: a view of o with in's extent along
// axis, starting at start (both twins copy into it).
func concatRegion(o, in *Arg, axis, start int) Arg {
	dst := Arg{Data: o.Data, Layout: o.Layout}
	dst.Shape[axis] = in.Shape[axis]
	dst.Offset += start * o.Strides[axis]
	return dst
}

// updateRegion is the part of o that slice_update overwrites with upd.
func updateRegion(o, upd *Arg, p *SliceUpdateParams) Arg {
	dst := Arg{Data: o.Data, Layout: upd.Layout}
	dst.DType = o.DType
	dst.Offset = o.Offset + p.Offset
	dst.Strides = p.Strides
	return dst
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
		copyArgs(base, o, l.Helper)
	}
	dst := updateRegion(o, upd, p)
	copyArgs(upd, &dst, l.Helper)
}
