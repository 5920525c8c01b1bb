package metal

import (
	"sync"

	"github.com/ingotml/ingot/kernels"
)

// submitOn is GPU.Submit over r, whose lock mu the caller holds: the batch is
// submitted now, in pool (the darwin autorelease pool on a locked thread, or a plain
// call), and wait finishes it later under mu, in pool too. A batch that broke down
// while encoding (a panic) is reported by wait and counts as done.
func submitOn(r *runner, mu *sync.Mutex, batch []kernels.Launch, pool func(func())) (<-chan struct{}, func() error) {
	var (
		p   *inflight
		err error
	)
	pool(func() { p, err = r.submitBatch(batch) })
	if err != nil {
		return closedChan(), func() error { return err }
	}
	done := r.b.completed(p.upTo)
	var once sync.Once
	var werr error
	return done, func() error {
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			pool(func() { werr = r.finishBatch(p) })
		})
		return werr
	}
}

// closedChan is a channel that is already closed.
func closedChan() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}
