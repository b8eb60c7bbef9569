package helmplugin

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"sync"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
)

// A valuesCache keeps parsed values documents by the SHA-256 of their
// text, so that announcing parameters for a chart whose values.yaml (or
// values file) was seen before does not parse it again: parsing with
// Kubernetes' YAML rules, as Helm does, is the costliest part of an
// announcement. Entries are never handed out: get returns a deep copy.
// The cache is bounded by entries and by the bytes of the documents.
type valuesCache struct {
	mu       sync.Mutex
	maxBytes int64
	maxItems int
	bytes    int64
	order    *list.List // of *cacheEntry, most recent first
	byHash   map[[32]byte]*list.Element
}

type cacheEntry struct {
	hash [32]byte
	size int64
	vals map[string]any
}

func newValuesCache(maxItems int, maxBytes int64) *valuesCache {
	return &valuesCache{maxItems: maxItems, maxBytes: maxBytes, order: list.New(), byHash: map[[32]byte]*list.Element{}}
}

// parse returns the values in data as Helm's loader.LoadValues reads them,
// from the cache when the same text was parsed before.
func (c *valuesCache) parse(data []byte) (map[string]any, error) {
	if c == nil || c.maxItems <= 0 {
		return loader.LoadValues(bytes.NewReader(data))
	}
	h := sha256.Sum256(data)
	c.mu.Lock()
	if el, ok := c.byHash[h]; ok {
		c.order.MoveToFront(el)
		vals := el.Value.(*cacheEntry).vals
		c.mu.Unlock()
		return plain(vals).(map[string]any), nil
	}
	c.mu.Unlock()
	vals, err := loader.LoadValues(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	size := int64(len(data))
	if size > c.maxBytes {
		return vals, nil
	}
	kept := plain(vals).(map[string]any)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byHash[h]; !ok {
		c.byHash[h] = c.order.PushFront(&cacheEntry{hash: h, size: size, vals: kept})
		c.bytes += size
		for c.order.Len() > c.maxItems || c.bytes > c.maxBytes {
			last := c.order.Back()
			e := last.Value.(*cacheEntry)
			c.order.Remove(last)
			delete(c.byHash, e.hash)
			c.bytes -= e.size
		}
	}
	return vals, nil
}
