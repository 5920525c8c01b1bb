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

// TestChunkedPrefill: a prompt longer than the prefill step is prefilled in chunks
// (mlx-lm's prefill_step_size) and generates the tokens a one-shot prefill does, for
// chunk sizes that divide the prompt and ones that leave a remainder, on a model with
// GDN and attention layers.
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
		// Forwards of step tokens while more than a step is left, then the rest.
		var want []int
		for left := 45; ; left -= step {
			if left <= step {
				want = append(want, left)
				break
			}
			want = append(want, step)
		}
		require.Equal(t, want, widths[:len(want)], "prefill step %d", step)
	}
}

// forwardSpy records the width of every forward.
type forwardSpy struct {
	nn.Model
	widths *[]int
}

func (s *forwardSpy) Forward(tokens tensor.Array, caches []cache.Cache) tensor.Array {
	*s.widths = append(*s.widths, tokens.Dim(1))
	return s.Model.Forward(tokens, caches)
}
