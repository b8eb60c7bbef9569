package helmrender

import (
	"container/list"
	"sync"
)

// A Cache keeps values by a SHA-256, bounded by entries and by the bytes
// each entry stands for. It stores and returns what it is given: the
// caches built on it copy on the way in and on the way out.
type Cache[V any] struct {
	mu       sync.Mutex
	maxItems int
	maxBytes int64
	bytes    int64
	order    *list.List // of *lruEntry[V], most recent first
	byKey    map[[32]byte]*list.Element

	hits, misses, evictions uint64
}

type lruEntry[V any] struct {
	key  [32]byte
	size int64
	v    V
}

// NewCache returns a cache of at most maxItems entries and maxBytes bytes,
// or nil (which keeps nothing) when maxItems is not positive.
func NewCache[V any](maxItems int, maxBytes int64) *Cache[V] {
	if maxItems <= 0 || maxBytes <= 0 {
		return nil
	}
	return &Cache[V]{maxItems: maxItems, maxBytes: maxBytes, order: list.New(), byKey: map[[32]byte]*list.Element{}}
}

func (c *Cache[V]) Get(key [32]byte) (V, bool) {
	var zero V
	if c == nil {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		c.misses++
		return zero, false
	}
	c.hits++
	c.order.MoveToFront(el)
	return el.Value.(*lruEntry[V]).v, true
}

// Add keeps v unless the key is there already or v alone is larger than
// the cache; it evicts the least recently used entries past the bounds.
func (c *Cache[V]) Add(key [32]byte, size int64, v V) {
	if c == nil || size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; ok {
		return
	}
	c.byKey[key] = c.order.PushFront(&lruEntry[V]{key: key, size: size, v: v})
	c.bytes += size
	for c.order.Len() > c.maxItems || c.bytes > c.maxBytes {
		last := c.order.Back()
		e := last.Value.(*lruEntry[V])
		c.order.Remove(last)
		delete(c.byKey, e.key)
		c.bytes -= e.size
		c.evictions++
	}
}

// CacheStats are a cache's counters since it was made (Hits,
// Misses, Evictions) and what it holds now (Bytes, Entries). A cache that
// keeps nothing (its size set to none) counts nothing.
type CacheStats struct {
	Hits, Misses, Evictions uint64
	Bytes                   int64
	Entries                 int
}

func (c *Cache[V]) Stats() CacheStats {
	if c == nil {
		return CacheStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Hits: c.hits, Misses: c.misses, Evictions: c.evictions, Bytes: c.bytes, Entries: c.order.Len()}
}
