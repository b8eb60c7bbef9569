package cmpserver

import "github.com/prometheus/client_golang/prometheus"

// AddCounterFunc exports a counter strata_cmp_<name> read from read at
// every scrape, with constant labels; several calls may share a name with
// other label values.
func (m *Metrics) AddCounterFunc(name, help string, labels map[string]string, read func() float64) {
	if m == nil {
		return
	}
	m.register(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "strata", Subsystem: "cmp", Name: name, Help: help, ConstLabels: labels}, read))
}

// AddGaugeFunc exports a gauge strata_cmp_<name> read from read at every
// scrape.
func (m *Metrics) AddGaugeFunc(name, help string, read func() float64) {
	if m == nil {
		return
	}
	m.register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "strata", Subsystem: "cmp", Name: name, Help: help}, read))
}
