package golden

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

// CheckLogits runs every case of set through m and holds it to the reference within
// tol: the prefill logits, every decode step's logits (fed the reference token, with
// the cache) and the greedy tokens, for any model family.
func CheckLogits(t *testing.T, set Set, m nn.Model, tol float64) {
	v := m.VocabSize()
	for _, c := range set.Cases {
		t.Run(c.Name, func(t *testing.T) {
			ids := c.Tokens(t, set.Dir, "input_ids")
			toks := c.Tokens(t, set.Dir, "tokens")
			pre, _ := c.F32(t, set.Dir, "prefill_logits")
			dec, dshape := c.F32(t, set.Dir, "decode_logits")
			tl := len(ids)
			require.Equal(t, c.PromptLen, tl)
			require.Equal(t, c.NewTokens, dshape[0])
			require.Equal(t, ids, toks[:tl])

			caches := m.MakeCache(cache.Eager)
			got := Forward(t, m, [][]int32{ids}, caches)
			d := MaxDiff(t, got, pre)
			t.Logf("prefill [%d x %d]: max |diff| = %.3g", tl, v, d)
			require.LessOrEqual(t, d, tol)
			require.Equal(t, toks[tl], Argmax(Rows(got, v, tl-1, tl)), "first greedy token")

			worst := 0.0
			for i := 0; i < c.NewTokens; i++ {
				got := Forward(t, m, [][]int32{{toks[tl+i]}}, caches)
				d := MaxDiff(t, got, Rows(dec, v, i, i+1))
				worst = max(worst, d)
				require.LessOrEqual(t, d, tol, "decode step %d", i)
				if tl+i+1 < len(toks) {
					require.Equal(t, toks[tl+i+1], Argmax(got), "greedy token after step %d", i)
				}
			}
			t.Logf("%d decode steps: max |diff| = %.3g", c.NewTokens, worst)
		})
	}
}

// Forward feeds rows of equal length (a [B, S] batch) to m and returns the logits on
// the host.
func Forward(t testing.TB, m nn.Model, rows [][]int32, caches []cache.Cache) []float32 {
	t.Helper()
	s := len(rows[0])
	flat := make([]int32, 0, len(rows)*s)
	for _, r := range rows {
		require.Len(t, r, s)
		flat = append(flat, r...)
	}
	out, err := m.Forward(tensor.FromInt32(m.Graph(), flat, len(rows), s), caches).Float32s()
	require.NoError(t, err)
	return out
}

// CheckGreedy generates greedily from each case's prompt through m, feeding back the
// model's own argmax (computed on the device, the lazy cache policy), and requires the
// reference's tokens.
func CheckGreedy(t *testing.T, set Set, m nn.Model) {
	for _, c := range set.Cases {
		ids := c.Tokens(t, set.Dir, "input_ids")
		toks := c.Tokens(t, set.Dir, "tokens")
		caches := m.MakeCache(cache.Lazy)
		in := tensor.FromInt32(m.Graph(), ids, 1, len(ids))
		var gen []int32
		for len(gen) < len(toks)-len(ids) {
			logits := m.Forward(in, caches)
			last := tensor.SliceAxis(logits, 1, logits.Dim(1)-1, logits.Dim(1))
			next := tensor.Argmax(last, -1, false) // [1, 1] int32
			v, err := next.Int32s()
			require.NoError(t, err)
			gen = append(gen, v[0])
			in = next
		}
		require.Equal(t, toks[len(ids):], gen, c.Name)
	}
}
