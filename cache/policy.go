package cache

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// Policy decides how a batch's per-row metadata (left padding, prepared lengths, RoPE
// offsets) are kept: Lazy (lazy.go) or Eager (eager.go). The caches hold the metadata
// as fields of the policy's type and never ask which policy they have.
type Policy interface {
	// String returns "lazy" or "eager".
	String() string
	// field returns a set field holding v (one value per row), or an absent field when
	// v is nil. g is the graph a device array goes on (nil: graph.Default()).
	field(g *graph.Graph, v []int) field
}

// field is one per-row integer field of a batch under a policy: absent, or one value
// per row. Updates change the field in place; take and cat return new fields.
type field interface {
	// set reports whether the field holds values.
	set() bool
	// len is the number of rows, 0 when absent.
	len() int
	// add adds n to every row (a set field; absent stays absent), sub subtracts it.
	add(n int)
	sub(n int)
	// addRows adds v[b] to row b, subRows subtracts it.
	addRows(v *rowVec)
	subRows(v *rowVec)
	// take returns the field's rows idx.vals, in that order.
	take(idx *rowVec) field
	// cat returns the rows of f then of o (same policy); when only one side is set,
	// the other counts as nf (or no) rows of zeros.
	cat(g *graph.Graph, o field, nf, no int) field
	// ints returns the values (nil when absent). The error is the allocator's, when
	// reading them needs an evaluation that fails.
	ints() ([]int, error)
	// array returns the values as an int32 [B] array for a consumer to read in this
	// step (invalid when absent).
	array(g *graph.Graph) tensor.Array
	// arrays lists the device arrays the field holds.
	arrays() []tensor.Array
	// release drops the field's device array now; the field is not used afterwards.
	release()
}

// setField replaces *dst with nf and releases the field it replaces, as tensor.Assign
// does for arrays: nothing a cache drops waits for a garbage collection.
func setField(dst *field, nf field) {
	old := *dst
	*dst = nf
	if old != nil && old != nf {
		old.release()
	}
}

// ErrUnknownPolicy is wrapped by ParsePolicy's error.
var ErrUnknownPolicy = errors.New("unknown cache policy")

// ParsePolicy parses "lazy" or "eager" (case-insensitive, surrounding space ignored).
func ParsePolicy(s string) (Policy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "lazy":
		return Lazy, nil
	case "eager":
		return Eager, nil
	}
	return nil, fmt.Errorf("cache: %w %q (want lazy or eager)", ErrUnknownPolicy, s)
}

// checkPolicy panics when p is nil (the zero Policy).
func checkPolicy(op string, p Policy) {
	if p == nil {
		usagePanic(op, "no policy (want cache.Lazy or cache.Eager)")
	}
}

// ErrIncompatible is wrapped by every error of Merge: caches that cannot be combined.
var ErrIncompatible = errors.New("incompatible caches")

// MixedPoliciesError is Merge's error (it also wraps ErrIncompatible) when a request's
// cache has another policy than the one asked for: a batch cannot mix bookkeeping.
type MixedPoliciesError struct {
	Layer, Request int
	Want, Got      Policy
}

// Error names the layer, the request and both policies.
func (e *MixedPoliciesError) Error() string {
	return fmt.Sprintf("layer %d: request %d has a %v cache, the merge is %v", e.Layer, e.Request, e.Got, e.Want)
}

// UsageError is the panic value of a cache operation misused by its caller (a
// programming error, not bad user input): the operation and what was wrong.
type UsageError struct{ Op, Msg string }

// Error formats the misuse.
func (e *UsageError) Error() string { return "cache: " + e.Op + ": " + e.Msg }

func usagePanic(op, format string, args ...any) {
	panic(&UsageError{Op: op, Msg: fmt.Sprintf(format, args...)})
}

// keep makes a cache's array outlive the step scope it was built in (tensor.WithScope):
// everything a cache stores goes through it. Outside a scope it changes nothing.
func keep(a tensor.Array) tensor.Array { return tensor.Keep(a) }

// shared returns new references to as (see tensor.Share): callers may hold them while
// the cache replaces its own.
func shared(as []tensor.Array) []tensor.Array {
	for i, a := range as {
		as[i] = tensor.Share(a)
	}
	return as
}

// firstGraph returns g if set, else the graph of the first valid array, else nil.
func firstGraph(g *graph.Graph, as ...tensor.Array) *graph.Graph {
	if g != nil {
		return g
	}
	for _, a := range as {
		if a.Valid() {
			return a.Graph()
		}
	}
	return nil
}

// orDefault is the graph a cache uses when it knows none.
func orDefault(g *graph.Graph) *graph.Graph {
	if g == nil {
		return graph.Default()
	}
	return g
}

// checkRows panics unless every row is in [0, n) and there is at least one.
func checkRows(op string, rows []int, n int) {
	if len(rows) == 0 {
		usagePanic(op, "no rows to keep (drop the cache instead)")
	}
	for _, r := range rows {
		checkRow(op, r, n)
	}
}

func checkRow(op string, row, n int) {
	if row < 0 || row >= n {
		usagePanic(op, "row %d out of range for a batch of %d", row, n)
	}
}

func int32s(v []int) []int32 {
	out := make([]int32, len(v))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}

// rowVec is one int per row (rows to keep, paddings to add) with an int32 device copy
// made on first use: every field and state it is applied to in one operation shares
// that one buffer, as mlx-lm shares one index array.
type rowVec struct {
	g    *graph.Graph
	vals []int
	a    tensor.Array
}

func (r *rowVec) array() tensor.Array {
	if !r.a.Valid() {
		r.a = tensor.FromInt32(orDefault(r.g), int32s(r.vals), len(r.vals))
	}
	return r.a
}

// release drops the device copy once the operation that uses it is built.
func (r *rowVec) release() {
	tensor.Release(r.a)
	r.a = tensor.Array{}
}

// take gathers rows r.vals of a along axis 0 (invalid stays invalid).
func (r *rowVec) take(a tensor.Array) tensor.Array {
	if !a.Valid() {
		return a
	}
	return tensor.Take(a, r.array(), 0)
}
