package metal

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// fakeCompile is a goroutine-safe compile for startBuilds: a fakeLib holding the
// kernel functions the family's source declares, after hold (if any) is closed, or
// fail's error for a family fail names.
func fakeCompile(f *fakeBackend, calls *atomic.Int32, hold map[string]chan struct{}, fail map[string]error) func(family, source string) (library, error) {
	return func(family, source string) (library, error) {
		calls.Add(1)
		if ch := hold[family]; ch != nil {
			<-ch
		}
		if err := fail[family]; err != nil {
			return nil, err
		}
		l := &fakeLib{f: f}
		for _, m := range kernelDecl.FindAllStringSubmatch(source, -1) {
			l.entries = append(l.entries, m[1])
		}
		sort.Strings(l.entries)
		return l, nil
	}
}

// TestBuildsFirstFailureInOrder: every family is compiled (in the background); Ready's
// error names the first failing family in name order, worded as Accept's refusals.
// The old NewGPU compiled every family before it returned.
func TestBuildsFirstFailureInOrder(t *testing.T) {
	fams := Families()
	require.Contains(t, fams, "sdpa")
	require.Contains(t, fams, "unary")
	var calls atomic.Int32
	s := startBuilds(fams, 4, fakeCompile(newFake(), &calls, nil, map[string]error{
		"sdpa":  errors.New("program_source:12:3: error: use of undeclared identifier 'x'"),
		"unary": errors.New("unary is broken"),
	}))
	err := readyError("Apple M2 Max", s)
	require.Equal(t, len(fams), int(calls.Load()), "every family compiled")
	require.EqualError(t, err, "metal: no Metal device: Apple M2 Max: compiling sdpa.metal: program_source:12:3: error: use of undeclared identifier 'x'")
	require.ErrorIs(t, err, ErrUnavailable)
	var ce *CompileError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "sdpa", ce.Family)
	for _, f := range fams {
		assert.True(t, s.finished(f), "family %s", f)
	}

	ok := startBuilds(fams, 2, fakeCompile(newFake(), &calls, nil, nil))
	require.NoError(t, readyError("Apple M2 Max", ok))
}

// TestFirstDispatchWaitsForItsFamilyOnly: startBuilds returns while the compiles run;
// a batch of arange runs while sdpa's compile is still held, without compiling arange
// again; a batch that needs sdpa waits until sdpa's compile ends.
func TestFirstDispatchWaitsForItsFamilyOnly(t *testing.T) {
	f := newFake()
	var calls atomic.Int32
	hold := map[string]chan struct{}{"sdpa": make(chan struct{})}
	start := time.Now()
	s := startBuilds(Families(), 4, fakeCompile(f, &calls, hold, nil))
	require.Less(t, time.Since(start), time.Second, "startBuilds does not wait for the compiles")

	r := newRunner(f, GPUOptions{CommitEvery: 50})
	r.cache.builds = s
	require.NoError(t, r.run([]kernels.Launch{arange(f, kernels.Float32, 4, 0)}))
	assert.False(t, s.finished("sdpa"), "arange's dispatch did not wait for sdpa")
	assert.Empty(t, f.compiles, "arange's library came from the background build")
	assert.Equal(t, map[string]int{"arange_float32": 1}, f.pipelines)

	// A kernel of the sdpa family waits for sdpa's build: Entry blocks until it ends.
	sdpa := testKernel("t_sdpa", func(l *kernels.Launch, e kernels.Encoder) { e.Entry("nope") })
	sdpa.Family = "sdpa"
	l := arange(f, kernels.Float32, 4, 0)
	l.Kernel = sdpa
	done := make(chan error, 1)
	go func() { done <- r.run([]kernels.Launch{l}) }()
	select {
	case err := <-done:
		t.Fatalf("the sdpa launch ran before sdpa compiled: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(hold["sdpa"])
	err := <-done
	var sdpaFns []string
	for _, m := range kernelDecl.FindAllStringSubmatch(mustSource(t, "sdpa"), -1) {
		sdpaFns = append(sdpaFns, m[1])
	}
	sort.Strings(sdpaFns)
	require.EqualError(t, err, fmt.Sprintf("metal: kernel t_sdpa: pipeline for nope of sdpa.metal: no function named nope (it has %s)", strings.Join(sdpaFns, ", ")))
	require.NoError(t, readyError("Apple M2 Max", s))
}

// TestCompileErrorBeforeFirstToken: a family that fails in the background refuses the
// device at Ready, with the family named, and a launch of that family fails with it as
// a *KernelError; the other families still run.
func TestCompileErrorBeforeFirstToken(t *testing.T) {
	f := newFake()
	var calls atomic.Int32
	s := startBuilds(Families(), 4, fakeCompile(f, &calls, nil, map[string]error{
		"arange": errors.New("program_source:3:1: error: unknown type name 'flaot'"),
	}))
	require.EqualError(t, readyError("Apple M2 Max", s),
		"metal: no Metal device: Apple M2 Max: compiling arange.metal: program_source:3:1: error: unknown type name 'flaot'")

	r := newRunner(f, GPUOptions{CommitEvery: 50})
	r.cache.builds = s
	err := r.run([]kernels.Launch{arange(f, kernels.Float32, 4, 0)})
	require.EqualError(t, err, "metal: kernel arange: compiling arange.metal: program_source:3:1: error: unknown type name 'flaot'")
	var ke *KernelError
	require.ErrorAs(t, err, &ke)
	var ce *CompileError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "arange", ce.Family)
	assert.Empty(t, f.compiles, "the failed family is not compiled again at its dispatch")
}

func mustSource(t *testing.T, family string) string {
	t.Helper()
	src, err := kernels.Source(family)
	require.NoError(t, err)
	return src
}
