package walkthrough_test

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/nn/qwen35"
)

// churnRequests are short requests with prompts of 1 to 4 tokens.
func churnRequests(n, maxTokens int) []generate.Request {
	reqs := make([]generate.Request, n)
	for i := range reqs {
		p := make([]int32, 1+i%4)
		for j := range p {
			p[j] = int32(1 + (7*i+3*j)%120)
		}
		reqs[i] = generate.Request{ID: i, Prompt: p, MaxTokens: maxTokens}
	}
	return reqs
}

// sample is the state of a serving run when a request completes.
type sample struct {
	live    int // live buffers
	decodes int // decode steps so far
	joined  int // requests admitted so far
}

// serve runs reqs through one batch generator, at most two decoding at once, a new
// request joining every few steps, so the generation batch never drains until the end.
// It returns a sample per completed request and every request's tokens.
func serve(policy cache.Policy, reqs []generate.Request) ([]sample, map[int][]int32) {
	g, m := tinyModel()
	b := generate.NewBatchGenerator(m, policy, 2)
	var samples []sample
	out := make(map[int][]int32)
	next, done, decodes := 0, 0, 0
	for step := 0; done < len(reqs); step++ {
		if next < len(reqs) && step%3 == 0 && b.Active()+b.Pending() < 2 {
			if err := b.Insert(reqs[next]); err != nil {
				panic(err)
			}
			next++
		}
		toks, err := b.Next()
		if errors.Is(err, generate.ErrIdle) {
			continue
		}
		if err != nil {
			panic(err)
		}
		if len(toks) > 0 { // a decode step (admitting a request emits nothing)
			decodes++
		}
		for _, t := range toks {
			out[t.ID] = append(out[t.ID], t.Token)
			if t.Finished {
				done++
				samples = append(samples, sample{live(g), decodes, next})
			}
		}
	}
	runtime.KeepAlive(b)
	return samples, out
}

func lives(ss []sample) []int {
	out := make([]int, len(ss))
	for i, s := range ss {
		out[i] = s.live
	}
	return out
}

// alone decodes one request by itself on the plain path (generate_step).
func alone(m *qwen35.Model, r generate.Request) []int32 {
	p, err := generate.NewPlain(m, cache.Eager, r.Prompt)
	if err != nil {
		panic(err)
	}
	out := make([]int32, r.MaxTokens)
	for i := range out {
		if out[i], err = p.Next(); err != nil {
			panic(err)
		}
	}
	return out
}

// Example_churn is page 6: continuous batching. Twelve requests of 6 tokens each, two
// at a time, joining and leaving a batch that never drains until the last one ends.
func Example_churn() {
	reqs := churnRequests(12, 6)
	fmt.Println("live buffers after each completed request:")
	lazy, lazyToks := serve(cache.Lazy, reqs)
	fmt.Println("  lazy: ", lives(lazy))
	eager, eagerToks := serve(cache.Eager, reqs)
	fmt.Println("  eager:", lives(eager))

	// From the first completion to the last one before the batch drained: how much of
	// the lazy growth the per-token leak explains, and what the joins and leaves added.
	first, last := lazy[0], lazy[len(lazy)-2]
	grew, steps := last.live-first.live, last.decodes-first.decodes
	perStep := tinyGDN - 1
	fmt.Printf("lazy, completions 1 to %d: %+d live over %d decode steps (%d x %d = %d);\n",
		len(lazy)-1, grew, steps, steps, perStep, steps*perStep)
	fmt.Printf("  the other %d came with %d joins and %d leaves\n",
		grew-steps*perStep, last.joined-first.joined, len(lazy)-2)

	fmt.Println("same tokens under both policies:", maps.EqualFunc(lazyToks, eagerToks, slices.Equal))
	_, m := tinyModel()
	same := true
	for _, r := range reqs {
		same = same && slices.Equal(eagerToks[r.ID], alone(m, r))
	}
	fmt.Println("each request's tokens as when run alone:", same)
	// Output:
	// live buffers after each completed request:
	//   lazy:  [177 192 216 231 255 270 294 309 333 348 372 114]
	//   eager: [134 134 134 134 134 134 134 134 134 134 134 114]
	// lazy, completions 1 to 11: +195 live over 35 decode steps (35 x 3 = 105);
	//   the other 90 came with 10 joins and 10 leaves
	// same tokens under both policies: true
	// each request's tokens as when run alone: true
}
