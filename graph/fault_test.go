package graph_test

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/tensor"
)

var errInjected = errors.New("injected device failure")

// flakyDevice is the CPU device whose Run fails on one chosen call (1-based), writing
// nothing; that call can be held until gate is closed, so later batches queue behind it.
type flakyDevice struct {
	graph.Device
	calls  atomic.Int32
	failAt atomic.Int32
	gate   chan struct{}
}

func (d *flakyDevice) Run(b []kernels.Launch) error {
	if d.calls.Add(1) == d.failAt.Load() {
		if d.gate != nil {
			<-d.gate
		}
		return errInjected
	}
	return d.Device.Run(b)
}

// failNext makes the device's next Run fail.
func (d *flakyDevice) failNext() { d.failAt.Store(d.calls.Load() + 1) }

func values(t *testing.T, a tensor.Array) []float32 {
	t.Helper()
	v, err := a.Float32s()
	require.NoError(t, err)
	return v
}

// TestFailedBatchPoisonsDependents: after a failed Run, the arrays of that batch and
// every array computed from them carry the error, however late they are built; nothing
// reads their unwritten buffers; independent work and the counts recover.
func TestFailedBatchPoisonsDependents(t *testing.T) {
	dev := &flakyDevice{Device: graph.CPU()}
	g := graph.New(dev, graph.Options{})
	x := tensor.FromFloat32(g, []float32{1, 2, 3}, 3)
	base := live(t, g)
	// Leave a buffer holding other values in the cache, so a stale read would show.
	require.Equal(t, []float32{10, 20, 30}, values(t, tensor.MulScalar(x, 10)))

	dev.failNext()
	y := tensor.AddScalar(x, 1)
	require.ErrorIs(t, tensor.Eval(y), errInjected)
	_, err := y.Float32s()
	require.ErrorIs(t, err, errInjected, "the error stays with the array once returned")
	require.ErrorIs(t, y.Err(), errInjected)
	z := tensor.MulScalar(y, 2)
	require.ErrorIs(t, tensor.Eval(z), errInjected, "built after the failure, from a failed array")
	_, err = tensor.Reshape(y, 3, 1).Float32s()
	require.ErrorIs(t, err, errInjected, "views of it too")

	require.Equal(t, []float32{6, 7, 8}, values(t, tensor.AddScalar(x, 5)), "independent work runs")
	y, z = tensor.Array{}, tensor.Array{}
	require.Equal(t, base, live(t, g), "counts exact after the failure")
	runtime.KeepAlive(x)
}

// TestFailedBatchPoisonsQueuedBatches: a batch queued behind the failing one (scheduled
// before the failure was known) reads its unwritten buffers, so it is skipped and fails.
func TestFailedBatchPoisonsQueuedBatches(t *testing.T) {
	dev := &flakyDevice{Device: graph.CPU(), gate: make(chan struct{})}
	g := graph.New(dev, graph.Options{InFlight: 4})
	x := tensor.FromFloat32(g, []float32{1, 2, 3}, 3)
	base := live(t, g)
	require.Equal(t, []float32{10, 20, 30}, values(t, tensor.MulScalar(x, 10)))

	dev.failNext()
	y := tensor.AddScalar(x, 1)
	require.NoError(t, tensor.AsyncEval(y)) // the device holds this batch
	z := tensor.MulScalar(y, 2)
	require.NoError(t, tensor.AsyncEval(z)) // queued behind it, reading y's buffer
	w := tensor.AddScalar(z, 1)
	require.NoError(t, tensor.AsyncEval(w))
	close(dev.gate)

	_, err := w.Float32s()
	require.ErrorIs(t, err, errInjected)
	_, err = z.Float32s()
	require.ErrorIs(t, err, errInjected)
	_, err = y.Float32s()
	require.ErrorIs(t, err, errInjected)
	require.ErrorIs(t, tensor.Eval(tensor.Sum(w, 0, false)), errInjected)

	require.Equal(t, []float32{2, 3, 4}, values(t, tensor.AddScalar(x, 1)), "later batches run again")
	y, z, w = tensor.Array{}, tensor.Array{}, tensor.Array{}
	require.Equal(t, base, live(t, g))
	runtime.KeepAlive(x)
}

// TestKernelPanicFailsItsBatch: a Go twin's panic on the CPU device fails its batch:
// the launches after it in the batch never ran, so their arrays carry the error too.
func TestKernelPanicFailsItsBatch(t *testing.T) {
	var boom atomic.Bool
	k := &kernels.Kernel{Name: "test_boom", CPU: func(l *kernels.Launch) {
		if boom.Load() {
			panic("boom")
		}
		copy(l.Out().Data, l.In(0).Data)
	}}
	g := graph.NewCPU(graph.Options{})
	x := tensor.FromFloat32(g, []float32{1, 2, 3}, 3)
	base := live(t, g)
	require.Equal(t, []float32{10, 20, 30}, values(t, tensor.MulScalar(x, 10)))

	boom.Store(true)
	p := tensor.Wrap(g.Apply(k, nil, tensor.Float32, []int{3}, x.Handle()))
	q := tensor.AddScalar(x, 1) // after p in the same batch: never runs
	const want = "graph: cpu kernel test_boom failed: boom"
	require.EqualError(t, tensor.Eval(p, q), want)
	_, err := q.Float32s()
	require.EqualError(t, err, want)
	_, err = tensor.AddScalar(p, 1).Float32s()
	require.EqualError(t, err, want)

	boom.Store(false)
	require.Equal(t, []float32{1, 2, 3}, values(t, tensor.Wrap(g.Apply(k, nil, tensor.Float32, []int{3}, x.Handle()))))
	p, q = tensor.Array{}, tensor.Array{}
	require.Equal(t, base, live(t, g))
	runtime.KeepAlive(x)
}

// TestEvalNilArrays: a nil handle or a zero Array is an error, not a nil dereference.
func TestEvalNilArrays(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	require.EqualError(t, g.Eval(nil), "graph: Eval argument 0: graph: nil array (an Array that was never built)")
	require.ErrorIs(t, g.AsyncEval(nil), graph.ErrNilArray)
	_, _, err := g.Bytes(nil)
	require.ErrorIs(t, err, graph.ErrNilArray)
	x := tensor.FromFloat32(g, []float32{1}, 1)
	require.EqualError(t, tensor.Eval(x, tensor.Array{}), "tensor: Eval argument 1: graph: nil array (an Array that was never built)")
	require.ErrorIs(t, tensor.Eval(tensor.Array{}), graph.ErrNilArray)
	require.ErrorIs(t, tensor.AsyncEval(tensor.Array{}, x), graph.ErrNilArray)
	require.Equal(t, []float32{1}, values(t, x))
}

// TestConcurrentEvalIsSerialized: two goroutines evaluating and reading on one graph
// wait for each other; values and counts stay exact (run with -race).
func TestConcurrentEvalIsSerialized(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	x := tensor.FromFloat32(g, []float32{1, 2, 3, 4}, 4)
	base := live(t, g)
	const chains, links = 2, 200
	outs := make([][]tensor.Array, chains)
	for c := range outs { // built on this goroutine: building is single-goroutine
		for i := 0; i < 20; i++ {
			y := x
			for j := 0; j < links; j++ {
				y = tensor.AddScalar(y, 1)
			}
			outs[c] = append(outs[c], y)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, chains)
	for c := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, y := range outs[c] {
				if err := tensor.Eval(y); err != nil {
					errs[c] = err
					return
				}
				v, err := y.Float32s()
				if err != nil || v[0] != 1+links || v[3] != 4+links {
					errs[c] = errors.Join(err, errors.New("wrong values"))
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	outs = nil
	require.Equal(t, base, live(t, g))
	runtime.KeepAlive(x)
}
