package helmplugin

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/helmrender"
)

// CacheStats are a cache's counters (see helmrender.CacheStats).
type CacheStats = helmrender.CacheStats

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
	s := Stats{Charts: p.charts.lru.Stats(), Documents: p.render.Stats(), Values: p.values.lru.Stats(), Announcements: p.flat.Stats()}
	if p.pool != nil {
		w := p.pool.Counters()
		s.Charts, s.Documents = w.Charts, w.Documents
	}
	return s
}

// A valuesCache keeps parsed values documents by the SHA-256 of their
// text, so that announcing parameters for a chart whose values.yaml (or
// values file) was seen before does not parse it again. Entries are never
// handed out: parse returns a deep copy.
type valuesCache struct {
	lru *helmrender.Cache[map[string]any]
	// codecs is document.ReferenceCodecs to read every document with
	// Helm's own loader.LoadValues (Options.Codecs).
	codecs document.Codecs
	// maxNodes bounds the nodes of a document (Limits.MaxValuesNodes).
	maxNodes int
}

// load reads a values document, by the fast path unless codecs rule it
// out.
func (c valuesCache) load(data []byte) (map[string]any, error) {
	// The YAML libraries build a tree of a whole document before
	// anything can count it: count first.
	if err := checkValuesNodes(data, c.maxNodes); err != nil {
		return nil, err
	}
	if !c.codecs.Fast() {
		return loader.LoadValues(bytes.NewReader(data))
	}
	return helmrender.LoadValues(data)
}

// parse returns the values in data as Helm's loader.LoadValues reads them,
// from the cache when the same text was parsed before.
func (c valuesCache) parse(data []byte) (map[string]any, error) {
	if c.lru == nil {
		return c.load(data)
	}
	h := sha256.Sum256(data)
	if vals, ok := c.lru.Get(h); ok {
		return helmrender.CopyValues(vals), nil
	}
	vals, err := c.load(data)
	if err != nil {
		return nil, err
	}
	c.lru.Add(h, int64(len(data)), helmrender.CopyValues(vals))
	return vals, nil
}

// A chartCache keeps loaded charts by the SHA-256 of the chart's files
// (see chartDigest), so that rendering a chart seen before does not read
// and parse its files again: the sidecar serves the same charts over and
// over, at every revision of a repository. Helm's rendering changes the
// chart it is given (dependencies enabled or removed, values imported,
// and templates may change the maps they are handed), so entries are
// never handed out: get and add copy the whole chart (helmrender.CloneChart).
type chartCache struct {
	lru *helmrender.Cache[*chart.Chart]
}

func (c chartCache) get(digest [32]byte) (*chart.Chart, bool) {
	ch, ok := c.lru.Get(digest)
	if !ok {
		return nil, false
	}
	return helmrender.CloneChart(ch), true
}

func (c chartCache) add(digest [32]byte, size int64, ch *chart.Chart) {
	if c.lru != nil {
		c.lru.Add(digest, size, helmrender.CloneChart(ch))
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
