package alloc_test

import (
	"testing"
	"unsafe"

	"github.com/ingotml/ingot/alloc"
)

func TestCPUProvider(t *testing.T) {
	p := alloc.CPUProvider()
	eq(t, p.Name(), "cpu", "Name")
	if p.RecommendedWorkingSet() <= 0 || p.MaxBufferLength() != p.RecommendedWorkingSet() {
		t.Fatalf("working set %d, max buffer %d", p.RecommendedWorkingSet(), p.MaxBufferLength())
	}
	for _, n := range []int{1, 4, 5, 17, 4096, 32 << 10, 1<<20 + 4} {
		r, err := p.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		b := r.Bytes()
		eq(t, len(b), n, "len")
		eq(t, cap(b), n, "cap")
		eq(t, uintptr(unsafe.Pointer(&b[0]))%8, 0, "alignment")
		if n >= 32<<10 { // the runtime gives whole pages
			eq(t, uintptr(unsafe.Pointer(&b[0]))%4096, 0, "page alignment")
		}
		for i := range b {
			b[i] = 0xff
		}
		r.Release()
		if r.Bytes() != nil {
			t.Fatalf("released raw still has bytes")
		}
	}
	if _, err := p.Alloc(0); err == nil {
		t.Fatalf("Alloc(0) succeeded")
	}
}

func TestCPUAllocatorRoundTrip(t *testing.T) {
	a := alloc.New(alloc.CPUProvider(), alloc.Config{ResourceLimit: 3})
	b := mustMalloc(t, a, 4)
	copy(b.Bytes(), []byte{1, 2, 3, 4})
	a.Free(b)
	c := mustMalloc(t, a, 4)
	if c.Raw() != b.Raw() {
		t.Fatalf("expected a cache hit")
	}
	eqSlice(t, c.Bytes(), []byte{1, 2, 3, 4}, "reused contents") // not cleared, as in MLX
	mustMalloc(t, a, 4)
	mustMalloc(t, a, 4)
	_, err := a.Malloc(4)
	eq(t, err.Error(), "[metal::malloc] Resource limit (3) exceeded.", "error")
}
