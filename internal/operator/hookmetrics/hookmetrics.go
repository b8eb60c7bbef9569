// Package hookmetrics exposes the metrics hooks write to $METRICS_PATH as
// a Prometheus collector, with shell-operator's semantics: "add" adds to a
// counter, "set" sets a gauge, "observe" observes a histogram with the
// operation's buckets, and every series gets a "hook" label with the
// hook's name.
//
// Grouped operations (those with a "group") replace their group: the
// series a group had before a hook's run and that the run did not write
// again are dropped, whichever hook wrote them; counters that are written
// again keep counting. "expire" drops a group's series. Operations with
// no group are not grouped: their series stay until the operator stops
// (addon-operator groups them by hook name instead, so their counters
// restart on every run and their series vanish; strata follows the
// documentation).
package hookmetrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-dev/strata/internal/operator/hook"
)

// Limits bound what hooks' metrics may cost.
type Limits struct {
	// MaxSeries bounds the series of all hooks' metrics together; an
	// Apply that would pass it fails and changes nothing. 0 is 100,000.
	MaxSeries int
}

// A Collector holds hooks' metrics. Register it with a Prometheus
// registry; it is safe for concurrent use.
type Collector struct {
	limits Limits

	mu      sync.Mutex
	metrics map[string]*family // by metric name
	groups  map[string]map[seriesKey]struct{}
	series  int
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns an empty collector.
func NewCollector(lim Limits) *Collector {
	if lim.MaxSeries <= 0 {
		lim.MaxSeries = 100_000
	}
	return &Collector{limits: lim, metrics: map[string]*family{}, groups: map[string]map[seriesKey]struct{}{}}
}

// Apply applies the operations of one run of the global hook called
// hookName (its series get the label hook=hookName), as one unit: grouped
// operations replace their groups. A metric that was written before with
// another type, another set of label names or other buckets is an error,
// and nothing of ops is applied.
func (c *Collector) Apply(hookName string, ops []hook.MetricOperation) error {
	return c.apply(map[string]string{"hook": hookName}, ops)
}

// ApplyModule is Apply for a hook of module: its series get the labels
// hook=hookName and module=module, as addon-operator gives them; a
// "module" label of the hook's own is an error.
func (c *Collector) ApplyModule(module, hookName string, ops []hook.MetricOperation) error {
	return c.apply(map[string]string{"hook": hookName, "module": module}, ops)
}

// Describe sends nothing: the metrics are not known in advance (an
// unchecked collector).
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect sends every series.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.collect(ch)
}
