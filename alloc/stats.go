package alloc

// SizeClass is one bucket of Histogram: Count live buffers whose lengths lie
// in [Bytes, 2*Bytes), Bytes a power of two. A 4-byte buffer is in class 4.
type SizeClass struct {
	Bytes int64
	Count int
}

// Stats is one consistent snapshot of the allocator's counters and limits.
type Stats struct {
	ActiveMemory      int64 // bytes in live buffers
	CacheMemory       int64 // bytes in cached buffers
	PeakMemory        int64 // highest ActiveMemory since the last reset
	ActiveBufferCount int   // live + cached objects: what the limit compares
	CacheBufferCount  int
	LiveBufferCount   int // ActiveBufferCount - CacheBufferCount
	ResourceLimit     int
	MemoryLimit       int64
	CacheLimit        int64
	GCLimit           int64
	MaxBufferLength   int64
	Histogram         []SizeClass // live buffers, as Allocator.Histogram
}

// ActiveMemory is the number of bytes in live (not cached) buffers.
func (a *Allocator) ActiveMemory() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.activeBytes
}

// CacheMemory is the number of bytes parked in the reuse cache.
func (a *Allocator) CacheMemory() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cache.bytes
}

// PeakMemory is the highest ActiveMemory since creation or the last reset.
func (a *Allocator) PeakMemory() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.peakBytes
}

// ResetPeakMemory sets the peak to 0 (not to the current value, as in MLX).
func (a *Allocator) ResetPeakMemory() {
	a.mu.Lock()
	a.peakBytes = 0
	a.mu.Unlock()
}

// ClearCache releases every cached buffer.
func (a *Allocator) ClearCache() {
	a.mu.Lock()
	a.count -= a.cache.clear()
	a.mu.Unlock()
}

// SetCacheLimit sets the cache's byte limit and returns the old one. It does
// not trim: the next Malloc does. A negative n is taken as 0.
func (a *Allocator) SetCacheLimit(n int64) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.cacheLimit
	a.cacheLimit = max(n, 0)
	return old
}

// SetMemoryLimit sets the memory limit, recomputes the gc limit as
// min(0.95*rws, n) (replacing any Config.GCLimit), and returns the old
// memory limit. A negative n is taken as 0.
func (a *Allocator) SetMemoryLimit(n int64) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.memoryLimit
	a.memoryLimit = max(n, 0)
	a.gcLimit = a.defaultGCLimit()
	return old
}

// ResourceLimit is the buffer-object count a cache miss may not reach.
func (a *Allocator) ResourceLimit() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.resourceLimit
}

// ActiveBufferCount is the number of device objects alive, live plus cached:
// the figure the resource limit is compared with.
func (a *Allocator) ActiveBufferCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.count
}

// CacheBufferCount is the number of buffers parked in the cache.
func (a *Allocator) CacheBufferCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cache.count
}

// LiveBufferCount is the number of buffers in use (ActiveBufferCount minus
// CacheBufferCount).
func (a *Allocator) LiveBufferCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.count - a.cache.count
}

// Histogram counts live buffers by power-of-two size class, sorted by Bytes
// ascending, empty classes omitted. Cached buffers are not included.
func (a *Allocator) Histogram() []SizeClass {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.histogramLocked()
}

func (a *Allocator) histogramLocked() []SizeClass {
	var h []SizeClass
	for i, n := range a.liveByClass {
		if n != 0 {
			h = append(h, SizeClass{Bytes: 1 << i, Count: n})
		}
	}
	return h
}

// Stats returns all counters and limits, read under one lock.
func (a *Allocator) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return Stats{
		ActiveMemory:      a.activeBytes,
		CacheMemory:       a.cache.bytes,
		PeakMemory:        a.peakBytes,
		ActiveBufferCount: a.count,
		CacheBufferCount:  a.cache.count,
		LiveBufferCount:   a.count - a.cache.count,
		ResourceLimit:     a.resourceLimit,
		MemoryLimit:       a.memoryLimit,
		CacheLimit:        a.cacheLimit,
		GCLimit:           a.gcLimit,
		MaxBufferLength:   a.maxBuffer,
		Histogram:         a.histogramLocked(),
	}
}
