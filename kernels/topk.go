package kernels

import (
	"math"
	"math/rand"
)

// The topk family: indices of the k largest values of each row.

// TopKMax is the largest k the topk kernels accept (the MSL twin keeps the k best of a
// row in thread-private arrays of this size).
const TopKMax = 64

// TopKParams is the parameter struct of KArgTopK: Rows rows of N values, K results each.
type TopKParams struct {
	Rows int `msl:"rows"`
	N    int `msl:"n"`
	K    int `msl:"k"`
}

// KArgTopK writes, for each row of a float32 input [Rows, N] (dense from its offset),
// the int32 indices of its K largest values in descending order: out [Rows, K]. Ties go
// to the lower index; NaN ranks below every number (NaNs tie with each other), so a
// row with NaNs still yields K distinct indices. 1 <= K <= min(N, TopKMax).
var KArgTopK = Register(&Kernel{Name: "argtopk", Family: "topk", CPU: argTopKCPU, Encode: argTopKEncode})

// topkBefore reports whether value a at index ia ranks before value b at index ib.
func topkBefore(a float32, ia int32, b float32, ib int32) bool {
	na, nb := a != a, b != b
	if na || nb {
		return nb && (!na || ia < ib)
	}
	return a > b || (a == b && ia < ib)
}

func argTopKCPU(l *Launch) {
	p := l.Params.(*TopKParams)
	a, o := &l.Args[0], &l.Args[1]
	mmCheckDense("argtopk", a)
	if a.DType != Float32 || o.DType != Int32 {
		panic("kernels: argtopk: want float32 values and int32 indices, got " + a.DType.String() + " and " + o.DType.String())
	}
	if p.K < 1 || p.K > min(p.N, TopKMax) {
		panic("kernels: argtopk: k out of range")
	}
	var vals [TopKMax]float32
	var ids [TopKMax]int32
	av, ov := F32(a.Data), I32(o.Data)
	for r := 0; r < p.Rows; r++ {
		row := av[a.Offset+r*p.N : a.Offset+(r+1)*p.N]
		cnt := topkRow(row, p.K, &vals, &ids)
		copy(ov[o.Offset+r*p.K:o.Offset+(r+1)*p.K], ids[:cnt])
	}
}

// topkRow keeps the k best of row, best first, by insertion into a sorted list; O(N*k)
// at worst, which for k <= 64 and rows of a few thousand is cheap and matches the MSL.
func topkRow(row []float32, k int, vals *[TopKMax]float32, ids *[TopKMax]int32) int {
	cnt := 0
	for i, v := range row {
		id := int32(i)
		if cnt == k && !topkBefore(v, id, vals[cnt-1], ids[cnt-1]) {
			continue
		}
		pos := cnt
		if cnt < k {
			cnt++
		} else {
			pos = k - 1
		}
		for pos > 0 && topkBefore(v, id, vals[pos-1], ids[pos-1]) {
			vals[pos], ids[pos] = vals[pos-1], ids[pos-1]
			pos--
		}
		vals[pos], ids[pos] = v, id
	}
	return cnt
}

func argTopKEncode(l *Launch, e Encoder) {
	p := l.Params.(*TopKParams)
	e.Entry("argtopk_float32")
	e.SetArg(0, &l.Args[0])
	e.SetArg(1, &l.Args[1])
	e.SetBytes(2, mslPack(p))
	// One thread per row.
	e.DispatchThreads(Groups1DFor(p.Rows, e))
}

func init() { RegisterSamples("topk", topkSamples) }

// topkSamples covers the MoE router shape (k=2 of 8), k=1, k=N, the size limits, and
// rows drawn from a few values so that ties are common. No NaNs: Metal compiles with
// fast math, where NaN comparisons are not guaranteed.
func topkSamples(rng *rand.Rand) []*Launch {
	var out []*Launch
	for _, c := range []struct {
		rows, n, k int
		ties       bool
		off        int
	}{
		{1, 8, 2, false, 0}, {7, 8, 2, true, 3}, {3, 5, 5, true, 0}, {4, 33, 1, false, 1},
		{2, 1024, 64, false, 0}, {3, 100, 10, true, 0},
	} {
		l := &Launch{Kernel: KArgTopK, Params: &TopKParams{Rows: c.rows, N: c.n, K: c.k}, NArgs: 2}
		al := Contiguous(Float32, c.rows, c.n)
		al.Offset = c.off
		l.Args[0] = NewArg(al)
		l.Args[1] = NewArg(Contiguous(Int32, c.rows, c.k))
		Fill(rng, &l.Args[0], -3, 3)
		if c.ties {
			v := F32(l.Args[0].Data)
			for i := range v {
				v[i] = float32(math.Round(float64(v[i])))
			}
		}
		Poison(&l.Args[1])
		out = append(out, l)
	}
	return out
}
