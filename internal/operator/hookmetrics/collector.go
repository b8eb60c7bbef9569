package hookmetrics

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-dev/strata/internal/operator/hook"
)

var (
	validName  = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	validLabel = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// family is one metric name.
type family struct {
	name       string
	kind       hook.MetricAction // MetricAdd (counter), MetricSet (gauge) or MetricObserve (histogram)
	labelNames []string          // sorted
	buckets    []float64
	desc       *prometheus.Desc
	series     map[string]*series // by label values joined with \xff
}

type series struct {
	values  []string // label values, in labelNames' order
	value   float64
	count   uint64
	sum     float64
	buckets []uint64 // cumulative counts are computed at Collect
	group   string
}

type seriesKey struct {
	name, labels string
}

func kindName(k hook.MetricAction) string {
	switch k {
	case hook.MetricAdd:
		return "counter (add)"
	case hook.MetricSet:
		return "gauge (set)"
	}
	return "histogram (observe)"
}

// planned is one operation checked against the families.
type planned struct {
	op     hook.MetricOperation
	key    seriesKey
	values []string
}

func (c *Collector) apply(extra map[string]string, ops []hook.MetricOperation) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Check everything first: nothing is applied when one fails.
	type shape struct {
		kind    hook.MetricAction
		labels  []string
		buckets []float64
	}
	shapes := map[string]shape{}
	for name, f := range c.metrics {
		shapes[name] = shape{f.kind, f.labelNames, f.buckets}
	}
	plan := make([]planned, 0, len(ops))
	newSeries := 0
	seen := map[seriesKey]bool{}
	for i, op := range ops {
		where := fmt.Sprintf("metric operation %d", i)
		if op.Line > 0 {
			where = fmt.Sprintf("metrics line %d", op.Line)
		}
		if op.Action == hook.MetricExpire {
			if op.Group == "" {
				return fmt.Errorf("%s: expire needs a group", where)
			}
			plan = append(plan, planned{op: op})
			continue
		}
		if op.Action != hook.MetricAdd && op.Action != hook.MetricSet && op.Action != hook.MetricObserve {
			return fmt.Errorf("%s: unknown action %q", where, op.Action)
		}
		if !validName.MatchString(op.Name) {
			return fmt.Errorf("%s: %q is not a Prometheus metric name", where, op.Name)
		}
		if op.Action == hook.MetricAdd && !(op.Value >= 0) {
			return fmt.Errorf("%s: add %v to counter %s: a counter only goes up", where, op.Value, op.Name)
		}
		labels := make(map[string]string, len(op.Labels)+len(extra))
		for k, v := range op.Labels {
			if !validLabel.MatchString(k) || strings.HasPrefix(k, "__") {
				return fmt.Errorf("%s: metric %s: %q is not a Prometheus label name", where, op.Name, k)
			}
			if _, reserved := extra[k]; reserved {
				return fmt.Errorf("%s: metric %s: the label %q is the operator's; rename yours", where, op.Name, k)
			}
			labels[k] = v
		}
		for k, v := range extra {
			labels[k] = v
		}
		names := make([]string, 0, len(labels))
		for k := range labels {
			names = append(names, k)
		}
		slices.Sort(names)
		want := shape{op.Action, names, op.Buckets}
		if have, ok := shapes[op.Name]; ok {
			switch {
			case have.kind != want.kind:
				return fmt.Errorf("%s: metric %s is a %s, and this operation makes it a %s; use one action per metric name", where, op.Name, kindName(have.kind), kindName(want.kind))
			case !slices.Equal(have.labels, want.labels):
				return fmt.Errorf("%s: metric %s has the labels [%s], and this operation gives [%s]; give every series of a metric the same label names", where, op.Name, strings.Join(have.labels, " "), strings.Join(want.labels, " "))
			case want.kind == hook.MetricObserve && !slices.Equal(have.buckets, want.buckets):
				return fmt.Errorf("%s: histogram %s has the buckets %v, and this operation gives %v; keep the buckets of a histogram", where, op.Name, have.buckets, want.buckets)
			}
		} else {
			shapes[op.Name] = want
		}
		values := make([]string, len(names))
		for j, n := range names {
			values[j] = labels[n]
		}
		key := seriesKey{op.Name, strings.Join(values, "\xff")}
		if f := c.metrics[op.Name]; (f == nil || f.series[key.labels] == nil) && !seen[key] {
			newSeries++
		}
		seen[key] = true
		plan = append(plan, planned{op: op, key: key, values: values})
	}
	if c.series+newSeries > c.limits.MaxSeries {
		return fmt.Errorf("the hooks' metrics would have %d series, more than the limit of %d", c.series+newSeries, c.limits.MaxSeries)
	}
	// Apply, in order. Groups written by this run keep only what the run
	// wrote (after its last expire of the group).
	written := map[string]map[seriesKey]bool{}
	for _, p := range plan {
		op := p.op
		if op.Action == hook.MetricExpire {
			c.dropGroup(op.Group, nil)
			written[op.Group] = map[seriesKey]bool{}
			continue
		}
		f := c.metrics[op.Name]
		if f == nil {
			sh := shapes[op.Name]
			f = &family{name: op.Name, kind: sh.kind, labelNames: sh.labels, buckets: sh.buckets, series: map[string]*series{},
				desc: prometheus.NewDesc(op.Name, op.Name, sh.labels, nil)}
			c.metrics[op.Name] = f
		}
		s := f.series[p.key.labels]
		if s == nil {
			s = &series{values: p.values}
			if f.kind == hook.MetricObserve {
				s.buckets = make([]uint64, len(f.buckets))
			}
			f.series[p.key.labels] = s
			c.series++
		}
		if s.group != op.Group {
			if s.group != "" {
				delete(c.groups[s.group], p.key)
			}
			s.group = op.Group
		}
		if op.Group != "" {
			if c.groups[op.Group] == nil {
				c.groups[op.Group] = map[seriesKey]struct{}{}
			}
			c.groups[op.Group][p.key] = struct{}{}
			if written[op.Group] == nil {
				written[op.Group] = map[seriesKey]bool{}
			}
			written[op.Group][p.key] = true
		}
		switch f.kind {
		case hook.MetricAdd:
			s.value += op.Value
		case hook.MetricSet:
			s.value = op.Value
		case hook.MetricObserve:
			s.count++
			s.sum += op.Value
			for j, b := range f.buckets {
				if op.Value <= b {
					s.buckets[j]++
					break
				}
			}
		}
	}
	for g, keep := range written {
		c.dropGroup(g, keep)
	}
	return nil
}

// dropGroup removes the series of group g that keep does not hold.
func (c *Collector) dropGroup(g string, keep map[seriesKey]bool) {
	for key := range c.groups[g] {
		if keep[key] {
			continue
		}
		delete(c.groups[g], key)
		f := c.metrics[key.name]
		if f == nil || f.series[key.labels] == nil {
			continue
		}
		delete(f.series, key.labels)
		c.series--
		if len(f.series) == 0 {
			delete(c.metrics, key.name)
		}
	}
	if len(c.groups[g]) == 0 {
		delete(c.groups, g)
	}
}

func (c *Collector) collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	var out []prometheus.Metric
	for _, f := range c.metrics {
		for _, s := range f.series {
			var m prometheus.Metric
			var err error
			switch f.kind {
			case hook.MetricAdd:
				m, err = prometheus.NewConstMetric(f.desc, prometheus.CounterValue, s.value, s.values...)
			case hook.MetricSet:
				m, err = prometheus.NewConstMetric(f.desc, prometheus.GaugeValue, s.value, s.values...)
			case hook.MetricObserve:
				buckets := make(map[float64]uint64, len(f.buckets))
				var cum uint64
				for j, b := range f.buckets {
					cum += s.buckets[j]
					buckets[b] = cum
				}
				m, err = prometheus.NewConstHistogram(f.desc, s.count, s.sum, buckets, s.values...)
			}
			if err != nil {
				m = prometheus.NewInvalidMetric(f.desc, err)
			}
			out = append(out, m)
		}
	}
	c.mu.Unlock()
	for _, m := range out {
		ch <- m
	}
}
