package alloc_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/ingotml/ingot/alloc"
)

// fakeProvider records every Alloc and Release so tests can check exactly
// which device objects the allocator created and destroyed.
type fakeProvider struct {
	mu       sync.Mutex
	allocs   []int // sizes requested, in order
	released []int // ids released, in order
	live     int
	maxLive  int
	nextID   int
	problems []string // double releases and the like

	fail    error // if set, Alloc fails
	short   bool  // if set, Alloc returns one byte too few
	maxBuf  int64
	workSet int64
}

func newFake() *fakeProvider {
	return &fakeProvider{maxBuf: 1 << 40, workSet: 1 << 40}
}

type fakeRaw struct {
	p        *fakeProvider
	id       int
	data     []byte
	released bool
}

func (p *fakeProvider) Name() string                 { return "fake" }
func (p *fakeProvider) MaxBufferLength() int64       { return p.maxBuf }
func (p *fakeProvider) RecommendedWorkingSet() int64 { return p.workSet }

func (p *fakeProvider) Alloc(n int) (alloc.Raw, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.allocs = append(p.allocs, n)
	if p.fail != nil {
		return nil, p.fail
	}
	if p.short {
		n--
	}
	p.nextID++
	p.live++
	p.maxLive = max(p.maxLive, p.live)
	return &fakeRaw{p: p, id: p.nextID, data: make([]byte, n)}, nil
}

func (r *fakeRaw) Bytes() []byte { return r.data }

func (r *fakeRaw) Release() {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	if r.released {
		r.p.problems = append(r.p.problems, fmt.Sprintf("raw %d released twice", r.id))
		return
	}
	r.released = true
	r.p.live--
	r.p.released = append(r.p.released, r.id)
}

func (p *fakeProvider) numAllocs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.allocs)
}

func (p *fakeProvider) releasedIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.released...)
}

func (p *fakeProvider) liveCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.live
}

// id reports which device object b wraps.
func id(t *testing.T, b alloc.Buffer) int {
	t.Helper()
	r, ok := b.Raw().(*fakeRaw)
	if !ok {
		t.Fatalf("buffer raw is %T, want *fakeRaw", b.Raw())
	}
	return r.id
}

func mustMalloc(t *testing.T, a *alloc.Allocator, size int) alloc.Buffer {
	t.Helper()
	b, err := a.Malloc(size)
	if err != nil {
		t.Fatalf("Malloc(%d): %v", size, err)
	}
	if b.IsNil() {
		t.Fatalf("Malloc(%d) returned nil", size)
	}
	return b
}

func eq[T comparable](t *testing.T, got, want T, what string) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func eqSlice[T comparable](t *testing.T, got, want []T, what string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
}

// counts checks the three buffer counters at once.
func counts(t *testing.T, a *alloc.Allocator, active, cached int) {
	t.Helper()
	s := a.Stats()
	if s.ActiveBufferCount != active || s.CacheBufferCount != cached || s.LiveBufferCount != active-cached {
		t.Fatalf("counts: active %d cached %d live %d, want %d %d %d",
			s.ActiveBufferCount, s.CacheBufferCount, s.LiveBufferCount, active, cached, active-cached)
	}
}

func checkClean(t *testing.T, p *fakeProvider) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.problems) > 0 {
		t.Fatalf("provider problems: %v", p.problems)
	}
}

var errRefused = errors.New("device out of memory")

// mustPanic runs f and checks that it panics with exactly msg.
func mustPanic(t *testing.T, msg string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want %q", msg)
		}
		if s := fmt.Sprint(r); s != msg {
			t.Fatalf("panic %q, want %q", s, msg)
		}
	}()
	f()
}
