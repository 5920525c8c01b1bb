package walkthrough_test

import (
	"fmt"
	"runtime"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// Example_deadChain is page 3: `lp = lp - 1` with nothing ever reading lp. Every step
// adds a node and pins a fresh scalar, until the resource limit stops it.
func Example_deadChain() {
	const limit = 1000
	g := graph.NewCPU(graph.Options{Alloc: alloc.Config{ResourceLimit: limit}})
	lp := tensor.FromInt32(g, []int32{0}, 1) // a cache's left_padding
	base := live(g)
	fmt.Printf("baseline %d live; predicted failure at step %d\n", base, limit-base+1)

	for step := 1; ; step++ {
		lp = tensor.SubScalar(lp, 1) // left_padding -= 1: a new node and a new scalar
		if err := lp.Err(); err != nil {
			fmt.Printf("step %d: %v\n", step, err)
			break
		}
		if step%250 == 0 {
			fmt.Printf("step %4d: %4d live buffers, %4d nodes\n", step, live(g), g.Stats().Nodes)
		}
	}
	fmt.Println("count at failure:", g.Allocator().ActiveBufferCount())
	fmt.Println("next Synchronize:", g.Synchronize()) // the recorded error, once

	lp = tensor.FromInt32(g, []int32{0}, 1) // drop the chain: lp is a fresh array
	fmt.Printf("chain dropped: %d live buffers, %d nodes\n", live(g), g.Stats().Nodes)
	runtime.KeepAlive(lp)
	// Output:
	// baseline 1 live; predicted failure at step 1000
	// step  250:  251 live buffers,  501 nodes
	// step  500:  501 live buffers, 1001 nodes
	// step  750:  751 live buffers, 1501 nodes
	// step 1000: [metal::malloc] Resource limit (1000) exceeded.
	// count at failure: 1000
	// next Synchronize: [metal::malloc] Resource limit (1000) exceeded.
	// chain dropped: 1 live buffers, 1 nodes
}

// Example_deadChainEvaluated: evaluating the chain's newest node computes it, detaches
// every link, and frees all the scalars at once.
func Example_deadChainEvaluated() {
	g := graph.NewCPU(graph.Options{})
	lp := tensor.FromInt32(g, []int32{0, 0}, 2)
	for i := 0; i < 500; i++ {
		lp = tensor.SubScalar(lp, 1)
	}
	fmt.Printf("500 links:   %3d live buffers, %4d nodes\n", live(g), g.Stats().Nodes)

	v, err := lp.Int32s() // reading the head evaluates it
	if err != nil {
		panic(err)
	}
	fmt.Printf("head read:   %3d live buffers, %4d nodes, lp = %v\n", live(g), g.Stats().Nodes, v)

	// The same chain, evaluated every step: it never grows.
	for i := 0; i < 500; i++ {
		lp = tensor.SubScalar(lp, 1)
		if err := tensor.Eval(lp); err != nil {
			panic(err)
		}
	}
	v, _ = lp.Int32s()
	fmt.Printf("eval each:   %3d live buffers, %4d nodes, lp = %v\n", live(g), g.Stats().Nodes, v)
	runtime.KeepAlive(lp) // hold lp to the end, so the counts include it
	// Output:
	// 500 links:   501 live buffers, 1001 nodes
	// head read:     1 live buffers,    1 nodes, lp = [-500 -500]
	// eval each:     1 live buffers,    1 nodes, lp = [-1000 -1000]
}
