package alloc

import "math/bits"

// bufferCache parks freed buffers for reuse, the way MLX's BufferCache does:
// candidates are looked up by length, equal lengths are reused first in,
// first out, and eviction takes the oldest recycled buffer overall.
//
// Layout: buckets is sorted by length, one bucket per distinct cached length,
// each a singly linked FIFO through block.nextSame. All cached buffers are
// also on one doubly linked list in recycle order (oldest at the head). The
// oldest buffer overall is always the head of its own bucket, so eviction
// and reuse both pop a bucket head. No maps, no allocation once warm.
type bufferCache struct {
	buckets []bucket
	oldest  *block // head of the recycle-order list
	newest  *block // tail
	bytes   int64
	count   int
}

type bucket struct {
	length     int
	head, tail *block
}

// search returns the index of the first bucket with length >= n.
func (c *bufferCache) search(n int) int {
	lo, hi := 0, len(c.buckets)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if c.buckets[mid].length < n {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// reuse takes a cached buffer for a request of size bytes, or returns nil.
// Only the smallest cached length >= size is examined, and it is accepted
// only if length < min(2*size, size+2*pageSize).
func (c *bufferCache) reuse(size int) *block {
	i := c.search(size)
	if i == len(c.buckets) {
		return nil
	}
	// Unsigned so huge sizes cannot overflow the bound.
	if uint(c.buckets[i].length) >= min(2*uint(size), uint(size)+2*pageSize) {
		return nil
	}
	return c.popBucket(i)
}

// push parks b as the newest recycled buffer.
func (c *bufferCache) push(b *block) {
	n := len(b.data)
	i := c.search(n)
	if i == len(c.buckets) || c.buckets[i].length != n {
		c.buckets = append(c.buckets, bucket{})
		copy(c.buckets[i+1:], c.buckets[i:])
		c.buckets[i] = bucket{length: n}
	}
	bk := &c.buckets[i]
	b.nextSame = nil
	if bk.tail == nil {
		bk.head = b
	} else {
		bk.tail.nextSame = b
	}
	bk.tail = b

	b.prev, b.next = c.newest, nil
	if c.newest == nil {
		c.oldest = b
	} else {
		c.newest.next = b
	}
	c.newest = b

	c.bytes += int64(n)
	c.count++
}

// popBucket removes and returns the earliest recycled buffer of bucket i.
func (c *bufferCache) popBucket(i int) *block {
	bk := &c.buckets[i]
	b := bk.head
	bk.head = b.nextSame
	b.nextSame = nil
	if bk.head == nil {
		c.buckets = append(c.buckets[:i], c.buckets[i+1:]...)
	}

	if b.prev == nil {
		c.oldest = b.next
	} else {
		b.prev.next = b.next
	}
	if b.next == nil {
		c.newest = b.prev
	} else {
		b.next.prev = b.prev
	}
	b.prev, b.next = nil, nil

	c.bytes -= int64(len(b.data))
	c.count--
	return b
}

// popOldest removes and returns the oldest recycled buffer, or nil.
func (c *bufferCache) popOldest() *block {
	if c.oldest == nil {
		return nil
	}
	return c.popBucket(c.search(len(c.oldest.data)))
}

// release destroys cached buffers to free at least minBytes, by MLX's rule:
// if minBytes is >= 90% of the cache, everything goes; otherwise whole
// buffers go oldest first until enough bytes are freed. minBytes is unsigned
// on purpose: callers pass a wrapped subtraction, which must clear all.
// It returns the number of buffers released.
func (c *bufferCache) release(minBytes uint64) int {
	if float64(minBytes) >= 0.9*float64(c.bytes) {
		return c.clear()
	}
	released := 0
	var freed uint64
	for freed < minBytes {
		b := c.popOldest()
		if b == nil {
			break
		}
		freed += uint64(len(b.data))
		b.destroy()
		released++
	}
	return released
}

// clear destroys every cached buffer and returns how many there were.
func (c *bufferCache) clear() int {
	n := 0
	for b := c.oldest; b != nil; {
		next := b.next
		b.prev, b.next, b.nextSame = nil, nil, nil
		b.destroy()
		b = next
		n++
	}
	clear(c.buckets)
	c.buckets = c.buckets[:0]
	c.oldest, c.newest = nil, nil
	c.bytes, c.count = 0, 0
	return n
}

// sizeClass is the power-of-two class index of a length n > 0: class i holds
// lengths in [2^i, 2^(i+1)).
func sizeClass(n int) int { return bits.Len(uint(n)) - 1 }
