package kernels

import (
	"fmt"
	"math"
)

// Comparing the twins. A sample launch's output starts poisoned (Poison); the copy that
// the other twin runs gets a different poison (SwapPoison), so an element that neither
// twin writes differs between the two copies and fails CompareArgs, instead of passing
// as "poison equals poison".

// otherPoison is the second poison: a finite value, exact in every float dtype, far
// from anything a sample computes.
const otherPoison = -31232

// otherBoolPoison is the second poison of bool buffers (Poison uses 0xAA).
const otherBoolPoison = 0x55

// isPoison reports whether element i of a holds Poison's value.
func isPoison(a *Arg, i int) bool {
	switch {
	case a.DType.IsFloat():
		return math.IsNaN(Load(a.DType, a.Data, i))
	case a.DType == Bool:
		return a.Data[i] == 0xAA
	}
	return Load(a.DType, a.Data, i) == -123456789
}

// SwapPoison gives every argument of l that holds only Poison's value the second
// poison instead. Run it on the copy of a sample launch that the other twin runs.
func SwapPoison(l *Launch) {
	for j := 0; j < l.NArgs; j++ {
		a := &l.Args[j]
		n := len(a.Data) / a.DType.Size()
		all := n > 0
		for i := 0; i < n && all; i++ {
			all = isPoison(a, i)
		}
		if !all {
			continue
		}
		for i := 0; i < n; i++ {
			if a.DType == Bool {
				a.Data[i] = otherBoolPoison
			} else {
				Store(a.DType, a.Data, i, otherPoison)
			}
		}
	}
}

// TwinTolerance is the allowed difference between the twins, relative to max(1, |x|):
// 1e-5 for float32; one unit in the last place for the half types, whose twins round a
// float (MSL) or a float64 (Go) result once, so the two can straddle a rounding boundary.
func TwinTolerance(dt DType) float64 {
	switch dt {
	case Float16:
		return 1.0 / 1024
	case BFloat16:
		return 1.0 / 128
	}
	return 1e-5
}

// CompareArgs checks one argument of the other twin's copy (got) against the Go twin's
// (want), element by element over the whole buffer: integers and bools exactly, NaN and
// infinities in the same places, other floats within TwinTolerance. An element that
// still holds each copy's own poison was written by neither twin: that is an error
// inside the argument's layout, and expected outside it.
func CompareArgs(want, got *Arg) error {
	dt := want.DType
	if len(want.Data) != len(got.Data) {
		return fmt.Errorf("buffers of %d and %d bytes", len(want.Data), len(got.Data))
	}
	var inside map[int]bool
	n := len(want.Data) / dt.Size()
	for i := 0; i < n; i++ {
		w, g := Load(dt, want.Data, i), Load(dt, got.Data, i)
		if isPoison(want, i) && (g == otherPoison || (dt == Bool && got.Data[i] == otherBoolPoison)) {
			if inside == nil {
				inside = elementsOf(&want.Layout)
			}
			if inside[i] {
				return fmt.Errorf("element %d was written by neither twin", i)
			}
			continue
		}
		if w == g || (math.IsNaN(w) && math.IsNaN(g)) {
			continue
		}
		if !dt.IsFloat() || math.IsNaN(w) || math.IsNaN(g) || math.IsInf(w, 0) || math.IsInf(g, 0) {
			return fmt.Errorf("element %d: Go twin %v, other twin %v", i, w, g)
		}
		if d := math.Abs(w-g) / math.Max(1, math.Abs(w)); d > TwinTolerance(dt) {
			return fmt.Errorf("element %d: Go twin %v, other twin %v (relative difference %.3g, above %g)", i, w, g, d, TwinTolerance(dt))
		}
	}
	return nil
}

// elementsOf is the set of buffer element indices l addresses.
func elementsOf(l *Layout) map[int]bool {
	out := map[int]bool{}
	size := l.Size()
	for lin := 0; lin < size; lin++ {
		idx, r := l.Offset, lin
		for d := l.NDim - 1; d >= 0; d-- {
			idx += (r % l.Shape[d]) * l.Strides[d]
			r /= l.Shape[d]
		}
		out[idx] = true
	}
	return out
}
