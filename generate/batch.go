package generate

import (
	"errors"
	"fmt"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

// Request is one completion to generate.
type Request struct {
	ID        int
	Prompt    []int32
	MaxTokens int // tokens to generate (>= 1)
}

// Token is one generated token of a request.
type Token struct {
	ID       int   // the request
	Index    int   // 0 for the first generated token
	Token    int32 // the token id
	Finished bool  // the request's last token
}

// row is one active request of the generation batch.
type row struct {
	req  Request
	done int // tokens emitted
}

// BatchGenerator is mlx-lm's BatchGenerator: continuous batching over merged caches.
type BatchGenerator struct {
	m        nn.Model
	g        *graph.Graph
	policy   cache.Policy
	maxBatch int

	queue  []Request
	caches []cache.Cache // the generation batch's caches, one per layer
	rows   []row
	y      tensor.Array // int32 [B]: each row's newest token, not yet emitted, fed to the next step
	failed bool         // the last decode step failed: Next drops the batch first
	// settle counts the decode steps until a prompt's scratch is all released (see
	// clearPromptScratch): 2 after an admit, 0 when nothing is pending.
	settle int
	// PrefillStep is the prefill chunk for a prompt batch longer than it whose prompts
	// are all one length (PrefillStepSize unless changed; see prefillLong).
	PrefillStep int
	stats       BatchStats
}

// BatchStats counts a generator's decode steps and the rows they computed: their
// ratio is how many requests a step's products served on average (a continuous
// batch that requests join and leave runs below its concurrency at the edges).
type BatchStats struct {
	DecodeSteps int // forwards of one position per row (admits' prefills not counted)
	DecodeRows  int // their rows, summed
}

// RowsPerStep is the decode steps' mean batch (0 before any step).
func (s BatchStats) RowsPerStep() float64 {
	if s.DecodeSteps == 0 {
		return 0
	}
	return float64(s.DecodeRows) / float64(s.DecodeSteps)
}

// Stats returns the decode steps run so far.
func (b *BatchGenerator) Stats() BatchStats { return b.stats }

// NewBatchGenerator makes a generator whose generation batch holds up to maxBatch rows
// (<= 0: unbounded).
func NewBatchGenerator(m nn.Model, policy cache.Policy, maxBatch int) *BatchGenerator {
	return &BatchGenerator{m: m, g: m.Graph(), policy: policy, maxBatch: maxBatch, PrefillStep: PrefillStepSize}
}

// Insert queues requests; they join the generation batch at the next step.
func (b *BatchGenerator) Insert(reqs ...Request) error {
	vocab := b.m.VocabSize()
	for _, r := range reqs {
		if len(r.Prompt) == 0 || r.MaxTokens < 1 {
			return fmt.Errorf("generate: request %d: need a prompt and MaxTokens >= 1", r.ID)
		}
		if err := checkTokens(r.Prompt, vocab); err != nil {
			return fmt.Errorf("generate: request %d: %w", r.ID, err)
		}
	}
	b.queue = append(b.queue, reqs...)
	return nil
}

// Active is the number of rows in the generation batch.
func (b *BatchGenerator) Active() int { return len(b.rows) }

// Pending is the number of queued requests.
func (b *BatchGenerator) Pending() int { return len(b.queue) }

// Caches returns the generation batch's caches (for eval-cache-every and probes).
func (b *BatchGenerator) Caches() []cache.Cache { return b.caches }

// ErrIdle is returned by Next when there is nothing to do.
var ErrIdle = errors.New("generate: no requests")

// StepError reports a step that failed (an allocator or device error). The requests it
// names are dropped: a failed prefill drops the requests it admitted, a failed decode
// drops every row of the generation batch, whose caches now hold a step that did not
// complete. The generator goes on with the queued and later requests; the failed batch
// stays in place, for probes of the state at the failure, until the next call to Next.
type StepError struct {
	IDs []int // the dropped requests
	Err error
}

// Error is the cause's message, unchanged (callers print it as the step's error; the
// dropped requests are in IDs).
func (e *StepError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *StepError) Unwrap() error { return e.Err }

// Next runs one step: admits queued requests (prefill) if there is room, otherwise
// decodes one token for every active row. It returns the tokens it emitted: a decode
// step emits the tokens computed by the step before it. A failed step returns a
// *StepError (see there).
func (b *BatchGenerator) Next() ([]Token, error) {
	if b.failed {
		b.rows, b.caches, b.y, b.failed = nil, nil, tensor.Array{}, false
	}
	if len(b.queue) > 0 && (b.maxBatch <= 0 || len(b.rows) < b.maxBatch) {
		return b.admit()
	}
	if len(b.rows) == 0 {
		return nil, ErrIdle
	}
	toks, err := b.decode()
	if err != nil {
		ids := make([]int, len(b.rows))
		for i, r := range b.rows {
			ids[i] = r.req.ID
		}
		b.failed = true
		return nil, &StepError{IDs: ids, Err: err}
	}
	return toks, nil
}

// prefillLong prefills a prompt batch of one length longer than PrefillStep as mlx-lm's
// generator does (_process_prompts): every position but the last in chunks of at most
// PrefillStep, evaluating only the caches (no chunk computes logits) and clearing the
// buffer cache after each. It returns how many positions it ran; the admit's forward
// runs the rest (the last position). A batch that fits one chunk takes the admit's one
// forward, as before (the repro's counts rest on it), and so does a batch of unequal
// lengths (right-padded, its rows end at different positions).
func (b *BatchGenerator) prefillLong(padded [][]int32, caches []cache.Cache) (int, error) {
	total := len(padded[0])
	if b.PrefillStep <= 0 || total <= b.PrefillStep {
		return 0, nil
	}
	pos := 0
	for total-pos > 1 {
		n := min(b.PrefillStep, total-pos-1)
		chunk := make([][]int32, len(padded))
		for i, p := range padded {
			chunk[i] = p[pos : pos+n]
		}
		tensor.WithScope(b.g, func() { b.m.Forward(tokensArray(b.g, chunk), caches) })
		if err := cache.EvalState(caches); err != nil {
			return 0, err
		}
		if err := b.g.ClearCache(); err != nil {
			return 0, err
		}
		pos += n
	}
	return pos, nil
}

// admitFailed drops the requests of a failed prefill.
func admitFailed(reqs []Request, err error) error {
	ids := make([]int, len(reqs))
	for i, r := range reqs {
		ids[i] = r.ID
	}
	return &StepError{IDs: ids, Err: err}
}

// admit prefills queued requests as one prompt batch and extends them into the
// generation batch. Their first tokens are scheduled here and emitted by the next step.
func (b *BatchGenerator) admit() ([]Token, error) {
	n := len(b.queue)
	if b.maxBatch > 0 {
		n = min(n, b.maxBatch-len(b.rows))
	}
	reqs := append([]Request(nil), b.queue[:n]...)
	b.queue = b.queue[n:]

	fresh := make([][]cache.Cache, n)
	for i := range reqs {
		fresh[i] = b.m.MakeCache(b.policy)
	}
	var merged []cache.Cache
	var err error
	tensor.WithScope(b.g, func() { merged, err = cache.Merge(b.policy, fresh) }) // all empty: arms left_padding
	if err != nil {
		return nil, admitFailed(reqs, err)
	}
	lengths := make([]int, n)
	maxLen := 0
	for i, r := range reqs {
		lengths[i] = len(r.Prompt)
		maxLen = max(maxLen, len(r.Prompt))
	}
	padded := make([][]int32, n)
	ragged := false
	for i, r := range reqs {
		padded[i] = make([]int32, maxLen) // right padding with token 0
		copy(padded[i], r.Prompt)
		ragged = ragged || len(r.Prompt) != maxLen
	}
	pos := 0
	if !ragged {
		if pos, err = b.prefillLong(padded, merged); err != nil {
			return nil, admitFailed(reqs, err)
		}
		for i := range padded {
			padded[i] = padded[i][pos:]
			lengths[i] -= pos
		}
	}
	var y tensor.Array
	tensor.WithScope(b.g, func() {
		if ragged {
			for _, c := range merged {
				c.Prepare(lengths)
			}
		}
		logits := b.m.Forward(tokensArray(b.g, padded), merged)
		if ragged {
			for _, c := range merged {
				c.Finalize()
			}
		}
		// Each row's first token comes from its last real position.
		last := make([]int32, n)
		for i, l := range lengths {
			last[i] = int32(l - 1)
		}
		idx := tensor.Reshape(tensor.FromInt32(b.g, last, n), n, 1, 1)
		at := tensor.TakeAlongAxis(logits, idx, 1) // [n, 1, V]
		y = tensor.Keep(Greedy(at))
	})
	if err := tensor.AsyncEval(y); err != nil {
		return nil, admitFailed(reqs, err)
	}
	if err := b.clearPromptScratch(); err != nil {
		return nil, admitFailed(reqs, err)
	}
	b.settle = 2
	// The cache surgery in a scope, as a step is: what it builds and drops goes with it.
	tensor.WithScope(b.g, func() {
		if b.caches == nil {
			b.caches = merged
			// The prompt batch becomes the generation batch (mlx-lm filters it in).
			all := make([]int, n)
			for i := range all {
				all[i] = i
			}
			for _, c := range b.caches {
				c.Filter(all)
			}
			b.y = y
			return
		}
		for l, c := range b.caches {
			c.Extend(merged[l])
			merged[l].Release() // its rows are in the batch now: drop it without a collection
		}
		tensor.Assign(&b.y, tensor.Concatenate(0, b.y, y))
		tensor.Release(y)
	})
	for _, r := range reqs {
		b.rows = append(b.rows, row{req: r})
	}
	// Their first tokens are emitted by the next decode step, which reads them while
	// the device computes the second (the pipelining of mlx-lm's generator).
	return nil, nil
}

// clearPromptScratch empties the allocator's buffer cache once a prompt is through,
// as mlx-lm's generator does after its prefill (mx.clear_cache()): the prompt's
// buffers are sized for the whole prompt and most fit no decode step, so the cache
// would hold them (about 100 MB at Qwen3.5-0.8B's size) for the rest of the batch.
// It runs twice per admit, each time once the work in flight is done (Graph.ClearCache
// waits for it), so what it drops is the same in every run: after the prompt forward,
// and before the second decode step is scheduled, once the first has replaced the
// prompt's recurrent states (whose buffers also hold the prompt's outputs). Live
// counts are unchanged; the cached count drops as a clear_cache's does.
func (b *BatchGenerator) clearPromptScratch() error { return b.g.ClearCache() }

// decode runs one generation step for every row.
func (b *BatchGenerator) decode() ([]Token, error) {
	prev := b.y
	if b.settle > 0 {
		if b.settle--; b.settle == 0 {
			if err := b.clearPromptScratch(); err != nil {
				return nil, err
			}
		}
	}
	var next tensor.Array
	bsz := len(b.rows)
	tensor.WithScope(b.g, func() {
		next = tensor.Keep(Greedy(b.m.Forward(tensor.Reshape(prev, bsz, 1), b.caches)))
	})
	// Schedule the next token before reading this one: the device computes it while
	// the caller consumes prev.
	if err := tensor.AsyncEval(next); err != nil {
		return nil, err
	}
	b.y = next
	b.stats.DecodeSteps++
	b.stats.DecodeRows += bsz
	toks, err := b.emit(prev)
	// prev is dead now: release it at once, as Python's refcount would, so its buffer
	// returns without waiting for a garbage collection (nothing dies unnoticed per step).
	tensor.Release(prev)
	return toks, err
}

// emit reads y (one token per row, in row order), records the tokens, and retires
// finished rows from the batch.
func (b *BatchGenerator) emit(y tensor.Array) ([]Token, error) {
	v, err := y.Int32s()
	if err != nil {
		return nil, err
	}
	out := make([]Token, 0, len(v))
	keep := make([]int, 0, len(b.rows))
	for i := range b.rows {
		r := &b.rows[i]
		t := Token{ID: r.req.ID, Index: r.done, Token: v[i]}
		r.done++
		t.Finished = r.done >= r.req.MaxTokens
		out = append(out, t)
		if r.done < r.req.MaxTokens {
			keep = append(keep, i)
		}
	}
	if len(keep) < len(b.rows) {
		b.retire(keep)
	}
	return out, nil
}

// retire keeps only the given rows: finished rows are filtered out of every cache and
// of the pending next-token array. An empty batch drops its caches (the chains die).
func (b *BatchGenerator) retire(keep []int) {
	rows := make([]row, len(keep))
	for i, k := range keep {
		rows[i] = b.rows[k]
	}
	b.rows = rows
	if len(keep) == 0 {
		for _, c := range b.caches {
			c.Release()
		}
		tensor.Release(b.y)
		b.caches, b.y = nil, tensor.Array{}
		return
	}
	k32 := make([]int32, len(keep))
	for i, k := range keep {
		k32[i] = int32(k)
	}
	// In a scope, as a step is: the gathers' index arrays go with it.
	tensor.WithScope(b.g, func() {
		for _, c := range b.caches {
			c.Filter(keep)
		}
		tensor.Assign(&b.y, tensor.Take(b.y, tensor.FromInt32(b.g, k32, len(k32)), 0))
	})
}
