package walkthrough_test

import (
	"errors"
	"fmt"

	"github.com/ingotml/ingot/alloc"
)

// Example_allocatorCounts is page 2: the allocator counts buffer objects, live plus
// cached, and a cache miss compares that count with the resource limit.
func Example_allocatorCounts() {
	a := alloc.New(alloc.CPUProvider(), alloc.Config{ResourceLimit: 4})
	show := func(step string) {
		fmt.Printf("%-26s count %d = live %d + cached %d\n",
			step, a.ActiveBufferCount(), a.LiveBufferCount(), a.CacheBufferCount())
	}
	must := func(b alloc.Buffer, err error) alloc.Buffer {
		if err != nil {
			panic(err)
		}
		return b
	}

	b1 := must(a.Malloc(4))
	must(a.Malloc(4))
	must(a.Malloc(100))
	show("malloc 4, 4, 100")

	a.Free(b1)
	show("free a 4-byte buffer")

	b4 := must(a.Malloc(4))
	show("malloc 4 (cache hit)")

	a.Free(b4)
	must(a.Malloc(8))
	show("free it, malloc 8 (miss)")

	must(a.Malloc(2))
	show("malloc 2 (drops the cache)")

	_, err := a.Malloc(4)
	show("malloc 4 (fails)")
	fmt.Println(err)
	var rle *alloc.ResourceLimitError
	fmt.Println("typed:", errors.As(err, &rle), rle.Limit)
	// Output:
	// malloc 4, 4, 100           count 3 = live 3 + cached 0
	// free a 4-byte buffer       count 3 = live 2 + cached 1
	// malloc 4 (cache hit)       count 3 = live 3 + cached 0
	// free it, malloc 8 (miss)   count 4 = live 3 + cached 1
	// malloc 2 (drops the cache) count 4 = live 4 + cached 0
	// malloc 4 (fails)           count 4 = live 4 + cached 0
	// [metal::malloc] Resource limit (4) exceeded.
	// typed: true 4
}

// Example_allocatorReuseWindow shows which cached buffer a request may reuse: the
// smallest cached length >= the request, only if it is below min(2*size, size+32768).
func Example_allocatorReuseWindow() {
	for _, c := range []struct{ cached, request int }{
		{4, 4}, {7, 4}, {8, 4}, {32768, 16384}, {49152, 32768}, {114688, 98304},
	} {
		a := alloc.New(alloc.CPUProvider(), alloc.Config{})
		b, err := a.Malloc(c.cached)
		if err != nil {
			panic(err)
		}
		a.Free(b)
		if _, err := a.Malloc(c.request); err != nil {
			panic(err)
		}
		verdict := "miss (new buffer)"
		if a.ActiveBufferCount() == 1 {
			verdict = "hit (reused)"
		}
		fmt.Printf("cached %6d bytes, request %6d: %s\n", c.cached, c.request, verdict)
	}
	// Output:
	// cached      4 bytes, request      4: hit (reused)
	// cached      7 bytes, request      4: hit (reused)
	// cached      8 bytes, request      4: miss (new buffer)
	// cached  32768 bytes, request  16384: miss (new buffer)
	// cached  49152 bytes, request  32768: hit (reused)
	// cached 114688 bytes, request  98304: hit (reused)
}

// Example_allocatorBytesVsCount: a hundred thousand 4-byte buffers barely move the
// bytes, but they are a fifth of the default resource limit.
func Example_allocatorBytesVsCount() {
	// The default limit, set explicitly so that $INGOT_RESOURCE_LIMIT cannot change it.
	a := alloc.New(alloc.CPUProvider(), alloc.Config{ResourceLimit: alloc.DefaultResourceLimit})
	show := func(step string) {
		fmt.Printf("%-28s %7d objects of %d, active %.1f MiB\n",
			step, a.ActiveBufferCount(), a.ResourceLimit(), float64(a.ActiveMemory())/(1<<20))
	}
	if _, err := a.Malloc(64 << 20); err != nil { // stands in for the weights
		panic(err)
	}
	show("one 64 MiB buffer")
	for i := 0; i < 100000; i++ {
		if _, err := a.Malloc(4); err != nil {
			panic(err)
		}
	}
	show("plus 100,000 4-byte scalars")
	for _, c := range a.Histogram() {
		fmt.Printf("  size class %9d B: %6d live\n", c.Bytes, c.Count)
	}
	// Output:
	// one 64 MiB buffer                  1 objects of 499000, active 64.0 MiB
	// plus 100,000 4-byte scalars   100001 objects of 499000, active 64.4 MiB
	//   size class         4 B: 100000 live
	//   size class  67108864 B:      1 live
}
