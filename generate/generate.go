package generate

import (
	"fmt"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

// Greedy returns the argmax token of each row's last position: logits [B, S, V] -> int32 [B].
func Greedy(logits tensor.Array) tensor.Array {
	s := logits.Dim(1)
	last := tensor.Squeeze(tensor.SliceAxis(logits, 1, s-1, s), 1)
	return tensor.Argmax(last, -1, false)
}

// tokensArray makes an int32 [B, S] array.
func tokensArray(g *graph.Graph, rows [][]int32) tensor.Array {
	b, s := len(rows), len(rows[0])
	flat := make([]int32, 0, b*s)
	for _, r := range rows {
		flat = append(flat, r...)
	}
	return tensor.FromInt32(g, flat, b, s)
}

// PrefillStepSize is how many prompt tokens one prefill forward takes at most
// (mlx-lm's prefill_step_size): a longer prompt is prefilled in chunks, the caches
// evaluated after each, so a prefill's scratch memory is bounded by the chunk, not
// the prompt (PlainGenerator; the BatchGenerator prefills a prompt batch in one
// forward).
const PrefillStepSize = 2048

// PlainGenerator decodes one sequence greedily over fresh caches (mlx-lm generate_step
// with make_prompt_cache): the first Next prefills the prompt as generate_step does,
// every token but the last in chunks of at most PrefillStep tokens (only the caches
// are evaluated: no logits), then the last token as the first step; every Next
// returns one token while the device already computes the one after it.
type PlainGenerator struct {
	m       nn.Model
	g       *graph.Graph
	caches  []cache.Cache
	prompt  []int32
	y       tensor.Array // newest token, not yet returned
	started bool
	// PrefillStep is the prefill chunk (PrefillStepSize unless changed before the
	// first Next; <= 0 runs the whole prompt in the first step, logits and all).
	PrefillStep int
}

// NewPlain makes a plain generator; policy only matters if something arms the caches
// (nothing does on this path).
func NewPlain(m nn.Model, policy cache.Policy, prompt []int32) (*PlainGenerator, error) {
	if len(prompt) == 0 {
		return nil, fmt.Errorf("generate: empty prompt")
	}
	if err := checkTokens(prompt, m.VocabSize()); err != nil {
		return nil, fmt.Errorf("generate: %w", err)
	}
	return &PlainGenerator{m: m, g: m.Graph(), caches: m.MakeCache(policy), prompt: prompt, PrefillStep: PrefillStepSize}, nil
}

// Caches returns the sequence's caches.
func (p *PlainGenerator) Caches() []cache.Cache { return p.caches }

// step schedules the token after the input in builds (inside the step's scope, so
// the input array goes with the scope).
func (p *PlainGenerator) step(in func() tensor.Array) error {
	var y tensor.Array
	tensor.WithScope(p.g, func() {
		y = tensor.Keep(Greedy(p.m.Forward(in(), p.caches)))
	})
	p.y = y
	return tensor.AsyncEval(y)
}

// Next returns the next generated token.
func (p *PlainGenerator) Next() (int32, error) {
	if !p.started {
		p.started = true
		rest, err := p.prefillChunks()
		if err != nil {
			return 0, err
		}
		if err := p.step(func() tensor.Array { return tokensArray(p.g, [][]int32{rest}) }); err != nil {
			return 0, err
		}
	}
	prev := p.y
	if err := p.step(func() tensor.Array { return tensor.Reshape(prev, 1, 1) }); err != nil {
		return 0, err
	}
	v, err := prev.Int32s()
	tensor.Release(prev) // dead now: free it without a collection
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

// prefillChunks runs the prompt through the model as mlx-lm's generate_step does:
// while more than one token is left, a chunk of min(PrefillStep, left-1) tokens,
// evaluating only the caches (the chunk's logits are never computed) and clearing the
// buffer cache after each (the chunk's scratch fits no decode step). It returns the
// rest, the last token, which the first step runs.
func (p *PlainGenerator) prefillChunks() ([]int32, error) {
	rest := p.prompt
	for p.PrefillStep > 0 && len(rest) > 1 {
		chunk := rest[:min(p.PrefillStep, len(rest)-1)]
		tensor.WithScope(p.g, func() { p.m.Forward(tokensArray(p.g, [][]int32{chunk}), p.caches) })
		if err := cache.EvalState(p.caches); err != nil {
			return nil, err
		}
		if err := p.g.ClearCache(); err != nil {
			return nil, err
		}
		rest = rest[len(chunk):]
	}
	return rest, nil
}

// checkTokens rejects token ids outside the vocabulary.
func checkTokens(toks []int32, vocab int) error {
	for i, t := range toks {
		if t < 0 || int(t) >= vocab {
			return fmt.Errorf("prompt token %d is %d, outside the vocabulary [0, %d)", i, t, vocab)
		}
	}
	return nil
}
