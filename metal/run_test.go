package metal

import (
	"errors"
	"fmt"
	"math/rand"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// fakeBackend records what the runner asks of Metal. Its libraries hold the
// kernel functions the real MSL source declares, so a wrong entry name fails
// here as it would on a Mac.
type fakeBackend struct {
	ops       []string
	bufs      map[*byte]*fakeBuf
	compiles  map[string]int // newLibrary calls by family
	pipelines map[string]int // newPipeline calls by entry
	libErr    error          // newLibrary fails with it
	maxThr    int            // every pipeline's maxTotalThreadsPerThreadgroup
	open      bool
	committed int  // committed and not waited for
	waited    int  // the number of the first command buffer not waited for
	failAt    int  // position, among those a wait covers, of the one that fails, or -1
	failOnce  bool // failAt applies to the next failing wait only
	panicOn   int  // the commit (counted from 1) that panics, as a nil Metal object would; 0 for none
	commits   int
	scratches int       // scratch buffers made
	words     int       // error words made
	host      *hostMaps // weights bound in place, if any
}

type fakeBuf struct{ id, n int }

func (b *fakeBuf) size() int { return b.n }

type fakeLib struct {
	f       *fakeBackend
	entries []string
}

type fakePipe struct {
	name string
	max  int
}

func (p *fakePipe) maxThreads() int { return p.max }

func newFake() *fakeBackend {
	return &fakeBackend{bufs: map[*byte]*fakeBuf{}, compiles: map[string]int{}, pipelines: map[string]int{},
		maxThr: 1024, failAt: -1}
}

// alloc makes an argument whose data is a fake device buffer.
func (f *fakeBackend) alloc(l kernels.Layout) kernels.Arg {
	a := kernels.NewArg(l)
	f.register(a.Data)
	return a
}

func (f *fakeBackend) register(b []byte) {
	if len(b) > 0 && f.bufs[&b[0]] == nil {
		f.bufs[&b[0]] = &fakeBuf{id: len(f.bufs) + 1, n: len(b)}
	}
}

var kernelDecl = regexp.MustCompile(`kernel\s+void\s+(\w+)`)

func (f *fakeBackend) newLibrary(family, source string) (library, error) {
	f.compiles[family]++
	f.ops = append(f.ops, "library "+family)
	if f.libErr != nil {
		return nil, f.libErr
	}
	l := &fakeLib{f: f}
	for _, m := range kernelDecl.FindAllStringSubmatch(source, -1) {
		l.entries = append(l.entries, m[1])
	}
	sort.Strings(l.entries)
	return l, nil
}

func (l *fakeLib) newPipeline(entry string) (pipeline, error) {
	l.f.pipelines[entry]++
	for _, e := range l.entries {
		if e == entry {
			return &fakePipe{name: entry, max: l.f.maxThr}, nil
		}
	}
	return nil, fmt.Errorf("no function named %s (it has %s)", entry, strings.Join(l.entries, ", "))
}

func (f *fakeBackend) buffer(base *byte) (deviceBuffer, int, int, bool) {
	if b, ok := f.bufs[base]; ok {
		return b, 0, b.n, true
	}
	return f.host.lookup(base)
}

// errorWord is a fake buffer (id 500 + its number) over Go memory the fake never writes.
func (f *fakeBackend) errorWord() (deviceBuffer, []byte, error) {
	f.words++
	return &fakeBuf{id: 500 + f.words, n: kernels.ErrorWordSize}, make([]byte, kernels.ErrorWordSize), nil
}

// scratch is a fake buffer (id 1000 + its number) of n bytes.
func (f *fakeBackend) scratch(n int) (deviceBuffer, error) {
	f.scratches++
	f.ops = append(f.ops, fmt.Sprintf("scratch %d", n))
	return &fakeBuf{id: 1000 + f.scratches, n: n}, nil
}

func (f *fakeBackend) releaseScratch(b deviceBuffer) {
	f.ops = append(f.ops, fmt.Sprintf("release scratch b%d", b.(*fakeBuf).id))
}

// completed is closed at once: the fake's command buffers complete when committed.
func (f *fakeBackend) completed(int) <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

func (f *fakeBackend) barrier() { f.op("barrier") }

func (f *fakeBackend) op(format string, args ...any) {
	f.open = true
	f.ops = append(f.ops, fmt.Sprintf(format, args...))
}

func (f *fakeBackend) setPipeline(p pipeline) { f.op("pipeline %s", p.(*fakePipe).name) }

func (f *fakeBackend) setBuffer(index int, b deviceBuffer, offset int) {
	if b == nil {
		f.op("buffer %d = nil", index)
		return
	}
	f.op("buffer %d = b%d+%d", index, b.(*fakeBuf).id, offset)
}

func (f *fakeBackend) setBytes(index int, b []byte) { f.op("bytes %d (%d)", index, len(b)) }

func (f *fakeBackend) dispatch(kind dispatchKind, size, group [3]int) {
	name := map[dispatchKind]string{dispatchThreads: "threads", dispatchThreadgroups: "groups"}[kind]
	f.op("%s %v %v", name, size, group)
}

func (f *fakeBackend) reset() {
	f.ops = append(f.ops, fmt.Sprintf("reset: end the open pass, wait for %d committed", f.committed))
	f.open, f.waited, f.committed = false, f.waited+f.committed, 0
}

func (f *fakeBackend) commit() bool {
	if !f.open {
		return false
	}
	f.commits++
	if f.commits == f.panicOn {
		panic("the command buffer is nil")
	}
	f.open = false
	f.committed++
	f.ops = append(f.ops, "commit")
	return true
}

func (f *fakeBackend) wait(upTo int) (int, error) {
	f.ops = append(f.ops, "wait")
	if upTo > f.waited+f.committed {
		panic(fmt.Sprintf("wait for %d command buffers; %d committed", upTo, f.waited+f.committed))
	}
	n, from := max(upTo-f.waited, 0), f.waited
	f.committed -= n
	f.waited += n
	if f.failAt >= 0 && f.failAt < n {
		at := from + f.failAt
		if f.failOnce {
			f.failAt = -1
		}
		return at, errors.New("page fault")
	}
	return -1, nil
}

func count(ops []string, prefix string) int {
	n := 0
	for _, o := range ops {
		if strings.HasPrefix(o, prefix) {
			n++
		}
	}
	return n
}

// arange returns a launch of the real arange kernel on a fake buffer.
func arange(f *fakeBackend, dt kernels.DType, n, offset int) kernels.Launch {
	l := kernels.Launch{Kernel: kernels.KArange, Params: &kernels.ArangeParams{Start: 1, Step: 2}, NArgs: 1}
	lay := kernels.Contiguous(dt, n)
	lay.Offset = offset
	l.Args[0] = f.alloc(lay)
	return l
}

// testKernel is an unregistered kernel of the arange family with a custom Encode.
func testKernel(name string, encode func(l *kernels.Launch, e kernels.Encoder)) *kernels.Kernel {
	return &kernels.Kernel{Name: name, Family: "arange", CPU: func(*kernels.Launch) {}, Encode: encode}
}

func TestRunEncodesLaunches(t *testing.T) {
	f := newFake()
	r := newRunner(f, GPUOptions{CommitEvery: 50})
	batch := []kernels.Launch{arange(f, kernels.Float32, 300, 2), arange(f, kernels.Int32, 5, 0), arange(f, kernels.Float32, 1, 0)}
	require.NoError(t, r.run(batch))
	require.Equal(t, []string{
		"library arange",
		"pipeline arange_float32",
		"buffer 0 = b1+8", // element offset 2 of float32
		"bytes 1 (12)",
		"threads [300 1 1] [256 1 1]",
		"pipeline arange_int32",
		"buffer 0 = b2+0",
		"bytes 1 (12)",
		"threads [5 1 1] [5 1 1]",
		"pipeline arange_float32",
		"buffer 0 = b3+0",
		"bytes 1 (12)",
		"threads [1 1 1] [1 1 1]",
		"commit",
		"wait",
	}, f.ops)
	assert.Equal(t, map[string]int{"arange": 1}, f.compiles, "one library per family")
	assert.Equal(t, map[string]int{"arange_float32": 1, "arange_int32": 1}, f.pipelines, "one pipeline per entry")

	f.ops = nil
	require.NoError(t, r.run(batch[:1]))
	assert.Equal(t, 0, count(f.ops, "library"), "the library is cached across batches")
	assert.Equal(t, map[string]int{"arange_float32": 1, "arange_int32": 1}, f.pipelines)
}

func TestRunCommitsEveryNDispatches(t *testing.T) {
	twice := testKernel("twice", func(l *kernels.Launch, e kernels.Encoder) {
		e.Entry("arange_float32")
		e.SetArg(0, l.Out())
		e.SetBytes(1, make([]byte, 12))
		e.DispatchThreads([3]int{4, 1, 1}, [3]int{4, 1, 1})
		e.DispatchThreads([3]int{4, 1, 1}, [3]int{4, 1, 1})
	})
	none := testKernel("none", func(l *kernels.Launch, e kernels.Encoder) {})
	f := newFake()
	r := newRunner(f, GPUOptions{CommitEvery: 3})
	a := func() kernels.Launch { return arange(f, kernels.Float32, 4, 0) }
	two := a()
	two.Kernel = twice
	nothing := a()
	nothing.Kernel = none
	// Dispatches 1 1 1 | 1 2 | 1 1 1 | 0 1: a launch that dispatches nothing opens no buffer.
	batch := []kernels.Launch{a(), a(), a(), a(), two, a(), a(), a(), nothing, a()}
	require.NoError(t, r.run(batch))

	var perBuffer []int
	n := 0
	for _, o := range f.ops {
		switch {
		case strings.HasPrefix(o, "threads"):
			n++
		case o == "commit":
			perBuffer = append(perBuffer, n)
			n = 0
		}
	}
	assert.Equal(t, []int{3, 3, 3, 1}, perBuffer, "dispatches per command buffer")
	assert.Equal(t, "wait", f.ops[len(f.ops)-1])
	assert.Equal(t, 1, count(f.ops, "wait"))
}

func TestRunEmptyBatch(t *testing.T) {
	f := newFake()
	require.NoError(t, newRunner(f, GPUOptions{CommitEvery: 50}).run(nil))
	assert.Equal(t, []string{"wait"}, f.ops)
}

// TestRunEncodesEverySample runs each registered sample launch through its
// Encode: every entry name must exist in its family's MSL and every argument
// must resolve to its buffer within bounds.
func TestRunEncodesEverySample(t *testing.T) {
	samples := kernels.Samples(rand.New(rand.NewSource(1)))
	require.NotEmpty(t, samples)
	launches := 0
	defer func() { t.Logf("%d families, %d sample launches encoded", len(samples), launches) }()
	for family, ls := range samples {
		launches += len(ls)
		f := newFake()
		r := newRunner(f, GPUOptions{CommitEvery: 50})
		batch := make([]kernels.Launch, len(ls))
		for i, l := range ls {
			for j := 0; j < l.NArgs; j++ {
				f.register(l.Args[j].Data)
			}
			batch[i] = *l
		}
		require.NoError(t, r.run(batch), "family %s", family)
		assert.Equal(t, 1, f.compiles[family], "family %s", family)
		assert.Positive(t, count(f.ops, "threads")+count(f.ops, "groups"), "family %s dispatches nothing", family)
	}
}

func TestRunErrors(t *testing.T) {
	encodeWith := func(body func(l *kernels.Launch, e kernels.Encoder)) func(*fakeBackend) kernels.Launch {
		return func(f *fakeBackend) kernels.Launch {
			l := arange(f, kernels.Float32, 4, 0)
			l.Kernel = testKernel("t", body)
			return l
		}
	}
	bind := func(l *kernels.Launch, e kernels.Encoder) {
		e.Entry("arange_float32")
		e.SetArg(0, l.Out())
	}
	for _, tc := range []struct {
		name   string
		launch func(*fakeBackend) kernels.Launch
		want   string
	}{
		{"no kernel", func(*fakeBackend) kernels.Launch { return kernels.Launch{} },
			"metal: a launch has no kernel"},
		{"no Encode", func(f *fakeBackend) kernels.Launch {
			l := arange(f, kernels.Float32, 4, 0)
			l.Kernel = &kernels.Kernel{Name: "binary_add", Family: "binary", CPU: func(*kernels.Launch) {}}
			return l
		}, "metal: kernel binary_add: no Metal twin (Kernel.Encode is nil)"},
		{"host memory", func(f *fakeBackend) kernels.Launch {
			l := arange(f, kernels.Float32, 4, 0)
			l.Args[0] = kernels.NewArg(kernels.Contiguous(kernels.Float32, 4))
			return l
		}, "metal: kernel arange: buffer(0): the argument's data is not a live Metal buffer of this GPU"},
		{"past the end", func(f *fakeBackend) kernels.Launch {
			l := arange(f, kernels.Float32, 4, 0)
			l.Args[0].Offset = 1
			return l
		}, "metal: kernel arange: buffer(0): float32 array of shape [4] at element offset 1 reaches past the end of its 16-byte buffer"},
		{"negative offset", func(f *fakeBackend) kernels.Launch {
			l := arange(f, kernels.Float32, 4, 0)
			l.Args[0].Offset = -1
			return l
		}, "metal: kernel arange: buffer(0): float32 array of shape [4] at element offset -1 reaches past the end of its 16-byte buffer"},
		{"no data", func(f *fakeBackend) kernels.Launch {
			l := arange(f, kernels.Float32, 4, 0)
			l.Args[0].Data = nil
			return l
		}, "metal: kernel arange: buffer(0): a float32 array of 4 elements has no data"},
		{"nil arg", encodeWith(func(l *kernels.Launch, e kernels.Encoder) { e.SetArg(0, nil) }),
			"metal: kernel t: buffer(0): nil argument"},
		{"index", encodeWith(func(l *kernels.Launch, e kernels.Encoder) { e.SetArg(31, l.Out()) }),
			"metal: kernel t: buffer index 31 is not in 0..30"},
		{"bytes index", encodeWith(func(l *kernels.Launch, e kernels.Encoder) { e.SetBytes(-1, []byte{1}) }),
			"metal: kernel t: buffer index -1 is not in 0..30"},
		{"big bytes", encodeWith(func(l *kernels.Launch, e kernels.Encoder) { e.SetBytes(1, make([]byte, 4097)) }),
			"metal: kernel t: buffer(1): a constant block of 4097 bytes; Metal takes 1 to 4096"},
		{"empty bytes", encodeWith(func(l *kernels.Launch, e kernels.Encoder) { e.SetBytes(1, nil) }),
			"metal: kernel t: buffer(1): a constant block of 0 bytes; Metal takes 1 to 4096"},
		{"no entry", encodeWith(func(l *kernels.Launch, e kernels.Encoder) {
			e.DispatchThreads([3]int{1, 1, 1}, [3]int{1, 1, 1})
		}), "metal: kernel t: dispatch before Entry selected a function"},
		{"zero grid", encodeWith(func(l *kernels.Launch, e kernels.Encoder) {
			bind(l, e)
			e.DispatchThreads([3]int{0, 1, 1}, [3]int{1, 1, 1})
		}), "metal: kernel t: arange_float32: grid [0 1 1]: every side must be at least 1 and the grid under 2^32 threads a side"},
		{"huge grid", encodeWith(func(l *kernels.Launch, e kernels.Encoder) {
			bind(l, e)
			e.DispatchThreadgroups([3]int{1 << 30, 1, 1}, [3]int{8, 1, 1})
		}), "metal: kernel t: arange_float32: threadgroup count [1073741824 1 1]: every side must be at least 1 and the grid under 2^32 threads a side"},
		{"zero group", encodeWith(func(l *kernels.Launch, e kernels.Encoder) {
			bind(l, e)
			e.DispatchThreadgroups([3]int{1, 1, 1}, [3]int{32, 0, 1})
		}), "metal: kernel t: arange_float32: threadgroup [32 0 1]: every side must be 1 to 1024"},
		{"group too big", encodeWith(func(l *kernels.Launch, e kernels.Encoder) {
			bind(l, e)
			e.DispatchThreadgroups([3]int{1, 1, 1}, [3]int{32, 16, 1})
		}), "metal: kernel t: arange_float32: threadgroup [32 16 1] has 512 threads; its pipeline allows at most 256"},
		{"unknown entry", encodeWith(func(l *kernels.Launch, e kernels.Encoder) { e.Entry("nope") }),
			"metal: kernel t: pipeline for nope of arange.metal: no function named nope (it has arange_float32, arange_int32)"},
		{"no source", func(f *fakeBackend) kernels.Launch {
			l := arange(f, kernels.Float32, 4, 0)
			l.Kernel = &kernels.Kernel{Name: "t", Family: "nosuch", CPU: func(*kernels.Launch) {}, Encode: bind}
			return l
		}, `metal: kernel t: compiling nosuch.metal: kernels: no MSL for family "nosuch": open nosuch.metal: file does not exist`},
		{"panic", encodeWith(func(l *kernels.Launch, e kernels.Encoder) {
			bind(l, e)
			_ = l.Params.(*kernels.RoPEParams)
		}), "metal: kernel t: Encode panicked: interface conversion: interface {} is *kernels.ArangeParams, not *kernels.RoPEParams"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.maxThr = 256
			r := newRunner(f, GPUOptions{CommitEvery: 50})
			batch := []kernels.Launch{arange(f, kernels.Float32, 4, 0), tc.launch(f), arange(f, kernels.Int32, 4, 0)}
			err := r.run(batch)
			require.EqualError(t, err, tc.want)
			if tc.name != "no kernel" {
				var ke *KernelError
				require.ErrorAs(t, err, &ke)
			}
			// The launch before ran; the one after was never encoded.
			assert.Equal(t, 1, count(f.ops, "threads [4 1 1]"), "ops %q", f.ops)
			assert.Equal(t, 0, count(f.ops, "pipeline arange_int32"), "ops %q", f.ops)
			assert.Equal(t, []string{"commit", "wait"}, f.ops[len(f.ops)-2:])

			// The encoder starts clean for the next batch.
			f.ops = nil
			require.NoError(t, r.run(batch[2:]))
		})
	}
}

func TestRunErrorKinds(t *testing.T) {
	f := newFake()
	r := newRunner(f, GPUOptions{CommitEvery: 50})
	l := arange(f, kernels.Float32, 4, 0)
	l.Kernel = &kernels.Kernel{Name: "binary_add", CPU: func(*kernels.Launch) {}}
	err := r.run([]kernels.Launch{l})
	assert.ErrorIs(t, err, ErrNoEncode)

	l = arange(f, kernels.Float32, 4, 0)
	l.Kernel = testKernel("t", func(l *kernels.Launch, e kernels.Encoder) { e.Entry("nope") })
	var ce *CompileError
	require.ErrorAs(t, r.run([]kernels.Launch{l}), &ce)
	assert.Equal(t, CompileError{Family: "arange", Entry: "nope", Err: ce.Err}, *ce)
}

// A family that does not compile is compiled once; every kernel that needs it
// then fails with the compiler's message.
func TestRunCompileErrorIsCached(t *testing.T) {
	f := newFake()
	f.libErr = errors.New("program_source:12:5: error: use of undeclared identifier 'x'")
	r := newRunner(f, GPUOptions{CommitEvery: 50})
	for range 2 {
		err := r.run([]kernels.Launch{arange(f, kernels.Float32, 4, 0)})
		require.EqualError(t, err, "metal: kernel arange: compiling arange.metal: program_source:12:5: error: use of undeclared identifier 'x'")
		var ce *CompileError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, "arange", ce.Family)
		assert.Empty(t, ce.Entry)
	}
	assert.Equal(t, 1, f.compiles["arange"])
	assert.Equal(t, 0, count(f.ops, "threads"))
}

func TestRunReportsFailedCommandBuffer(t *testing.T) {
	f := newFake()
	f.failAt = 1
	r := newRunner(f, GPUOptions{CommitEvery: 2})
	var batch []kernels.Launch
	for range 5 {
		batch = append(batch, arange(f, kernels.Float32, 4, 0))
	}
	err := r.run(batch)
	require.EqualError(t, err, "metal: command buffer of launches 2 to 3 of 5 (arange to arange) failed: page fault")
	assert.Equal(t, 3, count(f.ops, "commit"))
}

func TestGPUOptionsDefaults(t *testing.T) {
	o, err := GPUOptions{}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, 50, o.CommitEvery)
	o, err = GPUOptions{CommitEvery: 7}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, 7, o.CommitEvery)
	_, err = GPUOptions{CommitEvery: -1}.withDefaults()
	require.EqualError(t, err, "metal: GPUOptions.CommitEvery is -1; want 0 (for 50) or more")
}

// TestRunPanicWaitsForCommitted: a panic mid-batch still waits for the command
// buffers already committed before the batch's buffers can be reused.
func TestRunPanicWaitsForCommitted(t *testing.T) {
	f := newFake()
	f.panicOn = 3
	r := newRunner(f, GPUOptions{CommitEvery: 1})
	batch := []kernels.Launch{arange(f, kernels.Float32, 8, 0), arange(f, kernels.Float32, 8, 0), arange(f, kernels.Float32, 8, 0)}
	err := r.runBatch(batch)
	require.EqualError(t, err, "metal: run failed: the command buffer is nil")
	require.Equal(t, "reset: end the open pass, wait for 2 committed", f.ops[len(f.ops)-1])
	require.Equal(t, 2, count(f.ops, "commit"))

	f.panicOn = 0 // the runner works again
	require.NoError(t, r.runBatch(batch[:1]))
	require.Equal(t, "wait", f.ops[len(f.ops)-1])
}

// TestRunBindsEmptyViewsAsNil: an empty array is bound as nil, even when it is a view
// at the very end of a real buffer (offset == length, which the validation layer
// rejects).
func TestRunBindsEmptyViewsAsNil(t *testing.T) {
	f := newFake()
	r := newRunner(f, GPUOptions{})
	l := arange(f, kernels.Float32, 4, 0)
	l.Args[0].Layout = kernels.Contiguous(kernels.Float32, 0)
	l.Args[0].Offset = 4 // the end of its 16-byte buffer
	require.NoError(t, r.runBatch([]kernels.Launch{l}))
	require.Contains(t, f.ops, "buffer 0 = nil")
}
