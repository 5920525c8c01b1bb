package cache

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// Policy decides how a batch's per-row metadata are kept (see the package doc).
type Policy int

const (
	// Lazy keeps the metadata as int32 device arrays updated by lazy ops, as mlx-lm
	// 0.31.3 does: the unread ones grow dead chains (the leak).
	Lazy Policy = iota
	// Eager keeps the metadata as host ints and makes device arrays only for the step
	// that reads them (the fix).
	Eager
)

// String returns "lazy" or "eager" (or "Policy(n)" for an unknown value).
func (p Policy) String() string {
	switch p {
	case Lazy:
		return "lazy"
	case Eager:
		return "eager"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
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
	return 0, fmt.Errorf("cache: %w %q (want lazy or eager)", ErrUnknownPolicy, s)
}

func (p Policy) check(op string) {
	if p != Lazy && p != Eager {
		usagePanic(op, "unknown policy %v", p)
	}
}

// ErrIncompatible is wrapped by every error of Merge: caches that cannot be combined.
var ErrIncompatible = errors.New("incompatible caches")

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
		if r < 0 || r >= n {
			usagePanic(op, "row %d out of range for a batch of %d", r, n)
		}
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

// rowIndex makes the int32 index array of rows (one live buffer, now), on first use.
type rowIndex struct {
	g    *graph.Graph
	rows []int
	a    tensor.Array
}

func (r *rowIndex) array() tensor.Array {
	if !r.a.Valid() {
		r.a = tensor.FromInt32(orDefault(r.g), int32s(r.rows), len(r.rows))
	}
	return r.a
}

// take gathers rows of a along axis 0 (invalid stays invalid).
func (r *rowIndex) take(a tensor.Array) tensor.Array {
	if !a.Valid() {
		return a
	}
	return tensor.Take(a, r.array(), 0)
}
