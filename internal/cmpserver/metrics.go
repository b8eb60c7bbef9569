package cmpserver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
	"github.com/strata-dev/strata/internal/cmpserver/tarball"
	"github.com/strata-dev/strata/internal/hookexec"
	"github.com/strata-dev/strata/internal/stamp"
)

// Metrics are a plugin server's Prometheus metrics, in a registry of
// their own, and its /healthz and /readyz. Make them with NewMetrics, set
// Server.Metrics and CommandOptions.Observe to them, and serve Handler. A
// nil *Metrics records nothing.
type Metrics struct {
	reg             *prometheus.Registry
	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	inFlight        *prometheus.GaugeVec
	received        *prometheus.CounterVec
	commands        *prometheus.CounterVec
	commandDuration *prometheus.HistogramVec
	diskStops       *prometheus.CounterVec
	written         prometheus.Gauge
	caches          *cacheCollector
	ready           atomic.Bool

	mu         sync.Mutex
	collectors []prometheus.Collector // what reg holds, for Describe
}

// CacheStats are a cache's counters since start (Hits, Misses, Evictions)
// and its contents now (Bytes, Entries).
type CacheStats struct {
	Hits, Misses, Evictions uint64
	Bytes                   int64
	Entries                 int
}

// latencyBuckets span a 10-file request on tmpfs (a millisecond) to a
// monorepo on a slow disk (tens of seconds).
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// NewMetrics returns a server's metrics, with the Go runtime's and the
// process's.
func NewMetrics() *Metrics {
	const ns, sub = "strata", "cmp"
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "requests_total",
			Help: "Requests answered, by RPC and gRPC status code (OK, InvalidArgument, Unknown for a failing plugin, DeadlineExceeded, ...)."},
			[]string{"rpc", "code"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "request_duration_seconds",
			Help: "Time from a request's start to its answer, receiving the repository included, by RPC.", Buckets: latencyBuckets}, []string{"rpc"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "in_flight_requests",
			Help: "Requests being answered, by RPC."}, []string{"rpc"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "received_bytes_total",
			Help: "Bytes of repository tar.gz received in file chunks, by RPC."}, []string{"rpc"}),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "commands_total",
			Help: "Plugin commands run, by step (init, generate, discover, parameters) and exit status: the exit code, signal, timeout, or error (did not start, output too large)."},
			[]string{"step", "exit"}),
		commandDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "command_duration_seconds",
			Help: "Time a plugin command ran, by step.", Buckets: latencyBuckets}, []string{"step"}),
		diskStops: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "written_budget_stops_total",
			Help: "Requests stopped because their commands wrote more into their workspace than a disk budget allows, by budget: request (--max-written-bytes), total (--max-written-bytes-total)."},
			[]string{"budget"}),
		written: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "written_bytes",
			Help: "What the commands of the requests in flight have written into their workspaces, as last measured (bounded by --max-written-bytes-total)."}),
		caches: &cacheCollector{},
	}
	for _, b := range []string{"request", "total"} {
		m.diskStops.WithLabelValues(b)
	}
	m.register(m.requests, m.requestDuration, m.inFlight, m.received, m.commands, m.commandDuration, m.diskStops, m.written, m.caches,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), stamp.Get().Collector())
	return m
}

// register registers cs with the server's registry.
func (m *Metrics) register(cs ...prometheus.Collector) {
	m.reg.MustRegister(cs...)
	m.mu.Lock()
	m.collectors = append(m.collectors, cs...)
	m.mu.Unlock()
}

// Collectors returns every collector m exports metrics from: the names
// and types dashboards and alerts may use, those of vectors with no series
// yet included (deploy/observability checks them).
func (m *Metrics) Collectors() []prometheus.Collector {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.collectors)
}

// AddCache exports a cache's counters under the label cache=name, read
// from stats at every scrape: strata_cmp_cache_{hits,misses,evictions}_total,
// strata_cmp_cache_bytes and strata_cmp_cache_entries.
func (m *Metrics) AddCache(name string, stats func() CacheStats) {
	if m == nil {
		return
	}
	m.caches.mu.Lock()
	defer m.caches.mu.Unlock()
	m.caches.caches = append(m.caches.caches, namedCache{name, stats})
}

// Handler serves /metrics, /healthz (the process is up) and /readyz (the
// server is serving gRPC; 503 before and once shutdown began).
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !m.ready.Load() {
			http.Error(w, "not serving", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok\n")
	})
	return mux
}

// Serve serves Handler on lis until ctx is done.
func (m *Metrics) Serve(ctx context.Context, lis net.Listener) error {
	srv := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	if err := srv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (m *Metrics) setReady(ok bool) {
	if m != nil {
		m.ready.Store(ok)
	}
}

// serverOptions are the interceptors that count the requests.
func (m *Metrics) serverOptions() []grpc.ServerOption {
	if m == nil {
		return nil
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(m.unary), grpc.ChainStreamInterceptor(m.stream)}
}

// rpcName is the method's name without its service.
func rpcName(fullMethod string) string {
	return fullMethod[strings.LastIndexByte(fullMethod, '/')+1:]
}

func (m *Metrics) observe(rpc string, start time.Time, err error) {
	m.requests.WithLabelValues(rpc, status.Code(err).String()).Inc()
	m.requestDuration.WithLabelValues(rpc).Observe(time.Since(start).Seconds())
}

func (m *Metrics) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	rpc := rpcName(info.FullMethod)
	g := m.inFlight.WithLabelValues(rpc)
	g.Inc()
	defer g.Dec()
	start := time.Now()
	resp, err := handler(ctx, req)
	m.observe(rpc, start, err)
	return resp, err
}

func (m *Metrics) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	rpc := rpcName(info.FullMethod)
	g := m.inFlight.WithLabelValues(rpc)
	g.Inc()
	defer g.Dec()
	start := time.Now()
	err := handler(srv, &countingStream{ServerStream: ss, bytes: m.received.WithLabelValues(rpc)})
	m.observe(rpc, start, err)
	return err
}

// countingStream counts the bytes of the file chunks it receives.
type countingStream struct {
	grpc.ServerStream
	bytes prometheus.Counter
}

func (s *countingStream) RecvMsg(msg any) error {
	err := s.ServerStream.RecvMsg(msg)
	if err == nil {
		if r, ok := msg.(*pluginpb.AppStreamRequest); ok {
			if n := len(r.GetFile().GetChunk()); n > 0 {
				s.bytes.Add(float64(n))
			}
		}
	}
	return err
}

// diskStopped counts a request stopped by the disk budget of its kind.
func (m *Metrics) diskStopped(budget string) {
	if m != nil {
		m.diskStops.WithLabelValues(budget).Inc()
	}
}

// setWritten records what the requests in flight have written.
func (m *Metrics) setWritten(n int64) {
	if m != nil {
		m.written.Set(float64(n))
	}
}

// ObserveCommand records a plugin command's duration and exit status, as
// CommandOptions.Observe.
func (m *Metrics) ObserveCommand(step string, res *hookexec.Result, err error) {
	if m == nil {
		return
	}
	if res != nil {
		m.commandDuration.WithLabelValues(step).Observe(res.Duration.Seconds())
	}
	m.commands.WithLabelValues(step, exitLabel(err)).Inc()
}

// exitLabel names how a command ended: its exit code, "signal",
// "timeout", or "error" when it did not run to its end for another reason
// (it did not start, its output was too large, the request was
// cancelled).
func exitLabel(err error) string {
	var exitErr *hookexec.ExitError
	switch {
	case err == nil:
		return "0"
	case errors.Is(err, hookexec.ErrTimeout):
		return "timeout"
	case errors.As(err, &exitErr) && exitErr.Signal != 0:
		return "signal"
	case errors.As(err, &exitErr):
		return strconv.Itoa(exitErr.ExitCode)
	}
	return "error"
}

// StoreCache returns the repository cache's counters as AddCache wants
// them.
func StoreCache(s *tarball.Store) func() CacheStats {
	return func() CacheStats {
		st := s.Stats()
		return CacheStats{Hits: uint64(st.Hits), Misses: uint64(st.Misses), Evictions: uint64(st.Evictions),
			Bytes: int64(st.Bytes), Entries: int(st.Entries)}
	}
}

// A cacheCollector reads the caches' counters at every scrape.
type cacheCollector struct {
	mu     sync.Mutex
	caches []namedCache
}

type namedCache struct {
	name  string
	stats func() CacheStats
}

var (
	cacheHits = prometheus.NewDesc("strata_cmp_cache_hits_total",
		"Cache lookups that found the entry: repository (trees by tar.gz checksum), helm_chart (loaded charts), helm_document (rendered documents read), helm_values (values files parsed), helm_announcements (helm-parameters lists).",
		[]string{"cache"}, nil)
	cacheMisses = prometheus.NewDesc("strata_cmp_cache_misses_total",
		"Cache lookups that did not find the entry.", []string{"cache"}, nil)
	cacheEvictions = prometheus.NewDesc("strata_cmp_cache_evictions_total",
		"Entries removed from the cache to stay within its size.", []string{"cache"}, nil)
	cacheBytes = prometheus.NewDesc("strata_cmp_cache_bytes",
		"Approximate size of what the cache holds now (the repository cache: on disk).", []string{"cache"}, nil)
	cacheEntries = prometheus.NewDesc("strata_cmp_cache_entries",
		"Entries the cache holds now.", []string{"cache"}, nil)
)

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cacheHits, cacheMisses, cacheEvictions, cacheBytes, cacheEntries} {
		ch <- d
	}
}

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	caches := c.caches
	c.mu.Unlock()
	for _, nc := range caches {
		st := nc.stats()
		ch <- prometheus.MustNewConstMetric(cacheHits, prometheus.CounterValue, float64(st.Hits), nc.name)
		ch <- prometheus.MustNewConstMetric(cacheMisses, prometheus.CounterValue, float64(st.Misses), nc.name)
		ch <- prometheus.MustNewConstMetric(cacheEvictions, prometheus.CounterValue, float64(st.Evictions), nc.name)
		ch <- prometheus.MustNewConstMetric(cacheBytes, prometheus.GaugeValue, float64(st.Bytes), nc.name)
		ch <- prometheus.MustNewConstMetric(cacheEntries, prometheus.GaugeValue, float64(st.Entries), nc.name)
	}
}
