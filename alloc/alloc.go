package alloc

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"
)

const (
	// DefaultResourceLimit is MLX's fallback when macOS does not report the
	// iogpu.rsrc_limit sysctl, which is what every current Mac sees.
	DefaultResourceLimit = 499000
	// ResourceLimitEnv overrides the device's and the default resource limit
	// when Config.ResourceLimit is 0 (see ResourceLimitFor).
	ResourceLimitEnv = "INGOT_RESOURCE_LIMIT"

	// pageSize is Apple silicon's VM page; requests above it are rounded up
	// to a multiple of it.
	pageSize = 16384
	// fallbackRAM stands in for physical memory where it cannot be read.
	fallbackRAM = 16 << 30
)

// Config sets the Allocator's limits. A zero (or negative) field takes the
// MLX default described on each field.
type Config struct {
	ResourceLimit   int   // 0 -> $INGOT_RESOURCE_LIMIT if a positive int, else DefaultResourceLimit
	MemoryLimit     int64 // 0 -> min(1.5*rws, 0.95*RAM)
	CacheLimit      int64 // 0 -> MemoryLimit
	GCLimit         int64 // 0 -> min(0.95*rws, MemoryLimit)
	MaxBufferLength int64 // 0 -> the provider's
}

// Allocator counts device buffer objects exactly as MLX's Metal allocator
// does: buffers in use plus buffers parked in its reuse cache, compared with
// the resource limit on every cache miss. It is safe for concurrent use.
type Allocator struct {
	mu        sync.Mutex
	p         Provider
	cache     bufferCache
	reclaimer func()

	count       int   // live + cached buffer objects
	activeBytes int64 // bytes of live buffers
	peakBytes   int64
	liveByClass [64]int // live buffers per power-of-two class

	resourceLimit int
	memoryLimit   int64
	cacheLimit    int64
	gcLimit       int64
	maxBuffer     int64
	workingSet    int64 // rws, kept to recompute the gc limit
}

// New returns an Allocator over p with cfg's limits (defaults for zero
// fields).
func New(p Provider, cfg Config) *Allocator {
	ram := totalRAM()
	rws := p.RecommendedWorkingSet()
	if rws <= 0 {
		rws = int64(0.75 * float64(ram))
	}
	a := &Allocator{p: p, workingSet: rws}

	a.resourceLimit = cfg.ResourceLimit
	if a.resourceLimit <= 0 {
		a.resourceLimit = envResourceLimit()
	}
	a.memoryLimit = cfg.MemoryLimit
	if a.memoryLimit <= 0 {
		a.memoryLimit = min(int64(1.5*float64(rws)), int64(0.95*float64(ram)))
	}
	a.cacheLimit = cfg.CacheLimit
	if a.cacheLimit <= 0 {
		a.cacheLimit = a.memoryLimit
	}
	a.gcLimit = cfg.GCLimit
	if a.gcLimit <= 0 {
		a.gcLimit = a.defaultGCLimit()
	}
	a.maxBuffer = cfg.MaxBufferLength
	if a.maxBuffer <= 0 {
		a.maxBuffer = p.MaxBufferLength()
	}
	return a
}

func (a *Allocator) defaultGCLimit() int64 {
	return min(int64(0.95*float64(a.workingSet)), a.memoryLimit)
}

// ResourceLimitFor decides the resource limit, the one place that does: explicit if
// positive, else $INGOT_RESOURCE_LIMIT if set, else device (the device's own limit,
// e.g. Metal's iogpu.rsrc_limit) if positive, else DefaultResourceLimit. A set
// environment value that is not a positive integer is an error (*LimitEnvError).
func ResourceLimitFor(explicit, device int) (int, error) {
	if explicit > 0 {
		return explicit, nil
	}
	if s, ok := os.LookupEnv(ResourceLimitEnv); ok {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return 0, &LimitEnvError{Value: s}
		}
		return n, nil
	}
	if device > 0 {
		return device, nil
	}
	return DefaultResourceLimit, nil
}

// LimitEnvError reports an $INGOT_RESOURCE_LIMIT that is not a positive integer.
type LimitEnvError struct{ Value string }

// Error names the variable and the bad value.
func (e *LimitEnvError) Error() string {
	return fmt.Sprintf("%s=%q: want a positive integer (buffer objects)", ResourceLimitEnv, e.Value)
}

// envResourceLimit is ResourceLimitFor without a device limit; a bad environment
// value leaves the default (New has no error path; callers that can report errors,
// like cmd/decode, call ResourceLimitFor themselves).
func envResourceLimit() int {
	if n, err := ResourceLimitFor(0, 0); err == nil {
		return n
	}
	return DefaultResourceLimit
}

// Buffer is a handle on one allocated device buffer, a small value. The device
// object behind it is handed out again by a later Malloc once it is freed (a cache
// hit), so each hand-out carries a generation: Free of a Buffer whose object was
// freed since (a double free, or a stale copy of a buffer now owned by someone else)
// panics instead of freeing the new owner's buffer. The zero Buffer is the nil buffer
// of a size-0 request.
type Buffer struct {
	b   *block
	gen uint32
}

// block is one device buffer object and its place in the allocator's books.
type block struct {
	raw   Raw
	data  []byte
	owner *Allocator // whose store the block belongs to: set once, kept across reuse
	state bufState
	gen   uint32 // bumped by every Free: a Buffer holding an older value is stale
	// adopted is the size an adopted buffer is counted as (Adopt), 0 for the
	// allocator's own.
	adopted int

	prev, next *block // recycle-order list while cached
	nextSame   *block // same-length FIFO while cached
}

type bufState uint8

const (
	stateLive bufState = iota
	stateCached
	stateReleased
)

// IsNil reports whether b is the nil buffer (size 0, or a failed Malloc).
func (b Buffer) IsNil() bool { return b.b == nil }

// Bytes is the host view of the buffer, len == b.Len(); nil for the nil Buffer.
// The view must not be used after Free.
func (b Buffer) Bytes() []byte {
	if b.b == nil {
		return nil
	}
	return b.b.data
}

// Len is the allocated length, which on a cache hit may exceed the request.
func (b Buffer) Len() int {
	if b.b == nil {
		return 0
	}
	return len(b.b.data)
}

// Raw is the provider's device object, for backends that bind it directly.
func (b Buffer) Raw() Raw {
	if b.b == nil {
		return nil
	}
	return b.b.raw
}

// destroy releases the device object and returns the block to the spare list; the
// caller has already uncounted it.
func (b *block) destroy(spare *blockStore) {
	raw := b.raw
	spare.put(b)
	raw.Release()
}

// blockChunk is the number of blocks allocated at once.
const blockChunk = 256

// blockStore hands out blocks from chunks and takes released ones back, so a buffer
// costs no Go allocation of its own. A reused block keeps its generation, so a Buffer
// of its previous life stays stale.
type blockStore struct {
	chunk []block  // the unused rest of the newest chunk
	spare []*block // released blocks
}

func (s *blockStore) get() *block {
	if k := len(s.spare); k > 0 {
		b := s.spare[k-1]
		s.spare = s.spare[:k-1]
		return b
	}
	if len(s.chunk) == 0 {
		s.chunk = make([]block, blockChunk)
	}
	b := &s.chunk[0]
	s.chunk = s.chunk[1:]
	return b
}

// put resets b (keeping its generation) and keeps it for reuse.
func (s *blockStore) put(b *block) {
	*b = block{gen: b.gen, owner: b.owner, state: stateReleased}
	s.spare = append(s.spare, b)
}

// Malloc returns a buffer of at least size bytes, following MLX's malloc
// step by step. Size 0 returns the nil Buffer and counts nothing.
func (a *Allocator) Malloc(size int) (Buffer, error) {
	if size <= 0 {
		if size == 0 {
			return Buffer{}, nil
		}
		return Buffer{}, fmt.Errorf("%w: %d", ErrNegativeSize, size)
	}
	// The max-buffer check sees the request before rounding, as MLX's does.
	if int64(size) > a.maxBuffer {
		return Buffer{}, &MaxBufferError{Size: int64(size), Max: a.maxBuffer}
	}
	if size > pageSize {
		if size > math.MaxInt-pageSize {
			return Buffer{}, &MaxBufferError{Size: int64(size), Max: a.maxBuffer}
		}
		size = (size + pageSize - 1) / pageSize * pageSize
	}

	a.mu.Lock()
	b := a.cache.reuse(size)
	if b == nil {
		var err error
		if b, err = a.missLocked(size); err != nil {
			a.mu.Unlock()
			return Buffer{}, err
		}
	}
	b.state = stateLive
	a.activeBytes += int64(len(b.data))
	a.peakBytes = max(a.peakBytes, a.activeBytes)
	a.liveByClass[sizeClass(len(b.data))]++
	if a.cache.bytes > a.cacheLimit {
		a.count -= a.cache.release(uint64(a.cache.bytes - a.cacheLimit))
	}
	a.mu.Unlock()
	return Buffer{b, b.gen}, nil
}

// missLocked handles a cache miss: purge under pressure, give the reclaimer
// one chance at the limit, then create a new counted buffer.
func (a *Allocator) missLocked(size int) (*block, error) {
	if err := a.roomLocked(size); err != nil {
		return nil, err
	}

	// The mutex stays held across the device call so concurrent misses can
	// never overshoot the limit. (MLX unlocks here; single-threaded
	// behaviour is identical.)
	raw, err := a.p.Alloc(size)
	if err != nil {
		return nil, &DeviceError{Size: int64(size), Err: err}
	}
	data := raw.Bytes()
	if len(data) != size {
		raw.Release()
		return nil, &DeviceError{Size: int64(size), Err: fmt.Errorf(
			"alloc: %s provider returned %d bytes for a %d-byte request", a.p.Name(), len(data), size)}
	}
	a.count++
	b := a.cache.blocks.get()
	b.raw, b.data, b.owner = raw, data, a
	return b, nil
}

// roomLocked makes room for one more buffer object of size bytes, as a cache miss
// does: purge under pressure, give the reclaimer one chance at the limit, then fail
// with the resource-limit error if the count is still at the limit.
func (a *Allocator) roomLocked(size int) error {
	a.purgeLocked(size)
	if a.count >= a.resourceLimit && a.reclaimer != nil {
		// The reclaimer frees unreachable buffers through Free, which locks.
		f := a.reclaimer
		a.mu.Unlock()
		f()
		a.mu.Lock()
		// What it freed went to the cache (count unchanged); drop it.
		a.purgeLocked(size)
	}
	if a.count >= a.resourceLimit {
		return &ResourceLimitError{Limit: a.resourceLimit}
	}
	return nil
}

// purgeLocked is MLX's step 5: under memory or count pressure, release at
// least required-gcLimit cached bytes, computed unsigned so that count
// pressure alone (a wrapped, huge figure) drops the whole cache.
func (a *Allocator) purgeLocked(size int) {
	required := uint64(a.activeBytes) + uint64(a.cache.bytes) + uint64(size)
	if required >= uint64(a.gcLimit) || a.count >= a.resourceLimit {
		a.count -= a.cache.release(required - uint64(a.gcLimit))
	}
}

// Free returns b to the allocator: into the cache if the cache is below its
// byte limit (the count is unchanged), else the device object is released.
// The nil Buffer and another allocator's buffer are no-ops. Freeing a Buffer
// whose object was already freed (twice, or after a Malloc handed it to a new
// owner) panics: it is a use-after-free in the caller.
func (a *Allocator) Free(buf Buffer) {
	b := buf.b
	if b == nil || b.owner != a {
		return
	}
	a.mu.Lock()
	if b.gen != buf.gen || b.state != stateLive {
		gen := b.gen
		a.mu.Unlock()
		panic(fmt.Sprintf("alloc: Free of a stale buffer (generation %d, the buffer is at %d): it was already freed, and may now belong to another owner", buf.gen, gen))
	}
	b.gen++
	n := len(b.data)
	if b.adopted > 0 {
		n = b.adopted
	}
	a.activeBytes -= int64(n)
	a.liveByClass[sizeClass(n)]--
	if a.cache.bytes < a.cacheLimit && b.adopted == 0 {
		b.state = stateCached
		a.cache.push(b)
		a.mu.Unlock()
		return
	}
	a.count--
	raw := b.raw
	a.cache.blocks.put(b)
	a.mu.Unlock()
	raw.Release() // outside the lock, as MLX does
}

// SetReclaimer installs f, called (without the allocator's lock) when a
// cache miss finds the count at the resource limit even after the cache was
// dropped. f may Free any number of buffers; it must not call Malloc, and it
// may run on several goroutines at once. nil removes it.
func (a *Allocator) SetReclaimer(f func()) {
	a.mu.Lock()
	a.reclaimer = f
	a.mu.Unlock()
}

// Adopt counts data, memory the caller owns (a weight mapped in place from its file),
// as one buffer object, exactly as Malloc(len(data)) would count a buffer it made: the
// same resource-limit check at the same count, the same rounded size in the active
// bytes and the size histogram. Nothing is copied, and the buffer's bytes are data
// itself. It never enters the cache: Free uncounts it at once and calls release (nil
// for none), since the memory is not the allocator's to hand to another Malloc.
func (a *Allocator) Adopt(data []byte, release func()) (Buffer, error) {
	size := len(data)
	if size == 0 {
		return Buffer{}, nil
	}
	if int64(size) > a.maxBuffer {
		return Buffer{}, &MaxBufferError{Size: int64(size), Max: a.maxBuffer}
	}
	acct := size
	if size > pageSize {
		acct = (size + pageSize - 1) / pageSize * pageSize
	}
	a.mu.Lock()
	// A cache miss of the same size: the same purge and limit check as Malloc's.
	if err := a.roomLocked(acct); err != nil {
		a.mu.Unlock()
		return Buffer{}, err
	}
	a.count++
	b := a.cache.blocks.get()
	b.raw, b.data, b.owner, b.adopted = adoptedRaw{data, release}, data, a, acct
	b.state = stateLive
	a.activeBytes += int64(acct)
	a.peakBytes = max(a.peakBytes, a.activeBytes)
	a.liveByClass[sizeClass(acct)]++
	a.mu.Unlock()
	return Buffer{b, b.gen}, nil
}

// adoptedRaw is an adopted buffer's device object: the caller's memory.
type adoptedRaw struct {
	data    []byte
	release func()
}

// Bytes is the adopted memory.
func (r adoptedRaw) Bytes() []byte { return r.data }

// Release gives the memory back to its owner.
func (r adoptedRaw) Release() {
	if r.release != nil {
		r.release()
	}
}
