package metal

import (
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

const testPage = 16384 // Apple silicon's page size

// pageAligned returns n bytes of Go memory starting on a testPage boundary, standing
// in for a file's mapping.
func pageAligned(n int) []byte {
	buf := make([]byte, n+testPage)
	skip := (testPage - int(uintptr(unsafe.Pointer(&buf[0]))%testPage)) % testPage
	return buf[skip : skip+n : skip+n]
}

// TestHostAlign: packed weights need 16 bytes, the rest their element size.
func TestHostAlign(t *testing.T) {
	assert.Equal(t, 16, hostAlign(kernels.UInt32), "packed weights: uint4 loads")
	assert.Equal(t, 2, hostAlign(kernels.BFloat16))
	assert.Equal(t, 4, hostAlign(kernels.Float32))
}

// TestPlanWindow: where a tensor is bound, or why it is copied.
func TestPlanWindow(t *testing.T) {
	const base = 0x100000000
	for _, c := range []struct {
		name           string
		base           uintptr
		mapLen, off, n int
		align, maxLen  int
		start, size    int
		why            string
	}{
		{"the whole file, rounded to pages", base, 40000, 4096, 100, 16, 1 << 30, 0, 49152, ""},
		{"the first tensor after an 8-byte header", base, 100, 16, 84, 16, 1 << 30, 0, testPage, ""},
		{"8-byte aligned float32", base, 40000, 4104, 8, 4, 1 << 30, 0, 49152, ""},
		{"8-byte aligned packed weights", base, 40000, 4104, 8, 16, 1 << 30, 0, 0,
			"the tensor at byte 4104 of its file is not 16-byte aligned"},
		{"a mapping off its page", base + 4096, 40000, 4096, 8, 16, 1 << 30, 0, 0,
			"the mapping at 0x100001000 is not page-aligned (16384-byte pages)"},
		{"outside", base, 100, 96, 8, 16, 1 << 30, 0, 0, "bytes 96 to 104 are outside the 100-byte mapping"},
		{"empty", base, 100, 16, 0, 16, 1 << 30, 0, 0, "an empty tensor"},
		{"a file over the largest buffer: a window from the tensor's page", base, 10 * testPage, 3*testPage + 32, 100, 16, 4 * testPage,
			3 * testPage, 4 * testPage, ""},
		{"the last window is cut at the file's end", base, 10*testPage - 5, 8 * testPage, 100, 16, 4 * testPage,
			8 * testPage, 2 * testPage, ""},
		{"a tensor larger than a window", base, 10 * testPage, 16, 4 * testPage, 16, 4 * testPage, 0, 0,
			"the tensor's 65536 bytes exceed the device's largest buffer (65536 bytes) from its page"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start, size, why := planWindow(c.base, c.mapLen, c.off, c.n, c.align, testPage, c.maxLen)
			assert.Equal(t, c.why, why)
			assert.Equal(t, c.start, start, "start")
			assert.Equal(t, c.size, size, "size")
		})
	}
}

// wrapRecorder is a hostMaps wrap and free that records the fake buffers it makes.
type wrapRecorder struct {
	wrapped []string // "start+size" relative to the mapping, in order
	freed   int
	live    int
	fail    error
}

func (w *wrapRecorder) maps(mapping []byte, maxLen int) *hostMaps {
	base := uintptr(unsafe.Pointer(&mapping[0]))
	return &hostMaps{page: testPage, maxLen: maxLen,
		wrap: func(p unsafe.Pointer, n int) (deviceBuffer, error) {
			if w.fail != nil {
				return nil, w.fail
			}
			w.wrapped = append(w.wrapped, fmt.Sprintf("%d+%d", uintptr(p)-base, n))
			w.live++
			return &fakeBuf{id: 2000 + len(w.wrapped), n: n}, nil
		},
		free: func(deviceBuffer) { w.freed++; w.live-- }}
}

// TestHostMapsOneBufferPerFile: every tensor of a file is bound in one buffer over the
// whole mapping, at its offset; the buffer goes with the last tensor's done; a tensor
// off the alignment is refused (copied by the caller) without wrapping anything.
func TestHostMapsOneBufferPerFile(t *testing.T) {
	mapping := pageAligned(3*testPage + 100)
	var w wrapRecorder
	m := w.maps(mapping, 1<<30)
	a, b := mapping[64:64+4096], mapping[2*testPage+32:2*testPage+32+800]
	doneA, why, ok := m.adopt(kernels.UInt32, a, mapping)
	require.True(t, ok, why)
	doneB, why, ok := m.adopt(kernels.UInt32, b, mapping)
	require.True(t, ok, why)
	require.Equal(t, []string{"0+65536"}, w.wrapped, "one buffer for the file, whole pages")

	buf, off, n, ok := m.lookup(&a[0])
	require.True(t, ok)
	assert.Equal(t, 2001, buf.(*fakeBuf).id)
	assert.Equal(t, []int{64, 4096}, []int{off, n})
	_, off, n, ok = m.lookup(&b[0])
	require.True(t, ok)
	assert.Equal(t, []int{2*testPage + 32, 800}, []int{off, n})

	_, why, ok = m.adopt(kernels.UInt32, mapping[72:80], mapping)
	require.False(t, ok)
	assert.Equal(t, "the tensor at byte 72 of its file is not 16-byte aligned", why)

	doneA()
	doneA() // a second call is a no-op
	_, _, _, ok = m.lookup(&a[0])
	assert.False(t, ok, "a's binding ends with its done")
	assert.Equal(t, 0, w.freed, "b still uses the buffer")
	doneB()
	assert.Equal(t, 1, w.freed)
	assert.Equal(t, 0, m.windows())

	w.fail = errors.New("the device refused")
	w.wrapped = nil
	calls := 0
	wrap := m.wrap
	m.wrap = func(p unsafe.Pointer, n int) (deviceBuffer, error) { calls++; return wrap(p, n) }
	for range 2 {
		_, why, ok = m.adopt(kernels.UInt32, a, mapping)
		require.False(t, ok)
		assert.Equal(t, "the device refused", why)
	}
	assert.Equal(t, 1, calls, "a refused window is not asked for again")
}

// TestHostMapsWindows: a file larger than the device's largest buffer is wrapped in
// windows, each made once, each tensor bound in one that holds it whole.
func TestHostMapsWindows(t *testing.T) {
	mapping := pageAligned(10 * testPage)
	var w wrapRecorder
	m := w.maps(mapping, 4*testPage)
	var dones []func()
	for _, off := range []int{16, 3*testPage + 32, 5 * testPage, 9 * testPage} {
		done, why, ok := m.adopt(kernels.Float16, mapping[off:off+256], mapping)
		require.True(t, ok, why)
		dones = append(dones, done)
	}
	// The tensor at 3 pages lies in the first window; the one at 9 pages is past the
	// second ([5, 9) pages), so a third starts at its page, cut at the file's end.
	assert.Equal(t, []string{"0+65536", "81920+65536", "147456+16384"}, w.wrapped)
	_, off, _, _ := m.lookup(&mapping[3*testPage+32])
	assert.Equal(t, 3*testPage+32, off)
	_, off, _, _ = m.lookup(&mapping[5*testPage])
	assert.Equal(t, 0, off)
	for _, d := range dones {
		d()
	}
	assert.Equal(t, 0, w.live)
}

// TestRunBindsInPlaceWeights: a launch whose argument is a tensor bound in place is
// encoded at the tensor's offset in its file's buffer, and its bounds are the tensor's
// own bytes, not the rest of the file.
func TestRunBindsInPlaceWeights(t *testing.T) {
	f := newFake()
	mapping := pageAligned(testPage)
	var w wrapRecorder
	f.host = w.maps(mapping, 1<<30)
	weight := mapping[4096 : 4096+16]
	done, why, ok := f.host.adopt(kernels.Float32, weight, mapping)
	require.True(t, ok, why)
	defer done()

	l := kernels.Launch{Kernel: kernels.KArange, Params: &kernels.ArangeParams{Start: 1, Step: 2}, NArgs: 1}
	l.Args[0] = kernels.Arg{Layout: kernels.Contiguous(kernels.Float32, 2), Data: weight}
	l.Args[0].Offset = 2
	r := newRunner(f, GPUOptions{})
	require.NoError(t, r.run([]kernels.Launch{l}))
	assert.Contains(t, f.ops, "buffer 0 = b2001+4104", "4096 into the file, 2 floats into the tensor")

	l.Args[0].Offset = 3
	require.EqualError(t, r.run([]kernels.Launch{l}),
		"metal: kernel arange: buffer(0): float32 array of shape [2] at element offset 3 reaches past the end of its 16-byte buffer")
}
