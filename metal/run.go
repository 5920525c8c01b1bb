package metal

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ingotml/ingot/kernels"
)

// This file and encoder.go hold everything GPU.Run does apart from the Metal
// calls themselves: pipeline caching, command-buffer cadence, argument checks
// and error reporting. The calls go through the small backend interface, which
// the darwin code implements over a command queue and the tests implement with
// a recorder, so that all of this is tested on every platform.

// DefaultCommitEvery is the number of dispatches per command buffer when
// GPUOptions.CommitEvery is 0 and the chip class is unknown (off macOS): MLX's
// figure for Max and Ultra chips. On a Mac, NewGPU takes MLX's figure for the
// device's chip class instead (chipCommitLimits).
const DefaultCommitEvery = 50

// DefaultCommitBytes is the most bytes of bound arguments per command buffer when
// GPUOptions.CommitBytes is 0 and the chip class is unknown: MLX's 50 MiB for Max and
// Ultra chips (on a Mac, NewGPU takes the chip class's figure: 40 MiB on base and Pro),
// so one command buffer does not hold a GPU's worth of weights while the next waits
// to be encoded.
const DefaultCommitBytes = 50 << 20

// GPUOptions configure NewGPU. Command buffers are committed as they fill, without
// waiting; Run waits once, for all of them, at the end of its batch (graph.Device's
// contract: Run returns when the batch has completed).
type GPUOptions struct {
	// CommitEvery is how many dispatches go into one command buffer before
	// it is committed (0 means the chip class's figure, see DefaultCommitEvery).
	// Run also commits at the end of every batch.
	CommitEvery int
	// CommitBytes is how many bytes of bound arguments (counted per binding) go into
	// one command buffer before it is committed (0 means the chip class's figure,
	// see DefaultCommitBytes).
	CommitBytes int
}

// forChip fills the zero fields with MLX's figures for the GPU architecture arch.
func (o GPUOptions) forChip(arch string) GPUOptions {
	ops, bytes := chipCommitLimits(arch)
	if o.CommitEvery == 0 {
		o.CommitEvery = ops
	}
	if o.CommitBytes == 0 {
		o.CommitBytes = bytes
	}
	return o
}

func (o GPUOptions) withDefaults() (GPUOptions, error) {
	if o.CommitEvery < 0 {
		return o, fmt.Errorf("metal: GPUOptions.CommitEvery is %d; want 0 (for %d) or more", o.CommitEvery, DefaultCommitEvery)
	}
	if o.CommitEvery == 0 {
		o.CommitEvery = DefaultCommitEvery
	}
	if o.CommitBytes < 0 {
		return o, fmt.Errorf("metal: GPUOptions.CommitBytes is %d; want 0 (for %d) or more", o.CommitBytes, DefaultCommitBytes)
	}
	if o.CommitBytes == 0 {
		o.CommitBytes = DefaultCommitBytes
	}
	return o, nil
}

// backend is the Metal side of a batch. All calls come from one goroutine,
// inside GPU.Run.
type backend interface {
	// newLibrary compiles a family's MSL source.
	newLibrary(family, source string) (library, error)
	// buffer finds the live device buffer that holds an argument whose data starts
	// at base, the data's byte offset in it and its length from there: 0 and the
	// buffer's size for a buffer the provider made, the tensor's offset in its
	// window and its own length for a weight bound in place (hostMaps).
	buffer(base *byte) (buf deviceBuffer, off, n int, ok bool)
	// errorWord makes a device error word (kernels.ErrorWordSize bytes of shared
	// memory): its own object, not an array's, so it stays outside the allocator's
	// books (whose count must equal the provider's). The runner keeps the words it
	// makes, one for each batch in flight, for the backend's life.
	errorWord() (deviceBuffer, []byte, error)
	// scratch makes a device buffer of n bytes for launches' scratch
	// (kernels.Encoder.Scratch), outside the allocator's books like the error word.
	// The runner gives each batch in flight its own, and hands one back through
	// releaseScratch once no batch in flight can use it.
	scratch(n int) (deviceBuffer, error)
	releaseScratch(b deviceBuffer)

	// The encoding calls go to the open command buffer; the first of them
	// opens one. b is nil for an empty argument.
	setPipeline(p pipeline)
	setBuffer(index int, b deviceBuffer, offset int)
	setBytes(index int, b []byte)
	dispatch(kind dispatchKind, size, group [3]int)
	// barrier orders the open command buffer's next dispatch after the writes of
	// the ones before it (memoryBarrierWithScope: buffers): the buffers are
	// untracked, so Metal orders nothing by itself.
	barrier()

	// commit ends and commits the open command buffer without waiting; it
	// reports false when none was open.
	commit() bool
	// Command buffers are numbered in commit order from 0, over the backend's life.
	// wait blocks until every one numbered below upTo has completed and forgets
	// them; it returns the number and error of the first that failed among those
	// not waited for before, or -1 and nil.
	wait(upTo int) (int, error)
	// completed returns a channel closed once every command buffer numbered below
	// upTo has completed (it may be called from the runner's goroutine only; the
	// channel may be read anywhere).
	completed(upTo int) <-chan struct{}
	// reset abandons a batch that broke down (a panic): it ends the open
	// command buffer's encoding without committing it, waits for every
	// committed one (the GPU may still be using buffers the graph is about to
	// reuse, which untracked hazards do not protect) and forgets them.
	reset()
}

// library is a compiled family.
type library interface {
	// newPipeline makes the compute pipeline of the named function.
	newPipeline(entry string) (pipeline, error)
}

// pipeline is a compute pipeline state.
type pipeline interface {
	// maxThreads is its maxTotalThreadsPerThreadgroup.
	maxThreads() int
}

// deviceBuffer is an MTLBuffer the provider made.
type deviceBuffer interface {
	// size is its length in bytes.
	size() int
}

type dispatchKind uint8

const (
	dispatchThreads      dispatchKind = iota // dispatchThreads: size is the grid in threads
	dispatchThreadgroups                     // dispatchThreadgroups: size is the grid in groups
)

// pipelineCache makes each pipeline once. A family's library comes from the
// background builds NewGPU started (its first dispatch waits for that family
// alone), or, for a family outside them, is compiled at its first use. Failures
// are kept too: the embedded source cannot change, so a retry would only fail
// again, slowly.
type pipelineCache struct {
	source func(family string) (string, error)
	builds *familyBuilds
	libs   map[string]libEntry
	pipes  map[pipeKey]pipeEntry
}

type libEntry struct {
	lib library
	err error
}

// pipeKey names a function within its family, since two families may use the
// same function name.
type pipeKey struct{ family, entry string }

type pipeEntry struct {
	p   pipeline
	err error
}

func (c *pipelineCache) get(b backend, family, entry string) (pipeline, error) {
	k := pipeKey{family, entry}
	if e, ok := c.pipes[k]; ok {
		return e.p, e.err
	}
	l, ok := c.libs[family]
	if !ok {
		l.lib, l.err, ok = c.builds.wait(family)
	}
	if !ok {
		src, err := c.source(family)
		if err == nil {
			l.lib, err = b.newLibrary(family, src)
		}
		if err != nil {
			l.err = &CompileError{Family: family, Err: err}
		}
	}
	if c.libs == nil {
		c.libs = map[string]libEntry{}
	}
	c.libs[family] = l
	var e pipeEntry
	if e.err = l.err; e.err == nil {
		e.p, e.err = l.lib.newPipeline(entry)
		if e.err != nil {
			e.err = &CompileError{Family: family, Entry: entry, Err: e.err}
		}
	}
	if c.pipes == nil {
		c.pipes = map[pipeKey]pipeEntry{}
	}
	c.pipes[k] = e
	return e.p, e.err
}

// runner runs batches on a backend. A batch is submitted (encoded and committed,
// without waiting) and later finished (waited for, its failures read), in order:
// the next batch may be submitted while the GPU still runs the last one
// (GPU.Submit), so what a batch's command buffers use until they complete, its
// error word and its scratch, belongs to that batch alone until it is finished.
type runner struct {
	b           backend
	commitEvery int
	commitBytes int
	// The open command buffer: the bytes its launches bound, and the buffers its
	// dispatches wrote (a later dispatch binding one needs a barrier first).
	cbBytes   int
	cbWritten map[deviceBuffer]bool
	cache     pipelineCache
	enc       encoder
	pos       int // the position in its batch of the launch being encoded

	commits  int            // command buffers committed so far (the next one's number)
	cur      *inflight      // the batch being encoded
	inFlight []*inflight    // submitted and not finished, oldest first
	words    []*errWord     // error words no batch in flight holds
	scrFree  []deviceBuffer // scratch buffers no batch in flight holds
}

// inflight is a submitted batch: what finish needs to report it, and what its
// command buffers use until they complete.
type inflight struct {
	batch       []kernels.Launch
	spans       []span // the launches of each of its command buffers
	first, upTo int    // the numbers of its command buffers: [first, upTo)
	encErr      error  // the launch that could not be encoded, if any
	finished    bool   // waited for; err is its result
	err         error

	// The batch's device error word (kernels/errword.go): bound by every launch
	// whose Encode asks for it, zeroed at the batch's first such launch, read
	// once the batch has completed.
	word *errWord
	// The batch's scratch: launches take consecutive regions of scr[len-1], so no
	// two launches of a batch share bytes; the earlier ones were outgrown within
	// the batch and are still used by its earlier launches.
	scr     []deviceBuffer
	scrUsed int
}

// errWord is a device error word and its CPU view.
type errWord struct {
	buf  deviceBuffer
	data []byte
}

// scratchAlign is the alignment of each launch's scratch region.
const scratchAlign = 256

// minScratch is the smallest scratch buffer the runner asks for.
const minScratch = 1 << 20

// scratchRegion is a region of a scratch buffer bound by one launch.
type scratchRegion struct {
	buf      deviceBuffer
	off, len int
}

// scratch returns a region of n bytes of the batch's scratch for the launch being
// encoded. A batch starts from a buffer no batch in flight holds (or a new one), and
// takes a buffer twice as large when it outgrows it.
func (r *runner) scratch(n int) (scratchRegion, error) {
	p := r.cur
	off := (p.scrUsed + scratchAlign - 1) &^ (scratchAlign - 1)
	if len(p.scr) == 0 && len(r.scrFree) > 0 {
		last := len(r.scrFree) - 1
		p.scr, r.scrFree = append(p.scr, r.scrFree[last]), r.scrFree[:last]
		off = 0
	}
	if len(p.scr) == 0 || off+n > p.scr[len(p.scr)-1].size() {
		size := minScratch
		if len(p.scr) > 0 {
			size = 2 * p.scr[len(p.scr)-1].size()
		}
		for size < n {
			size *= 2
		}
		buf, err := r.b.scratch(size)
		if err != nil {
			return scratchRegion{}, err
		}
		p.scr, off = append(p.scr, buf), 0
	}
	p.scrUsed = off + n
	return scratchRegion{buf: p.scr[len(p.scr)-1], off: off, len: n}, nil
}

// release gives back what p held once its command buffers have completed: its error
// word, and its scratch (the largest buffer is kept for a later batch, at most
// maxSpareScratch of them; the rest go back to the backend).
func (r *runner) release(p *inflight) {
	if p.word != nil {
		r.words = append(r.words, p.word)
		p.word = nil
	}
	if k := len(p.scr); k > 0 {
		for _, b := range p.scr[:k-1] {
			r.b.releaseScratch(b)
		}
		r.scrFree = append(r.scrFree, p.scr[k-1])
		if len(r.scrFree) > maxSpareScratch {
			r.b.releaseScratch(r.scrFree[0])
			r.scrFree = r.scrFree[1:]
		}
		p.scr = nil
	}
}

// maxSpareScratch is how many scratch buffers the runner keeps between batches: one
// for the batch the GPU runs and one for the batch being encoded.
const maxSpareScratch = 2

func newRunner(b backend, opt GPUOptions) *runner {
	if opt.CommitBytes == 0 {
		opt.CommitBytes = DefaultCommitBytes
	}
	r := &runner{b: b, commitEvery: opt.CommitEvery, commitBytes: opt.CommitBytes, cbWritten: map[deviceBuffer]bool{}}
	r.cache.source = kernels.Source
	r.enc.r = r
	return r
}

// runBatch submits batch and finishes it (Run: it returns when the batch has
// completed).
func (r *runner) runBatch(batch []kernels.Launch) error {
	p, err := r.submitBatch(batch)
	if err != nil {
		return err
	}
	return r.finishBatch(p)
}

// finishBatch is finish with a panic turned into the batch's error, as submitBatch's.
func (r *runner) finishBatch(p *inflight) (err error) {
	defer func() {
		if v := recover(); v != nil {
			r.b.reset()
			r.release(p)
			err = fmt.Errorf("metal: run failed: %v", v)
		}
	}()
	return r.finish(p)
}

// submitBatch is submit with a panic (a nil object from Metal, a bug) turned into
// the batch's error, after reset has waited for whatever was committed.
func (r *runner) submitBatch(batch []kernels.Launch) (p *inflight, err error) {
	defer func() {
		if v := recover(); v != nil {
			r.b.reset()
			if r.cur != nil {
				r.release(r.cur)
				r.cur = nil
			}
			p, err = nil, fmt.Errorf("metal: run failed: %v", v)
		}
	}()
	return r.submit(batch), nil
}

// span is the launches [first, last] encoded into one command buffer.
type span struct{ first, last int }

// run submits the batch and finishes it.
func (r *runner) run(batch []kernels.Launch) error { return r.finish(r.submit(batch)) }

// submit encodes the batch in order, committing a command buffer after commitEvery
// dispatches or commitBytes bytes of bound arguments and at the end, without
// waiting. The first launch that cannot be encoded stops the batch: what was
// encoded before it still runs, and finish reports its error.
func (r *runner) submit(batch []kernels.Launch) *inflight {
	p := &inflight{batch: batch, first: r.commits}
	r.cur = p
	first, pending := 0, 0 // the open command buffer's first launch, and its dispatches
	commit := func(last int) {
		if r.b.commit() {
			p.spans = append(p.spans, span{first, last})
			r.commits++
		}
		first, pending = last+1, 0
		r.cbBytes = 0
		clear(r.cbWritten) // the next pass waits on this one's fence
	}
	for i := range batch {
		r.pos = i
		n, err := r.encode(&batch[i])
		pending += n
		if err != nil {
			p.encErr = err
			commit(i)
			break
		}
		if pending >= r.commitEvery || r.cbBytes >= r.commitBytes || i == len(batch)-1 {
			commit(i)
		}
	}
	p.upTo = r.commits
	r.cur = nil
	r.inFlight = append(r.inFlight, p)
	return p
}

// finish waits for p's command buffers and returns its errors: the launch that could
// not be encoded, the command buffer the GPU failed (with the kernels it held), and
// the launch the device error word names. Batches complete in submission order, so
// the batches submitted before p (another graph's, on a shared GPU) are finished
// first and keep their results for their own finish.
func (r *runner) finish(p *inflight) error {
	for !p.finished {
		if len(r.inFlight) == 0 {
			panic("metal: finishing a batch that was not submitted")
		}
		q := r.inFlight[0]
		r.inFlight = r.inFlight[1:]
		q.err, q.finished = r.land(q), true
	}
	return p.err
}

// land waits for the oldest batch in flight, p, and returns its errors.
func (r *runner) land(p *inflight) error {
	failed, gpuErr := r.b.wait(p.upTo)
	if gpuErr != nil {
		gpuErr = r.gpuError(p, failed, gpuErr)
	}
	var wordErr error
	if p.word != nil {
		if le := kernels.DeviceError(p.word.data, p.batch); le != nil {
			// Worded as the CPU device's error, around the same *LaunchError.
			wordErr = fmt.Errorf("metal: kernel %s failed: %w", le.Kernel, le)
		}
	}
	r.release(p)
	return errors.Join(p.encErr, gpuErr, wordErr)
}

// errorWord binds the batch's error word at index and the launch's position at
// index+1, zeroing the word at its first binding in the batch.
func (r *runner) errorWord(e *encoder, index int) {
	p := r.cur
	if p.word == nil {
		if k := len(r.words); k > 0 {
			p.word, r.words = r.words[k-1], r.words[:k-1]
		} else {
			buf, word, err := r.b.errorWord()
			if err != nil {
				e.fail("error word: %w", err)
				return
			}
			if len(word) < kernels.ErrorWordSize {
				e.fail("error word of %d bytes; want %d", len(word), kernels.ErrorWordSize)
				return
			}
			p.word = &errWord{buf: buf, data: word}
		}
		clear(p.word.data) // no batch in flight holds it: its last one has completed
	}
	var tag [4]byte
	binary.LittleEndian.PutUint32(tag[:], uint32(r.pos))
	r.b.setBuffer(index, p.word.buf, 0)
	r.b.setBytes(index+1, tag[:])
}

// gpuError names the launches of p's command buffer numbered failed.
func (r *runner) gpuError(p *inflight, failed int, err error) error {
	batch, i := p.batch, failed-p.first
	if i < 0 || i >= len(p.spans) {
		return fmt.Errorf("metal: command buffer failed: %w", err)
	}
	s := p.spans[i]
	return fmt.Errorf("metal: command buffer of launches %d to %d of %d (%s to %s) failed: %w",
		s.first, s.last, len(batch), kernelName(&batch[s.first]), kernelName(&batch[s.last]), err)
}

func kernelName(l *kernels.Launch) string {
	if l.Kernel == nil {
		return "no kernel"
	}
	return l.Kernel.Name
}

// encode runs l's Encode on the encoder and returns the dispatches it made.
// A panic in Encode (a bug in a Metal twin, or a bad Params type) becomes the
// launch's error, so the batch still commits and waits for its earlier work.
func (r *runner) encode(l *kernels.Launch) (n int, err error) {
	k := l.Kernel
	if k == nil {
		return 0, errors.New("metal: a launch has no kernel")
	}
	if k.Encode == nil {
		return 0, &KernelError{Kernel: k.Name, Err: ErrNoEncode}
	}
	e := &r.enc
	e.start(l)
	defer func() {
		if p := recover(); p != nil {
			err = &KernelError{Kernel: k.Name, Err: fmt.Errorf("Encode panicked: %v", p)}
		}
		n = e.dispatches
	}()
	k.Encode(l, e)
	if e.err != nil {
		return 0, &KernelError{Kernel: k.Name, Err: e.err}
	}
	return 0, nil
}
