package helmplugin

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/strata-dev/strata/internal/document"
)

// A lru keeps values by a SHA-256, bounded by entries and by the bytes
// each entry stands for. It stores and returns what it is given: the
// caches built on it copy on the way in and on the way out.
type lru[V any] struct {
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

// newLRU returns a cache of at most maxItems entries and maxBytes bytes,
// or nil (which keeps nothing) when maxItems is not positive.
func newLRU[V any](maxItems int, maxBytes int64) *lru[V] {
	if maxItems <= 0 || maxBytes <= 0 {
		return nil
	}
	return &lru[V]{maxItems: maxItems, maxBytes: maxBytes, order: list.New(), byKey: map[[32]byte]*list.Element{}}
}

func (c *lru[V]) get(key [32]byte) (V, bool) {
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

// add keeps v unless the key is there already or v alone is larger than
// the cache; it evicts the least recently used entries past the bounds.
func (c *lru[V]) add(key [32]byte, size int64, v V) {
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

// CacheStats are a cache's counters since the plugin was made (Hits,
// Misses, Evictions) and what it holds now (Bytes, Entries). A cache that
// keeps nothing (its size set to none) counts nothing.
type CacheStats struct {
	Hits, Misses, Evictions uint64
	Bytes                   int64
	Entries                 int
}

// Stats are the plugin's caches' counters.
type Stats struct {
	Charts    CacheStats // loaded charts, by the digest of their files
	Documents CacheStats // rendered documents read, by the digest of their text
	Values    CacheStats // values files parsed for announcements, by the digest of their text
	// Announcements are the helm-parameters lists of charts announced
	// without user values, by the digest of values.yaml.
	Announcements CacheStats
}

// Stats returns the counters of the plugin's caches, for metrics.
// With render workers, Charts and Documents are the sums of the workers'
// caches (those of workers gone included, their Bytes and Entries too).
func (p *Plugin) Stats() Stats {
	s := Stats{Charts: p.charts.lru.stats(), Documents: p.docs.lru.stats(), Values: p.values.lru.stats(), Announcements: p.flat.stats()}
	if p.pool != nil {
		w := p.pool.stats()
		s.Charts, s.Documents = w.Charts, w.Documents
	}
	return s
}

func (c *lru[V]) stats() CacheStats {
	if c == nil {
		return CacheStats{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Hits: c.hits, Misses: c.misses, Evictions: c.evictions, Bytes: c.bytes, Entries: c.order.Len()}
}

// A valuesCache keeps parsed values documents by the SHA-256 of their
// text, so that announcing parameters for a chart whose values.yaml (or
// values file) was seen before does not parse it again. Entries are never
// handed out: parse returns a deep copy.
type valuesCache struct {
	lru *lru[map[string]any]
	// reference reads every document with Helm's own loader.LoadValues
	// (Options.ReferenceYAML).
	reference bool
	// maxNodes bounds the nodes of a document (Limits.MaxValuesNodes).
	maxNodes int
}

// load reads a values document, by the fast path unless reference.
func (c valuesCache) load(data []byte) (map[string]any, error) {
	// The YAML libraries build a tree of a whole document before
	// anything can count it: count first.
	if err := checkValuesNodes(data, c.maxNodes); err != nil {
		return nil, err
	}
	if c.reference {
		return loader.LoadValues(bytes.NewReader(data))
	}
	return loadValues(data)
}

// parse returns the values in data as Helm's loader.LoadValues reads them,
// from the cache when the same text was parsed before.
func (c valuesCache) parse(data []byte) (map[string]any, error) {
	if c.lru == nil {
		return c.load(data)
	}
	h := sha256.Sum256(data)
	if vals, ok := c.lru.get(h); ok {
		return copyValues(vals), nil
	}
	vals, err := c.load(data)
	if err != nil {
		return nil, err
	}
	c.lru.add(h, int64(len(data)), copyValues(vals))
	return vals, nil
}

// A chartCache keeps loaded charts by the SHA-256 of the chart's files
// (see chartDigest), so that rendering a chart seen before does not read
// and parse its files again: the sidecar serves the same charts over and
// over, at every revision of a repository. Helm's rendering changes the
// chart it is given (dependencies enabled or removed, values imported,
// and templates may change the maps they are handed), so entries are
// never handed out: get and add copy the whole chart (cloneChart).
type chartCache struct{ lru *lru[*chart.Chart] }

func (c chartCache) get(digest [32]byte) (*chart.Chart, bool) {
	ch, ok := c.lru.get(digest)
	if !ok {
		return nil, false
	}
	return cloneChart(ch), true
}

func (c chartCache) add(digest [32]byte, size int64, ch *chart.Chart) {
	if c.lru != nil {
		c.lru.add(digest, size, cloneChart(ch))
	}
}

// checkValuesNodes counts the nodes of a values document on its text
// (document.CheckNodes), against max (Limits.MaxValuesNodes).
func checkValuesNodes(data []byte, max int) error {
	err := document.CheckNodes(data, "values", max)
	if err != nil && !strings.Contains(err.Error(), "YAML aliases") {
		// The count of values, not the alias budget, which has no flag.
		return fmt.Errorf("%w; the plugin server's limit is --helm-max-values-nodes", err)
	}
	return err
}
