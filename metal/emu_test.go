//go:build !darwin

package metal

import (
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/kernels/msltest"
)

// The executing backend: GPU.Run's own code (pipeline cache, cadence, checks,
// bindings) over a backend that, instead of calling Metal, compiles each
// family's MSL with the emulation harness and runs every dispatch of a
// committed command buffer on the bound buffers, at the bound offsets, with
// the setBytes payloads and the requested grid and threadgroup sizes. Buffers
// live in memory that the Go side and the kernel programs share, as CPU and
// GPU share it on a Mac.

// emuProvider makes shared buffers and finds them by their first byte, as
// the darwin provider does with MTLBuffers.
type emuProvider struct {
	mu   sync.Mutex
	live map[*byte]*emuBuffer
}

type emuBuffer struct {
	p  *emuProvider
	sh *msltest.Shared
	// A window of a mapping bound in place (hostMaps): its start in sh, and its
	// length (0: the whole of sh).
	base, n int
}

func (b *emuBuffer) Bytes() []byte { return b.sh.Bytes }

func (b *emuBuffer) size() int {
	if b.n > 0 {
		return b.n
	}
	return len(b.sh.Bytes)
}

func (b *emuBuffer) Release() {
	b.p.mu.Lock()
	defer b.p.mu.Unlock()
	if b.sh.Bytes == nil {
		return // freed already (by the test's cleanup)
	}
	delete(b.p.live, &b.sh.Bytes[0])
	b.sh.Free() //nolint:errcheck // a leftover file in a private temp directory is harmless
}

// freeAll frees every live buffer: the graph of a finished test may keep some
// (in its cache, or unreachable but not yet finalized), and their files would
// otherwise stay in /dev/shm after the process.
func (p *emuProvider) freeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for base, b := range p.live {
		b.sh.Free() //nolint:errcheck // best effort at the end of a test
		delete(p.live, base)
	}
}

func (p *emuProvider) Name() string                 { return "metal" }
func (p *emuProvider) MaxBufferLength() int64       { return 1 << 36 }
func (p *emuProvider) RecommendedWorkingSet() int64 { return 0 }

func (p *emuProvider) Alloc(n int) (alloc.Raw, error) {
	sh, err := msltest.NewShared(n)
	if err != nil {
		return nil, err
	}
	b := &emuBuffer{p: p, sh: sh}
	p.mu.Lock()
	p.live[&sh.Bytes[0]] = b
	p.mu.Unlock()
	return b, nil
}

// liveBuffers is the number of buffers made and not released.
func (p *emuProvider) liveBuffers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.live)
}

// emuBackend runs command buffers on the emulator, in commit order, on the goroutine
// that first needs them done: a wait, or the goroutine of completed (as a GPU runs
// them while the next batch is encoded).
type emuBackend struct {
	prov     *emuProvider
	maxThr   int // every pipeline's maxTotalThreadsPerThreadgroup
	order    msltest.ThreadOrder
	sessions []*msltest.Session

	host    *hostMaps         // weights bound in place (GPU.MapHost), over mapped
	mapped  []*msltest.Shared // the shared memory standing in for mapped files
	words   []*emuBuffer      // error words, outside prov's books; freed at cleanup
	scrBufs []*emuBuffer      // scratch buffers, likewise

	open     bool
	pipe     *emuPipeline
	bindings map[int]emuBinding // the open encoder's argument table
	cmds     []emuCommand       // the open command buffer

	// The emulated GPU's queue, under gpu.
	gpu        sync.Mutex
	queue      [][]emuCommand // committed command buffers not run yet
	ran        int            // command buffers run (their numbers are below it)
	skipUntil  int            // a failed one skips the rest of its batch: numbers below it
	failures   map[int]error  // failed command buffers not waited for, by number
	waited     int            // command buffers waited for
	dispatches int            // run so far
}

type emuBinding struct {
	buf    *emuBuffer // nil for setBytes or an empty argument
	offset int
	bytes  []byte // a setBytes payload (copied, as Metal copies it)
}

type emuCommand struct {
	pipe     *emuPipeline
	bindings map[int]emuBinding
	d        msltest.Dispatch
}

type emuLibrary struct {
	b    *emuBackend
	sess *msltest.Session
}

type emuPipeline struct {
	sess  *msltest.Session
	entry string
	max   int
}

func (p *emuPipeline) maxThreads() int { return p.max }

func (b *emuBackend) newLibrary(family, source string) (library, error) {
	s, err := msltest.OpenSource(family+".metal", source)
	if err != nil {
		return nil, err
	}
	b.sessions = append(b.sessions, s)
	return &emuLibrary{b: b, sess: s}, nil
}

func (l *emuLibrary) newPipeline(entry string) (pipeline, error) {
	names := l.sess.Kernels()
	for _, n := range names {
		if n == entry {
			return &emuPipeline{sess: l.sess, entry: entry, max: l.b.maxThr}, nil
		}
	}
	return nil, fmt.Errorf("no function named %s (it has %s)", entry, strings.Join(names, ", "))
}

func (b *emuBackend) buffer(base *byte) (deviceBuffer, int, int, bool) {
	b.prov.mu.Lock()
	buf, ok := b.prov.live[base]
	b.prov.mu.Unlock()
	if ok {
		return buf, 0, buf.size(), true
	}
	return b.host.lookup(base)
}

// errorWord makes an error word: shared memory the kernel programs write, not one of
// the provider's buffers.
func (b *emuBackend) errorWord() (deviceBuffer, []byte, error) {
	sh, err := msltest.NewShared(kernels.ErrorWordSize)
	if err != nil {
		return nil, nil, err
	}
	w := &emuBuffer{p: b.prov, sh: sh}
	b.words = append(b.words, w)
	return w, sh.Bytes, nil
}

// releaseScratch keeps the buffer to the test's end (freed at cleanup).
func (b *emuBackend) releaseScratch(deviceBuffer) {}

// wrapMapped is hostMaps.wrap: a window of one of the mapped shared buffers, without
// a copy, as newBufferWithBytesNoCopy is on a Mac.
func (b *emuBackend) wrapMapped(p unsafe.Pointer, n int) (deviceBuffer, error) {
	for _, sh := range b.mapped {
		lo := uintptr(unsafe.Pointer(&sh.Bytes[0]))
		if at := uintptr(p); at >= lo && at+uintptr(n) <= lo+uintptr(len(sh.Bytes)) {
			return &emuBuffer{p: b.prov, sh: sh, base: int(at - lo), n: n}, nil
		}
	}
	return nil, fmt.Errorf("%d bytes at %p are not in a mapped shared buffer", n, p)
}

// scratch makes shared memory outside prov's books, kept to the test's end.
func (b *emuBackend) scratch(n int) (deviceBuffer, error) {
	sh, err := msltest.NewShared(n)
	if err != nil {
		return nil, err
	}
	s := &emuBuffer{p: b.prov, sh: sh}
	b.scrBufs = append(b.scrBufs, s)
	return s, nil
}

// barrier does nothing: the emulator runs a command buffer's dispatches one after
// another, each to its end.
func (b *emuBackend) barrier() {}

// openBuffer starts a command buffer and its encoder, whose argument table
// starts empty.
func (b *emuBackend) openBuffer() {
	if !b.open {
		b.open, b.pipe, b.bindings, b.cmds = true, nil, map[int]emuBinding{}, nil
	}
}

func (b *emuBackend) setPipeline(p pipeline) {
	b.openBuffer()
	b.pipe = p.(*emuPipeline)
}

func (b *emuBackend) setBuffer(index int, buf deviceBuffer, offset int) {
	b.openBuffer()
	var eb *emuBuffer
	if buf != nil {
		eb = buf.(*emuBuffer)
	}
	b.bindings[index] = emuBinding{buf: eb, offset: offset}
}

func (b *emuBackend) setBytes(index int, p []byte) {
	b.openBuffer()
	b.bindings[index] = emuBinding{bytes: append([]byte(nil), p...)}
}

func (b *emuBackend) dispatch(kind dispatchKind, size, group [3]int) {
	b.openBuffer()
	d := msltest.Dispatch{Group: group, Order: b.order, Seed: uint64(len(b.cmds) + 1)}
	if kind == dispatchThreads {
		d.Threads = size
	} else {
		d.Groups = size
	}
	b.cmds = append(b.cmds, emuCommand{pipe: b.pipe, bindings: maps.Clone(b.bindings), d: d})
}

func (b *emuBackend) commit() bool {
	if !b.open {
		return false
	}
	b.gpu.Lock()
	b.queue = append(b.queue, b.cmds)
	b.gpu.Unlock()
	b.open, b.cmds = false, nil
	return true
}

// runLocked runs the queued command buffers numbered below upTo (a batch's end), in
// order; the first dispatch that fails fails its command buffer, and the batch's
// command buffers after it do not run.
func (b *emuBackend) runLocked(upTo int) {
	for b.ran < upTo && len(b.queue) > 0 {
		cb := b.queue[0]
		b.queue = b.queue[1:]
		if b.ran >= b.skipUntil {
			for _, c := range cb {
				if err := b.execute(c); err != nil {
					if b.failures == nil {
						b.failures = map[int]error{}
					}
					b.failures[b.ran] = err
					b.skipUntil = upTo
					break
				}
			}
		}
		b.ran++
	}
}

// wait runs what is left of the command buffers numbered below upTo and reports the
// first that failed.
func (b *emuBackend) wait(upTo int) (int, error) {
	b.gpu.Lock()
	defer b.gpu.Unlock()
	b.runLocked(upTo)
	failed, err := -1, error(nil)
	for i := b.waited; i < upTo; i++ {
		if e, ok := b.failures[i]; ok {
			if failed < 0 {
				failed, err = i, e
			}
			delete(b.failures, i)
		}
	}
	b.waited = max(b.waited, upTo)
	return failed, err
}

// completed runs the command buffers numbered below upTo on a goroutine of their own
// and closes the channel when they are done.
func (b *emuBackend) completed(upTo int) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		b.gpu.Lock()
		b.runLocked(upTo)
		b.gpu.Unlock()
		close(ch)
	}()
	return ch
}

func (b *emuBackend) reset() {
	b.open, b.cmds = false, nil
	b.gpu.Lock()
	defer b.gpu.Unlock()
	b.runLocked(b.ran + len(b.queue)) // the batch is abandoned; what was committed still runs first
	clear(b.failures)
	b.waited = b.ran
}

// ranDispatches is the number of dispatches run so far.
func (b *emuBackend) ranDispatches() int {
	b.gpu.Lock()
	defer b.gpu.Unlock()
	return b.dispatches
}

// execute runs one dispatch with the buffers its kernel declares.
func (b *emuBackend) execute(c emuCommand) error {
	b.dispatches++
	indices, err := c.pipe.sess.BufferIndices(c.pipe.entry)
	if err != nil {
		return err
	}
	bufs := make([]msltest.Buffer, 0, len(indices))
	for _, i := range indices {
		bd, ok := c.bindings[i]
		switch {
		case !ok:
			return fmt.Errorf("%s: nothing bound at buffer(%d)", c.pipe.entry, i)
		case bd.buf != nil:
			bufs = append(bufs, msltest.Buffer{Index: i, Shared: bd.buf.sh, Offset: bd.buf.base + bd.offset})
		default: // setBytes, or nil for an empty argument (0 bytes: any access faults)
			bufs = append(bufs, msltest.Buffer{Index: i, Data: bd.bytes})
		}
	}
	return c.pipe.sess.Run(c.pipe.entry, c.d, bufs)
}

// newEmulatedGPU makes a GPU over the executing backend; the test's cleanup
// ends its kernel programs. It skips (or fails in CI) without g++.
func newEmulatedGPU(t testing.TB, opt GPUOptions, order msltest.ThreadOrder) (*GPU, *emuBackend) {
	t.Helper()
	msltest.RequireCompiler(t)
	opt, err := opt.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	b := &emuBackend{prov: &emuProvider{live: map[*byte]*emuBuffer{}}, maxThr: 1024, order: order}
	t.Cleanup(func() {
		for _, s := range b.sessions {
			s.Close()
		}
		b.prov.freeAll()
		for _, w := range b.words {
			w.sh.Free() //nolint:errcheck // best effort at the end of a test
		}
		for _, s := range b.scrBufs {
			s.sh.Free() //nolint:errcheck // likewise
		}
	})
	b.host = &hostMaps{page: os.Getpagesize(), maxLen: 1 << 36, wrap: b.wrapMapped, free: func(deviceBuffer) {}}
	return &GPU{r: newRunner(b, opt), prov: b.prov, host: b.host}, b
}
