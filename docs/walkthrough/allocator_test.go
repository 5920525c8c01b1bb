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
	must := func(b *alloc.Buffer, err error) *alloc.Buffer {
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
