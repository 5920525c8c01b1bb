package kernels

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestQmm16MatchesDot checks the blocked 16-lane product (rowsMM16) against
// qMatrix.dot, the definition, bit for bit: 4 and 8 bits, every group size and scale
// dtype, x row counts around the four-row block, odd and even weight row counts,
// group counts around the 16-group block, special values in x, with and without a
// helper and with tiles small enough that the rows split into many, odd-length tiles.
func TestQmm16MatchesDot(t *testing.T) {
	if !qAsm16() {
		t.Skip("no AVX-512: the blocked kernel does not run")
	}
	rng := rand.New(rand.NewSource(32))
	for _, bits := range []int{4, 8} {
		for _, group := range []int{32, 64, 128} {
			for _, dt := range []DType{Float32, Float16, BFloat16} {
				for _, mRows := range []int{2, 3, 4, 5, 8, 9} {
					n := 2 + rng.Intn(37)
					cols := group * (1 + rng.Intn(40))
					m := qsimdMatrix(rng, n, cols, bits, group, dt)
					require.True(t, m.useQmm16(mRows, n))
					xs := make([]float32, mRows*cols)
					for i := 0; i < mRows; i++ {
						copy(xs[i*cols:], simdRandRow(rng, cols, rng.Intn(3) == 0))
					}
					sums := make([]float32, mRows*m.groups)
					for i := 0; i < mRows; i++ {
						m.groupSums(xs[i*cols:(i+1)*cols], sums[i*m.groups:])
					}
					os := make([]float32, mRows*n)
					m.rowsMM16(xs, sums, mRows, n, os, nil)
					for i := 0; i < mRows; i++ {
						for r := 0; r < n; r++ {
							want := m.dot(xs[i*cols:(i+1)*cols], sums[i*m.groups:(i+1)*m.groups], r)
							got := os[i*n+r]
							require.Truef(t, sameBits(want, got), "bits %d group %d %s cols %d: x row %d of %d, row %d of %d: %v (%#x), want %v (%#x)",
								bits, group, dt, cols, i, mRows, r, n, got, math.Float32bits(got), want, math.Float32bits(want))
						}
					}
				}
			}
		}
	}
}

// TestQmm16WideMatchesDot runs a product large enough to take parallelWide (a second
// goroutine without a helper, and with one that a goroutine serves) and checks every
// value against the single-row kernel path (rows16, itself checked against dot).
func TestQmm16WideMatchesDot(t *testing.T) {
	if !qAsm16() {
		t.Skip("no AVX-512: the blocked kernel does not run")
	}
	rng := rand.New(rand.NewSource(5))
	const mRows, n, cols = 9, 1501, 2560
	require.GreaterOrEqual(t, mRows*n*cols, qmmWideMACs)
	m := qsimdMatrix(rng, n, cols, 4, 64, BFloat16)
	xs := make([]float32, mRows*cols)
	for i := range xs {
		xs[i] = float32(rng.NormFloat64())
	}
	sums := make([]float32, mRows*m.groups)
	for i := 0; i < mRows; i++ {
		m.groupSums(xs[i*cols:(i+1)*cols], sums[i*m.groups:])
	}
	want := make([]float32, mRows*n)
	q := new(qSIMD).init(&m)
	for i := 0; i < mRows; i++ {
		m.rows16(xs[i*cols:(i+1)*cols], sums[i*m.groups:], 0, want[i*n:(i+1)*n], q)
	}
	for _, served := range []bool{false, true} {
		var h *Helper
		stop := make(chan struct{})
		if served {
			h = new(Helper)
			go h.Serve(stop)
		}
		got := make([]float32, mRows*n)
		m.rowsMM16(xs, sums, mRows, n, got, h)
		close(stop)
		for i := range want {
			require.Truef(t, sameBits(want[i], got[i]), "served %v: x row %d, row %d: %v, want %v", served, i/n, i%n, got[i], want[i])
		}
	}
}
