package alloc_test

import (
	"errors"
	"testing"

	"github.com/ingotml/ingot/alloc"
)

// TestAdoptCountsAsMalloc: an adopted buffer is counted exactly as Malloc counts one
// of the same size (count, rounded active bytes, size class, the resource limit at
// the same count), its bytes are the caller's, it never enters the cache, and Free
// calls its release once.
func TestAdoptCountsAsMalloc(t *testing.T) {
	sizes := []int{4, 4096, 20000, 1 << 20}
	m := alloc.New(newFake(), alloc.Config{ResourceLimit: 10})
	a := alloc.New(newFake(), alloc.Config{ResourceLimit: 10})
	var bufs []alloc.Buffer
	released := 0
	for _, n := range sizes {
		mustMalloc(t, m, n)
		data := make([]byte, n)
		b, err := a.Adopt(data, func() { released++ })
		if err != nil {
			t.Fatal(err)
		}
		if &b.Bytes()[0] != &data[0] || b.Len() != n {
			t.Fatalf("adopted %d bytes: the buffer is not the caller's memory", n)
		}
		bufs = append(bufs, b)
	}
	eq(t, a.ActiveBufferCount(), m.ActiveBufferCount(), "count")
	eq(t, a.ActiveMemory(), m.ActiveMemory(), "active bytes (rounded as Malloc rounds)")
	eqSlice(t, a.Histogram(), m.Histogram(), "size classes")
	for i := len(sizes); i < 10; i++ {
		if _, err := a.Adopt(make([]byte, 8), nil); err != nil {
			t.Fatal(err)
		}
	}
	_, err := a.Adopt(make([]byte, 8), nil)
	var rle *alloc.ResourceLimitError
	if !errors.As(err, &rle) {
		t.Fatalf("adopt past the limit: %v, want *ResourceLimitError", err)
	}
	for _, b := range bufs {
		a.Free(b)
	}
	eq(t, released, len(sizes), "releases")
	eq(t, a.CacheBufferCount(), 0, "cached (adopted memory is never reused)")
	eq(t, a.ActiveBufferCount(), 10-len(sizes), "count after Free")
}
