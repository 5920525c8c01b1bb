// Package graph is ingot's lazy-array engine, with MLX's semantics.
//
// A Node is an array: a layout plus either a buffer or a recipe (a kernel, its
// parameters and input edges). Host data and scalars allocate their buffer at once, on
// the caller's goroutine; ops allocate nothing until Eval, which schedules the pending
// ancestors of its outputs (each gets a buffer, or donates an input's), queues their
// kernel launches for the device's worker, and detaches them: an evaluated node keeps
// only its buffer. A chain nobody evaluates stays alive as long as something holds it,
// and every link pins its buffers. That is the leak this project demonstrates.
//
// Liveness is one mechanism in one place. Input edges are counted exactly; handles held
// by the program are tracked by Go's garbage collector through weak pointers, and a
// handle found unreachable drops its reference. Synchronize forces a collection and a
// sweep, so allocator counts read right after it are exact and deterministic; the
// allocator does the same before it fails on the resource limit, so the error fires
// only when truly live buffers reach it. In between, sweeps run after natural
// collections. A Go variable holds its array until its last use (Go's liveness is
// precise): use runtime.KeepAlive to pin one past that point.
//
// That collection must stay cheap however long a dead chain grows, so nodes hold no Go
// pointers: they live in fixed chunks and refer to their inputs, buffer record, kernel,
// params and error by index, and the collector marks a chunk without scanning it. What
// remains per live buffer is its allocator record and its memory (one pointer-free
// object on the CPU). Scope-held handles come from chunks too: a node costs no Go
// allocation of its own.
//
// Two cheaper forms of the same rule: a scope (BeginScope/EndScope) holds the arrays
// built while it is open and drops them at its end, as a Python function's locals die
// at return, with no weak pointer per array (Keep exempts one); Release drops a
// handle's reference at once, as a Python reassignment does. A program that releases
// every handle it drops sets Options.ExplicitRelease, and Synchronize and the reclaimer
// then force no collection at all: the counts are exact without one, and a lazy run's
// dead chain (one allocator record and one buffer per link, which a collection must
// still mark) is never traced on purpose. A buffer whose last owner
// goes while a launch in flight still binds it is freed when that launch's batch
// completes; the worker goroutine never touches graph state.
//
// Errors: allocator failures while building (a scalar) are recorded on the node and on
// the graph and returned by the next Eval, AsyncEval or Synchronize; failures during
// eval mark the node failed and are returned by that Eval. A device batch that fails
// (a Run error, a kernel's panic or *kernels.LaunchError on the CPU) may have left any
// of its outputs unwritten, so the unit of failure is the batch: every array it
// computes carries the error, batches already queued behind it are skipped and fail
// the same way, and an array built later from a failed one fails when scheduled. No
// array is ever read from a buffer its batch did not write; later, independent work
// runs normally. Misuse of the API (mixing graphs, bad layouts) panics with a
// *GraphError: a programming error, not user input; a nil handle given to Eval is an
// error wrapping ErrNilArray.
//
// A Graph is built from one goroutine at a time; kernels run on its worker goroutine.
// Eval, AsyncEval, Bytes and Synchronize hold the graph's mutex, so several goroutines
// may evaluate and read arrays that were already built (they wait for each other).
package graph
