package kernels

import "sync/atomic"

// Helper passes side work from a kernel running on a device's worker goroutine to a
// second goroutine that would otherwise only wait for it: on the CPU device, the graph
// that submitted the work helps while it waits (graph's executor.wait), so a decode
// step uses the machine's second core and its memory bandwidth. The fused MoE block
// offers its shared expert while it computes the routed ones.
//
// An offered task is joined before its result is used: if no helper has taken it by
// then, the kernel runs it itself. Either way it runs once, with the same arithmetic,
// so results never depend on whether help came. One task is offered at a time.
type Helper struct{ slot atomic.Pointer[helpTask] }

type helpTask struct {
	fn    func()
	state atomic.Int32 // taskOffered, taskTaken, taskDone
}

const (
	taskOffered = iota
	taskTaken
	taskDone
)

// offer makes fn available to a helper and returns the join that runs fn itself if
// no helper took it, or waits for the helper to finish it. A nil Helper runs fn at
// the join.
func (h *Helper) offer(fn func()) (join func()) {
	if h == nil {
		return fn
	}
	t := &helpTask{fn: fn}
	h.slot.Store(t)
	return func() {
		if t.state.CompareAndSwap(taskOffered, taskTaken) {
			h.slot.CompareAndSwap(t, nil)
			fn()
			return
		}
		for t.state.Load() != taskDone {
			// The helper is running it: a few microseconds of memory-bound work.
		}
	}
}

// Help runs the task on offer, if any, and reports whether it ran one.
func (h *Helper) Help() bool {
	t := h.slot.Load()
	if t == nil || !t.state.CompareAndSwap(taskOffered, taskTaken) {
		return false
	}
	h.slot.CompareAndSwap(t, nil)
	t.fn()
	t.state.Store(taskDone)
	return true
}
