package generator

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/strata-dev/strata/internal/memlimit"
	"github.com/strata-dev/strata/internal/stamp"
)

// metrics are a server's Prometheus metrics, in a registry of its own.
type metrics struct {
	reg             *prometheus.Registry
	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	inFlight        *prometheus.GaugeVec
	backendCalls    *prometheus.CounterVec
	backendDuration *prometheus.HistogramVec
	queued          *prometheus.GaugeVec
	cache           *prometheus.CounterVec
	reloads         *prometheus.CounterVec
	memoryBudget    prometheus.Gauge
	memoryRefusals  prometheus.Counter
	// budget is the server's memory budget, read by the held-bytes gauge.
	budget     atomic.Pointer[memlimit.Budget]
	collectors []prometheus.Collector // what reg holds
}

var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

func newMetrics() *metrics {
	const ns, sub = "strata", "generator"
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "requests_total",
			Help: "Requests to a plugin, by HTTP status code."}, []string{"plugin", "code"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "request_duration_seconds",
			Help: "Time to answer a request to a plugin.", Buckets: latencyBuckets}, []string{"plugin"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "in_flight_requests",
			Help: "Requests to a plugin being answered."}, []string{"plugin"}),
		backendCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "backend_calls_total",
			Help: "Calls of a plugin's backend, by result (ok, error, busy)."}, []string{"plugin", "result"}),
		backendDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "backend_duration_seconds",
			Help: "Time a plugin's backend took to answer.", Buckets: latencyBuckets}, []string{"plugin"}),
		queued: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "backend_queued_calls",
			Help: "Backend calls waiting for a slot under the plugin's concurrency limit."}, []string{"plugin"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "cache_lookups_total",
			Help: "Response cache lookups, by result: hit (a kept answer), shared (joined a call in progress), miss (called the backend)."},
			[]string{"plugin", "result"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "reloads_total",
			Help: "Reloads of watched files (static parameters, tokens, TLS certificates), by result."}, []string{"source", "result"}),
		memoryBudget: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "memory_budget_bytes",
			Help: "The memory the requests' backend outputs may hold at once (--memory-budget); 0 when there is none."}),
		memoryRefusals: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "memory_budget_refusals_total",
			Help: "Requests refused by the memory budget: an output larger than all of it, or no room for it before the request's timeout."}),
	}
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "memory_budget_held_bytes",
		Help: "What the requests in flight hold of the memory budget."}, func() float64 { return float64(m.budget.Load().Held()) })
	m.collectors = []prometheus.Collector{m.requests, m.requestDuration, m.inFlight, m.backendCalls, m.backendDuration, m.queued, m.cache, m.reloads,
		m.memoryBudget, m.memoryRefusals, held,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), stamp.Get().Collector()}
	m.reg.MustRegister(m.collectors...)
	return m
}

// MetricCollectors returns the collectors of every metric a generator
// server exports: the names and types dashboards and alerts may use,
// those of vectors with no series yet included (deploy/observability
// checks them).
func MetricCollectors() []prometheus.Collector {
	return newMetrics().collectors
}
