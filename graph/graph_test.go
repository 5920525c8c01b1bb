package graph_test

import (
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/tensor"
)

func live(t *testing.T, g *graph.Graph) int {
	t.Helper()
	require.NoError(t, g.Synchronize())
	return g.Allocator().LiveBufferCount()
}

func seq(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i) * 0.25
	}
	return v
}

func TestViewsShareBuffers(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	x := tensor.FromFloat32(g, seq(24), 2, 3, 4)
	base := live(t, g)
	// x[1] is contiguous, so the reshape is a view too.
	v := tensor.Transpose(tensor.Reshape(tensor.Slice(x, []int{1}, []int{2}), 3, 4), 1, 0)
	require.NoError(t, tensor.Eval(v))
	require.Equal(t, base, live(t, g), "views allocate nothing")
	got, err := v.Float32s()
	require.NoError(t, err)
	require.Equal(t, []float32{3, 4, 5}, got[:3]) // v[0,:] = x[1,:,0]
	require.Equal(t, float32(3.25), got[3])       // v[1,0] = x[1,0,1]
	runtime.KeepAlive(x)
}

func TestIntermediatesFreedAtEvalAndDonated(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	x := tensor.FromFloat32(g, seq(64), 64)
	base := live(t, g)
	var y tensor.Array
	tensor.WithScope(g, func() {
		y = tensor.Exp(x) // x is held by the program: a new buffer
		for i := 0; i < 10; i++ {
			y = tensor.Neg(y) // each link donates its input's buffer
		}
		y = tensor.Keep(y)
	})
	misses := g.Allocator().ActiveBufferCount()
	require.NoError(t, tensor.Eval(y))
	require.Equal(t, misses+1, g.Allocator().ActiveBufferCount(), "one output buffer for an 11-op chain")
	require.Equal(t, base+1, live(t, g))
	runtime.KeepAlive(x)
	runtime.KeepAlive(y)
}

func TestSyncAndAsyncCountsAgree(t *testing.T) {
	run := func(opt graph.Options) (int, int) {
		g := graph.NewCPU(opt)
		lp := tensor.FromInt32(g, []int32{3, 4}, 2)
		w := tensor.FromFloat32(g, seq(128), 2, 64)
		for i := 0; i < 200; i++ {
			lp = tensor.SubScalar(lp, 1)
			out := tensor.Exp(tensor.MulScalar(w, 2))
			require.NoError(t, tensor.AsyncEval(out))
		}
		require.NoError(t, g.Synchronize())
		runtime.KeepAlive(lp)
		runtime.KeepAlive(w)
		return g.Allocator().LiveBufferCount(), g.Stats().Nodes
	}
	l1, n1 := run(graph.Options{Sync: true})
	l2, n2 := run(graph.Options{})
	require.Equal(t, l1, l2)
	require.Equal(t, n1, n2)
	require.Equal(t, 2+200, l1, "weights, lp and one scalar per dead link")
}

func TestScopeReleasesUnlessKept(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	base := live(t, g)
	var kept, lost tensor.Array
	tensor.WithScope(g, func() {
		a := tensor.FromFloat32(g, seq(8), 8)
		lost = tensor.AddScalar(a, 1)
		kept = tensor.Keep(tensor.MulScalar(a, 2))
	})
	require.Equal(t, base+2, live(t, g), "kept's unevaluated node holds a and its scalar; lost's scalar is gone")
	v, err := kept.Float32s()
	require.NoError(t, err)
	require.Equal(t, float32(0.5), v[1])
	require.Equal(t, base+1, live(t, g), "after eval only kept's buffer remains")
	require.PanicsWithError(t, "graph: array used after its scope ended (Keep arrays that outlive a scope)", func() {
		_ = lost.Shape()
	})
	runtime.KeepAlive(kept)
}

func TestEvalFailureLeavesAllocatorConsistent(t *testing.T) {
	g := graph.NewCPU(graph.Options{Alloc: alloc.Config{ResourceLimit: 50}})
	x := tensor.FromFloat32(g, seq(4), 4)
	base := live(t, g)
	// 60 independent outputs held at once need 60 buffers: more than the limit.
	outs := make([]tensor.Array, 60)
	for i := range outs {
		outs[i] = tensor.Exp(x)
	}
	err := tensor.Eval(outs...)
	var rle *alloc.ResourceLimitError
	require.True(t, errors.As(err, &rle), "got %v", err)
	require.Equal(t, "[metal::malloc] Resource limit (50) exceeded.", err.Error())
	outs = nil
	require.Equal(t, base, live(t, g))
	y := tensor.AddScalar(x, 1)
	v, err := y.Float32s()
	require.NoError(t, err)
	require.Equal(t, []float32{1, 1.25, 1.5, 1.75}, v)
}

func TestMixingGraphsPanics(t *testing.T) {
	g1, g2 := graph.NewCPU(graph.Options{}), graph.NewCPU(graph.Options{})
	a := tensor.FromFloat32(g1, seq(2), 2)
	b := tensor.FromFloat32(g2, seq(2), 2)
	require.Panics(t, func() { tensor.Add(a, b) })
}

// limitedDevice is the CPU device with a device-reported object limit.
type limitedDevice struct {
	graph.Device
	limit int
}

func (d limitedDevice) ResourceLimit() int { return d.limit }

// TestDeviceResourceLimit: a device's own limit (Metal's sysctl) is the default; the
// environment variable and an explicit option win over it.
func TestDeviceResourceLimit(t *testing.T) {
	dev := limitedDevice{graph.CPU(), 1234}
	require.Equal(t, 1234, graph.New(dev, graph.Options{}).Allocator().ResourceLimit())
	require.Equal(t, 77, graph.New(dev, graph.Options{Alloc: alloc.Config{ResourceLimit: 77}}).Allocator().ResourceLimit())
	t.Setenv(alloc.ResourceLimitEnv, "555")
	require.Equal(t, 555, graph.New(dev, graph.Options{}).Allocator().ResourceLimit())
	require.Equal(t, 555, graph.NewCPU(graph.Options{}).Allocator().ResourceLimit())
}

// TestWideNode: a node with more inputs than a node holds inline (up to MaxArgs-1)
// evaluates, releases every input and is freed exactly.
func TestWideNode(t *testing.T) {
	const n = kernels.MaxArgs - 1
	sum := &kernels.Kernel{Name: "test_sum", CPU: func(l *kernels.Launch) {
		out := kernels.F32(l.Out().Data)
		for i := 0; i < l.NArgs-1; i++ {
			out[0] += kernels.F32(l.Args[i].Data)[0]
		}
	}}
	g := graph.NewCPU(graph.Options{})
	base := live(t, g)
	var y tensor.Array
	tensor.WithScope(g, func() {
		ins := make([]*graph.Handle, n)
		for i := range ins {
			ins[i] = tensor.AddScalar(tensor.FromFloat32(g, []float32{float32(i)}, 1), 1).Handle()
		}
		y = tensor.Keep(tensor.Wrap(g.Apply(sum, nil, tensor.Float32, []int{1}, ins...)))
	})
	v, err := y.Float32s()
	require.NoError(t, err)
	require.Equal(t, []float32{float32(n*(n-1)/2 + n)}, v)
	require.Equal(t, base+1, live(t, g))
	require.Equal(t, 1, g.Stats().Nodes)
	runtime.KeepAlive(y)
	require.Panics(t, func() {
		g.Apply(sum, nil, tensor.Float32, []int{1}, make([]*graph.Handle, kernels.MaxArgs)...)
	})
}
