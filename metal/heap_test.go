package metal

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/alloc"
)

// heapSim is a provider that runs heapPolicy.place as buffer_darwin.go does,
// over a simulated MTLHeap: each sub-allocation takes its size rounded up to
// heapSimAlign, and a released one gives its space back.
type heapSim struct {
	policy     heapPolicy
	refuseHeap bool // the device refuses the heap
	refuseAll  bool // the device refuses every buffer
	heapsMade  int  // newHeap calls that succeeded
	heapAsks   int  // newHeap calls
	heapUsed   int  // bytes of the heap in use
}

const heapSimAlign = 256

type heapSimRaw struct {
	s    *heapSim
	src  source
	data []byte
}

func (s *heapSim) Name() string                 { return "metal" }
func (s *heapSim) MaxBufferLength() int64       { return 1 << 30 }
func (s *heapSim) RecommendedWorkingSet() int64 { return 8 << 30 }

func (s *heapSim) Alloc(n int) (alloc.Raw, error) {
	need := (n + heapSimAlign - 1) &^ (heapSimAlign - 1)
	src, ok := s.policy.place(n,
		func() bool {
			s.heapAsks++
			if s.refuseHeap {
				return false
			}
			s.heapsMade++
			return true
		},
		func() bool {
			if s.heapUsed+need > smallHeapSize {
				return false
			}
			s.heapUsed += need
			return true
		},
		func() bool { return !s.refuseAll })
	if !ok {
		return nil, errRefused
	}
	return &heapSimRaw{s: s, src: src, data: make([]byte, n)}, nil
}

var errRefused = errors.New("refused")

func (r *heapSimRaw) Bytes() []byte { return r.data }

func (r *heapSimRaw) Release() {
	if r.data == nil {
		return
	}
	if r.src == fromHeap {
		r.s.heapUsed -= (len(r.data) + heapSimAlign - 1) &^ (heapSimAlign - 1)
	}
	r.s.policy.released(r.src)
	r.data = nil
}

func TestHeapPolicyPlan(t *testing.T) {
	p := heapPolicy{usable: true}
	require.Equal(t, useDevice, p.plan(256))
	require.Equal(t, makeHeapThenUse, p.plan(4))
	p.heapMade(true)
	require.Equal(t, useHeap, p.plan(255))
	require.Equal(t, useDevice, p.plan(256))
	require.Equal(t, 1, p.heaps())
	require.Equal(t, int64(1<<20), p.heapBytes())

	p = heapPolicy{usable: true}
	p.heapMade(false) // refused once: never asked again
	require.Equal(t, useDevice, p.plan(4))
	require.Equal(t, 0, p.heaps())
	require.Equal(t, int64(0), p.heapBytes())

	p = heapPolicy{usable: false} // a paravirtual GPU
	require.Equal(t, useDevice, p.plan(4))
}

// TestOneHeapFor500kSmallBuffers: 500,000 leaked 4-byte buffers (the repro's
// leak) fill the one heap, then come from the device: one heap whatever the
// count, and one buffer object per buffer in the allocator's books and the
// provider's.
func TestOneHeapFor500kSmallBuffers(t *testing.T) {
	const n = 500_000
	s := &heapSim{policy: heapPolicy{usable: true}}
	a := alloc.New(s, alloc.Config{ResourceLimit: n})
	bufs := make([]alloc.Buffer, 0, n)
	for i := range n {
		b, err := a.Malloc(4)
		require.NoError(t, err, "malloc %d", i)
		bufs = append(bufs, b)
	}
	const inHeap = smallHeapSize / heapSimAlign // 4096
	require.Equal(t, 1, s.heapAsks)
	require.Equal(t, 1, s.heapsMade)
	require.Equal(t, 1, s.policy.heaps())
	require.Equal(t, int64(smallHeapSize), s.policy.heapBytes())
	require.Equal(t, [2]int{n - inHeap, inHeap}, s.policy.live) // by source: device, heap
	require.Equal(t, n, s.policy.buffers())
	require.Equal(t, n, a.ActiveBufferCount())
	require.Equal(t, int64(4*n), a.ActiveMemory())

	// The limit binds at the same count as with any provider.
	_, err := a.Malloc(4)
	require.EqualError(t, err, "[metal::malloc] Resource limit (500000) exceeded.")

	for _, b := range bufs {
		a.Free(b)
	}
	a.ClearCache()
	require.Equal(t, 0, a.ActiveBufferCount())
	require.Equal(t, 0, s.policy.buffers())
	require.Equal(t, 0, s.heapUsed)
	require.Equal(t, 1, s.policy.heaps()) // kept for the next small buffers

	// The space came back: the next small buffer is in the heap again.
	b, err := a.Malloc(4)
	require.NoError(t, err)
	require.Equal(t, [2]int{0, 1}, s.policy.live)
	require.Equal(t, 1, s.heapAsks)
	a.Free(b)
}

// TestHeapRefused: a device that refuses the heap is asked once; every buffer
// then comes from the device. A device refusing the buffer too is an error.
func TestHeapRefused(t *testing.T) {
	s := &heapSim{policy: heapPolicy{usable: true}, refuseHeap: true}
	for range 100 {
		_, err := s.Alloc(4)
		require.NoError(t, err)
	}
	require.Equal(t, 1, s.heapAsks)
	require.Equal(t, 0, s.policy.heaps())
	require.Equal(t, [2]int{100, 0}, s.policy.live)

	s.refuseAll = true
	_, err := s.Alloc(4)
	require.ErrorIs(t, err, errRefused)
	require.Equal(t, 100, s.policy.buffers())
}
