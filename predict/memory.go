package predict

import (
	"errors"
	"fmt"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/nn"
)

// Memory is what a run will hold at its peak, in bytes: the estimate cmd/decode and
// the playground check before they build anything.
type Memory struct {
	Weights    int64 // the model's parameters
	Arrays     int   // how many buffer objects the weights are
	KV         int64 // the attention layers' KV storage at the last token
	Retired    int64 // retired KV blocks the allocator cache keeps (no clearing)
	Heap       int64 // Go heap beyond the buffers: graph nodes, tokens, one parameter being drawn
	Largest    int64 // the largest parameter
	KVPerToken int64 // KV bytes per token per batch row, all attention layers
}

// Total is the sum of the parts; EstimateMemory checks that it cannot overflow.
func (e Memory) Total() int64 { return e.Weights + e.KV + e.Retired + e.Heap }

// MemoryRun is the run an estimate is for.
type MemoryRun struct {
	// Rows is how many sequences decode at once (1; server mode: its concurrency).
	Rows int64
	// Length is the longest sequence: prompt and decoded tokens.
	Length int64
	// Tokens is every token the run decodes.
	Tokens int64
	// Lazy says the dead chain can grow (the stock bookkeeping on a path that arms it).
	Lazy bool
	// Limit is the resource limit, which ends the dead chain.
	Limit int
	// KeepRetired says the allocator cache is never cleared: retired KV blocks stay.
	KeepRetired bool
}

const (
	// hostPerLinkBound is Go heap per dead link, rounded up from the measured ~707 bytes.
	hostPerLinkBound = 1024
	// runtimeSlack covers the Go runtime, one step's graph and transient buffers.
	runtimeSlack = 64 << 20
)

// ErrTooLarge is wrapped by an estimate whose arithmetic overflows int64: such a
// model cannot fit any machine.
var ErrTooLarge = errors.New("the model's size overflows a 64-bit count")

// EstimateMemory adds up what a run r of the described model will hold: its parameters
// (as the description says they are stored), the KV storage (float32, grown by
// cache.KVStep) and the host memory, before anything is allocated. Every product and
// sum is checked: a config whose sizes overflow int64 is refused (ErrTooLarge), never
// wrapped to a small number that "fits".
func EstimateMemory(d *nn.Description, r MemoryRun) (Memory, error) {
	var e Memory
	var err error
	if e.Weights, e.Largest, err = d.WeightBytes(); err != nil {
		return e, fmt.Errorf("%w: %w", ErrTooLarge, err)
	}
	e.Arrays = d.WeightBuffers()
	nAttn := int64(nn.CountKinds(d.Kinds, nn.Attention))
	nGDN := int64(nn.CountKinds(d.Kinds, nn.Recurrent))
	const step = int64(cache.KVStep)
	f32 := int64(kernels.Float32.Size())
	blocks := (max(r.Length, 0) + step - 1) / step
	ok := r.Rows >= 0 && r.Tokens >= 0
	mul := func(a, b int64) int64 {
		n, good := nn.MulInt64(a, b)
		ok = ok && good
		return n
	}
	add := func(a, b int64) int64 {
		n, good := nn.AddInt64(a, b)
		ok = ok && good
		return n
	}
	links := int64(0)
	if r.Lazy {
		// The dead chain's nodes, while it can grow (the resource limit ends it).
		links = min(mul(r.Tokens, nGDN), int64(r.Limit))
	}
	e.KVPerToken = mul(mul(mul(nAttn, 2), int64(d.KVWidth)), f32)
	e.KV = mul(mul(mul(r.Rows, blocks), step), e.KVPerToken)
	if r.KeepRetired {
		// Each growth retires the previous storage: blocks of 1, 2, ... n-1 steps.
		e.Retired = mul(mul(mul(r.Rows, e.KVPerToken), step), mul(blocks, max(blocks-1, 0))/2)
	}
	e.Heap = add(add(add(mul(links, hostPerLinkBound), mul(r.Tokens, 4)), e.Largest), runtimeSlack)
	add(add(add(e.Weights, e.KV), e.Retired), e.Heap)
	if !ok {
		return e, ErrTooLarge
	}
	return e, nil
}

// ErrNoFit is wrapped by the error of an estimate above the memory limit.
var ErrNoFit = errors.New("exceeds this machine's memory limit")

// Fits returns nil when e is within limit (the allocator's memory limit: the same
// limit a malloc would be refused at), else an error saying what needs how much,
// ending with hint.
func (e Memory) Fits(limit int64, hint string) error {
	if e.Total() <= limit {
		return nil
	}
	return fmt.Errorf("the model needs ~%s (weights %s, KV cache %s, retired KV blocks %s, Go heap %s), which %w of %s; %s",
		GB(e.Total()), GB(e.Weights), GB(e.KV), GB(e.Retired), GB(e.Heap), ErrNoFit, GB(limit), hint)
}

// GB formats n bytes in gigabytes, as the estimate's messages print them.
func GB(n int64) string { return fmt.Sprintf("%.2f GB", float64(n)/1e9) }
