package metal

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ingotml/ingot/kernels"
)

// This file holds the bookkeeping of weights used in place: a mapped file's bytes are
// wrapped, without a copy, in one device buffer per file (newBufferWithBytesNoCopy
// over the page-aligned mapping; a window of it when the file is larger than the
// device's largest buffer), and each tensor of the file is bound at its offset in that
// buffer. Plain Go over a wrap function, so the tests run it on every platform; on
// darwin wrap is the no-copy call.

// hostAlign is the alignment a tensor of dtype dt needs within its window to be bound
// in place (Metal wants a buffer offset aligned for the type the kernel reads): its
// element size, but 16 bytes for packed quantized weights (uint32), which
// quant_rows.metal's q_words reads as uint4 after checking only the element offset
// (kernels' qAligned). A tensor off it is copied.
func hostAlign(dt kernels.DType) int {
	if dt == kernels.UInt32 {
		return 16
	}
	return max(dt.Size(), 1)
}

// hostWindow is one wrapped span of a mapping: [start, start+n) in memory.
type hostWindow struct {
	start uintptr
	n     int
	buf   deviceBuffer
	refs  int // tensors bound in it
}

// hostUse is a tensor bound in a window: the window and its byte offset there.
type hostUse struct {
	win  *hostWindow
	off  int // the tensor's byte offset in the window
	n    int // its length
	refs int // adopt calls for the same bytes not yet done
}

// hostMaps is a device's wrapped mappings. It is safe for concurrent use.
type hostMaps struct {
	page   int                                                 // the system's page size
	maxLen int                                                 // the device's largest buffer
	wrap   func(p unsafe.Pointer, n int) (deviceBuffer, error) // a buffer over [p, p+n), no copy
	free   func(deviceBuffer)                                  // releases a wrapped buffer

	mu      sync.Mutex
	wins    []*hostWindow
	byBase  map[*byte]*hostUse
	refused map[uintptr]string // windows the device would not wrap, by start: not asked again
}

// planWindow decides where a tensor at byte offset off, of n bytes, needing align, in a mapping of
// mapLen bytes at address base, is bound: the window [start, start+size) of the
// mapping (offsets from base) to wrap, the whole mapping rounded up to whole pages
// when that fits in maxLen bytes, else the largest page-aligned window that starts at
// the tensor's page. reason is why the tensor must be copied instead ("" when it need
// not be).
func planWindow(base uintptr, mapLen, off, n, align, page, maxLen int) (start, size int, reason string) {
	switch {
	case n <= 0:
		return 0, 0, "an empty tensor"
	case off < 0 || off+n > mapLen:
		return 0, 0, fmt.Sprintf("bytes %d to %d are outside the %d-byte mapping", off, off+n, mapLen)
	case page <= 0 || base%uintptr(page) != 0:
		return 0, 0, fmt.Sprintf("the mapping at %#x is not page-aligned (%d-byte pages)", base, page)
	case (base+uintptr(off))%uintptr(align) != 0:
		return 0, 0, fmt.Sprintf("the tensor at byte %d of its file is not %d-byte aligned", off, align)
	}
	whole := roundUp(mapLen, page) // a mapping covers whole pages: the tail of the last is readable
	if whole <= maxLen {
		return 0, whole, ""
	}
	start = off / page * page
	size = min(maxLen/page*page, whole-start)
	if off+n > start+size {
		return 0, 0, fmt.Sprintf("the tensor's %d bytes exceed the device's largest buffer (%d bytes) from its page", n, maxLen)
	}
	return start, size, ""
}

func roundUp(n, to int) int { return (n + to - 1) / to * to }

// adopt binds b, a tensor of dtype dt within mapping, in place: in the window of mapping that
// holds it (wrapped at its first use). done ends the use: the last one of a window
// releases its buffer, before the caller may unmap. ok is false, with why, when b
// must be copied instead.
func (m *hostMaps) adopt(dt kernels.DType, b, mapping []byte) (done func(), why string, ok bool) {
	if len(b) == 0 || len(mapping) == 0 {
		return nil, "no bytes or no mapping", false
	}
	base := uintptr(unsafe.Pointer(&mapping[0]))
	p := uintptr(unsafe.Pointer(&b[0]))
	if p < base {
		return nil, "the bytes are not in the mapping", false
	}
	off := int(p - base)
	start, size, why := planWindow(base, len(mapping), off, len(b), hostAlign(dt), m.page, m.maxLen)
	if why != "" {
		return nil, why, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	key := &b[0]
	if u := m.byBase[key]; u != nil && u.n == len(b) { // the same tensor again
		u.refs++
		u.win.refs++
		return m.doneFunc(key, u), "", true
	}
	end := p + uintptr(len(b))
	var win *hostWindow
	for _, w := range m.wins { // a window over the same memory serves any tensor it holds
		if w.start <= p && end <= w.start+uintptr(w.n) {
			win = w
			break
		}
	}
	if win == nil {
		lo := unsafe.Add(unsafe.Pointer(&mapping[0]), start)
		if why, ok := m.refused[uintptr(lo)]; ok {
			return nil, why, false
		}
		buf, err := m.wrap(lo, size)
		if err != nil {
			if m.refused == nil {
				m.refused = map[uintptr]string{}
			}
			m.refused[uintptr(lo)] = err.Error()
			return nil, err.Error(), false
		}
		win = &hostWindow{start: uintptr(lo), n: size, buf: buf}
		m.wins = append(m.wins, win)
	}
	win.refs++
	u := &hostUse{win: win, off: int(p - win.start), n: len(b), refs: 1}
	if m.byBase == nil {
		m.byBase = map[*byte]*hostUse{}
	}
	m.byBase[key] = u
	return m.doneFunc(key, u), "", true
}

// doneFunc is adopt's done for one use of u, safe to call more than once.
func (m *hostMaps) doneFunc(key *byte, u *hostUse) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			if u.refs--; u.refs == 0 && m.byBase[key] == u {
				delete(m.byBase, key)
			}
			w := u.win
			if w.refs--; w.refs == 0 {
				for i, x := range m.wins {
					if x == w {
						m.wins = append(m.wins[:i], m.wins[i+1:]...)
						break
					}
				}
				m.free(w.buf)
			}
		})
	}
}

// lookup finds the window a bound tensor starting at base lives in, its byte offset
// there and its length (backend.buffer's answer).
func (m *hostMaps) lookup(base *byte) (buf deviceBuffer, off, n int, ok bool) {
	if m == nil {
		return nil, 0, 0, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.byBase[base]
	if !ok {
		return nil, 0, 0, false
	}
	return u.win.buf, u.off, u.n, true
}

// windows is the number of wrapped buffers alive.
func (m *hostMaps) windows() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.wins)
}
