package generate_test

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

// TestChunkedPrefill: a prompt is prefilled as mlx-lm's generate_step does, every token
// but the last in chunks of at most the prefill step (prefill_step_size), then the
// last token, and generates the tokens a one-shot prefill does, for chunk sizes that
// divide the prompt and ones that leave a remainder, on a model with GDN and attention
// layers.
func TestChunkedPrefill(t *testing.T) {
	_, m := tinyModel(t, 6)
	rng := rand.New(rand.NewSource(7))
	prompt := make([]int32, 45)
	for i := range prompt {
		prompt[i] = int32(rng.Intn(m.VocabSize()))
	}
	var widths []int
	spy := &forwardSpy{Model: m, widths: &widths}
	run := func(step int) []int32 {
		widths = nil
		p, err := generate.NewPlain(spy, cache.Eager, prompt)
		require.NoError(t, err)
		require.Equal(t, generate.PrefillStepSize, p.PrefillStep)
		p.PrefillStep = step
		out := make([]int32, 12)
		for i := range out {
			out[i], err = p.Next()
			require.NoError(t, err)
		}
		return out
	}
	whole := run(0)
	require.Equal(t, 45, widths[0])
	for _, step := range []int{1, 8, 15, 16, 44, 45, 2048} {
		require.Equal(t, whole, run(step), "prefill step %d", step)
		// As mlx-lm's generate_step: forwards of min(step, left-1) tokens while more
		// than one is left, then the last token alone.
		var want []int
		for left := 45; left > 1; {
			n := min(step, left-1)
			want = append(want, n)
			left -= n
		}
		want = append(want, 1)
		require.Equal(t, want, widths[:len(want)], "prefill step %d", step)
	}
}

// TestChunkedPrefillClearsCache: after each prefill chunk the buffer cache is emptied,
// as mlx-lm's loop does (mx.clear_cache()), so every later forward starts with nothing
// cached; a decode step's forward finds what the step before it freed.
func TestChunkedPrefillClearsCache(t *testing.T) {
	_, m := tinyModel(t, 6)
	prompt := make([]int32, 45)
	for i := range prompt {
		prompt[i] = int32(1 + i)
	}
	var widths, cached []int
	spy := &forwardSpy{Model: m, widths: &widths, cached: &cached}
	p, err := generate.NewPlain(spy, cache.Eager, prompt)
	require.NoError(t, err)
	p.PrefillStep = 16
	for range 3 {
		_, err := p.Next()
		require.NoError(t, err)
	}
	require.Equal(t, []int{16, 16, 12, 1, 1, 1}, widths[:6])
	require.Equal(t, []int{0, 0, 0, 0}, cached[:4], "cached buffers as each prompt forward starts")
	require.Positive(t, cached[5], "cached buffers as the second decode step's forward starts")
}

// forwardSpy records the width of every forward.
type forwardSpy struct {
	nn.Model
	widths *[]int
	cached *[]int // the allocator's cached buffers as each forward starts, if set
}

func (s *forwardSpy) Forward(tokens tensor.Array, caches []cache.Cache) tensor.Array {
	*s.widths = append(*s.widths, tokens.Dim(1))
	if s.cached != nil {
		*s.cached = append(*s.cached, s.Graph().Allocator().CacheBufferCount())
	}
	return s.Model.Forward(tokens, caches)
}

// TestBatchChunkedPrefill: a prompt batch of one length longer than the prefill step is
// prefilled as mlx-lm's generator does (every position but the last in chunks, then
// the last), and generates the tokens one forward does; a batch of unequal lengths, and
// one that fits a chunk, still take one forward.
func TestBatchChunkedPrefill(t *testing.T) {
	_, m := tinyModel(t, 6)
	rng := rand.New(rand.NewSource(9))
	prompt := func(n int) []int32 {
		p := make([]int32, n)
		for i := range p {
			p[i] = int32(rng.Intn(m.VocabSize()))
		}
		return p
	}
	a, b, c := prompt(45), prompt(45), prompt(30)
	var widths []int
	spy := &forwardSpy{Model: m, widths: &widths}
	run := func(step int, prompts ...[]int32) map[int][]int32 {
		widths = nil
		g := generate.NewBatchGenerator(spy, cache.Eager, 0)
		require.Equal(t, generate.PrefillStepSize, g.PrefillStep)
		g.PrefillStep = step
		for i, p := range prompts {
			require.NoError(t, g.Insert(generate.Request{ID: i, Prompt: p, MaxTokens: 6}))
		}
		return drain(t, g, nil)
	}
	whole := run(0, a, b)
	require.Equal(t, 45, widths[0])
	chunked := run(16, a, b)
	require.Equal(t, []int{16, 16, 12, 1, 1}, widths[:5])
	require.Equal(t, whole, chunked)

	run(16, a, c) // unequal lengths: one right-padded forward
	require.Equal(t, 45, widths[0])
	run(64, a) // fits one chunk
	require.Equal(t, 45, widths[0])
}
