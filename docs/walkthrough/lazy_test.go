package walkthrough_test

import (
	"fmt"
	"runtime"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// Example_lazyArrays is page 1: ops build nodes and allocate nothing, a scalar
// allocates at once, eval computes and detaches, and a view shares its input's buffer.
func Example_lazyArrays() {
	g := graph.NewCPU(graph.Options{})
	show := func(step string) {
		// Counts are exact only after Synchronize (it waits for the device and lets
		// Go's garbage collector report the handles the program dropped).
		if err := g.Synchronize(); err != nil {
			panic(err)
		}
		al := g.Allocator()
		fmt.Printf("%-18s live buffers %d (+%d cached), nodes %d\n",
			step, al.LiveBufferCount(), al.CacheBufferCount(), g.Stats().Nodes)
	}

	a := tensor.FromFloat32(g, []float32{1, 2, 3}, 3)
	show("a from host data")

	x := a
	for i := 0; i < 100; i++ {
		x = tensor.Add(x, a)
	}
	show("100 lazy adds")

	x = tensor.AddScalar(x, 1) // the 1 becomes a 0-d array with its own buffer, now
	show("x = x + 1")
	fmt.Println("x inputs before eval:", x.Handle().Node().NumInputs())

	if err := tensor.Eval(x); err != nil {
		panic(err)
	}
	show("eval(x)")
	fmt.Println("x inputs after eval: ", x.Handle().Node().NumInputs())

	v := tensor.Reshape(x, 3, 1) // a view: same buffer, new shape
	vals, err := v.Float32s()
	if err != nil {
		panic(err)
	}
	show("v = reshape(x)")
	fmt.Println("v =", vals, "shape", v.Shape())

	// Go frees a variable's array after its last use; keep a and x to the end so the
	// counts above include them.
	runtime.KeepAlive(a)
	runtime.KeepAlive(x)
	// Output:
	// a from host data   live buffers 1 (+0 cached), nodes 1
	// 100 lazy adds      live buffers 1 (+0 cached), nodes 101
	// x = x + 1          live buffers 2 (+0 cached), nodes 103
	// x inputs before eval: 2
	// eval(x)            live buffers 2 (+1 cached), nodes 2
	// x inputs after eval:  0
	// v = reshape(x)     live buffers 2 (+1 cached), nodes 3
	// v = [102 203 304] shape [3 1]
}
