package kernels_test

import (
	"fmt"
	"math"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// tkRef is the reference top-k: a stable sort of the row's indices by descending value
// (stable, so equal values keep ascending index order), NaNs last.
func tkRef(row []float32, k int) []int32 {
	ids := make([]int32, len(row))
	for i := range ids {
		ids[i] = int32(i)
	}
	sort.SliceStable(ids, func(a, b int) bool {
		va, vb := row[ids[a]], row[ids[b]]
		if math.IsNaN(float64(va)) {
			return false
		}
		return math.IsNaN(float64(vb)) || va > vb
	})
	return ids[:k]
}

func tkLaunch(rows, n, k int, vals []float32) *kernels.Launch {
	l := &kernels.Launch{Kernel: kernels.KArgTopK, NArgs: 2, Params: &kernels.TopKParams{Rows: rows, N: n, K: k}}
	l.Args[0] = kernels.NewArg(kernels.Contiguous(kernels.Float32, rows, n))
	l.Args[1] = kernels.NewArg(kernels.Contiguous(kernels.Int32, rows, k))
	copy(kernels.F32(l.Args[0].Data), vals)
	kernels.Poison(&l.Args[1])
	return l
}

func tkCheck(t *testing.T, what string, l *kernels.Launch) {
	t.Helper()
	p := l.Params.(*kernels.TopKParams)
	a := &l.Args[0]
	var want []int32
	for r := 0; r < p.Rows; r++ {
		want = append(want, tkRef(kernels.F32(a.Data)[a.Offset+r*p.N:a.Offset+(r+1)*p.N], p.K)...)
	}
	kernels.Run(l)
	o := l.Out()
	require.Equal(t, want, kernels.I32(o.Data)[o.Offset:o.Offset+p.Rows*p.K], what)
}

func TestTopKSamplesMatchReference(t *testing.T) {
	ties := 0
	for i, l := range mmSamples(t, "topk", 13) {
		p := l.Params.(*kernels.TopKParams)
		a := &l.Args[0]
		seen := map[float32]bool{}
		for _, v := range kernels.F32(a.Data)[a.Offset : a.Offset+p.Rows*p.N] {
			if seen[v] {
				ties++
			}
			seen[v] = true
		}
		tkCheck(t, fmt.Sprintf("sample %d %+v", i, *p), l)
	}
	require.Positive(t, ties, "samples contain tied values")
}

func TestTopKTiesAndNaN(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	cases := []struct {
		name string
		row  []float32
		k    int
		want []int32
	}{
		{"all equal", []float32{2, 2, 2, 2, 2}, 3, []int32{0, 1, 2}},
		{"ties keep index order", []float32{1, 3, 3, 0, 3, 1}, 4, []int32{1, 2, 4, 0}},
		{"router k=2 of 8", []float32{.1, .4, .05, .2, .4, .1, .3, .01}, 2, []int32{1, 4}},
		{"NaN ranks last", []float32{nan, -inf, 0, nan, 5}, 4, []int32{4, 2, 1, 0}},
		{"zero signs tie", []float32{float32(math.Copysign(0, -1)), 0, -1}, 2, []int32{0, 1}},
		{"infinities", []float32{-inf, inf, 1, inf}, 3, []int32{1, 3, 2}},
		{"k equals n", []float32{3, 1, 2}, 3, []int32{0, 2, 1}},
	}
	for _, c := range cases {
		l := tkLaunch(1, len(c.row), c.k, c.row)
		kernels.Run(l)
		require.Equal(t, c.want, kernels.I32(l.Out().Data)[:c.k], c.name)
		require.Equal(t, c.want, tkRef(c.row, c.k), "reference agrees: "+c.name)
	}
}

func TestTopKLargeRows(t *testing.T) {
	// The limits: rows of 1024 with k = 64, values from a descending-then-rising pattern
	// so the insertion path shifts through the whole list.
	const rows, n, k = 3, 1024, 64
	vals := make([]float32, rows*n)
	for i := range vals {
		vals[i] = float32((i*7919)%1000) / 10
	}
	tkCheck(t, "1024/64", tkLaunch(rows, n, k, vals))
}

func TestTopKMSLMatchesGoTwin(t *testing.T) { mmCheckMSLFamily(t, "topk") }

func BenchmarkArgTopK(b *testing.B) {
	vals := []float32{.1, .4, .05, .2, .45, .1, .3, .01}
	l := tkLaunch(1, 8, 2, vals)
	b.Run("router_k2_of_8", func(b *testing.B) {
		for b.Loop() {
			kernels.Run(l)
		}
	})
}
