package controller

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-dev/strata/internal/stamp"
)

// metrics are the controller's own, beside controller-runtime's
// (controller_runtime_reconcile_total, _errors_total, _time_seconds, workqueue_*).
type metrics struct {
	reconciles     *prometheus.CounterVec   // result
	renderDuration *prometheus.HistogramVec // result
	layers         *prometheus.GaugeVec     // namespace, app, kind
	ready          *prometheus.GaugeVec     // namespace, app
	lastSuccess    *prometheus.GaugeVec     // namespace, app
	writes         *prometheus.CounterVec   // kind
}

// Results of a reconcile, as the label of strata_layers_reconciles_total.
const (
	resultSuccess   = "success"   // the outputs hold the merged values
	resultFailure   = "failure"   // Ready is False: the App or a layer must be fixed
	resultRetry     = "retry"     // a transient error: retried with backoff
	resultUnchanged = "unchanged" // the App is gone or being deleted
)

// newMetrics registers the controller's metrics with reg. A collector
// already registered there (by another Manager in the same process) is
// shared.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_layers_reconciles_total",
			Help: "App reconciles by result: success, failure (Ready False), retry (transient error), unchanged (App gone).",
		}, []string{"result"}),
		renderDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "strata_layers_render_duration_seconds",
			Help:    "Time to read an App's layers from the cache and merge them, by result (success, error).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"result"}),
		layers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "strata_layers_app_layers",
			Help: "Layers merged into an App's values at its last successful reconcile, by kind (ConfigMap, Secret).",
		}, []string{"namespace", "app", "kind"}),
		ready: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "strata_layers_app_ready",
			Help: "1 when the App's outputs hold its merged values (condition Ready True), else 0.",
		}, []string{"namespace", "app"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "strata_layers_app_last_success_timestamp_seconds",
			Help: "Unix time of the App's last successful reconcile.",
		}, []string{"namespace", "app"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_layers_output_writes_total",
			Help: "Output ConfigMaps and Secrets created or updated, by kind.",
		}, []string{"kind"}),
	}
	var err error
	m.reconciles, err = register(reg, m.reconciles)
	if err == nil {
		m.renderDuration, err = register(reg, m.renderDuration)
	}
	if err == nil {
		m.layers, err = register(reg, m.layers)
	}
	if err == nil {
		m.ready, err = register(reg, m.ready)
	}
	if err == nil {
		m.lastSuccess, err = register(reg, m.lastSuccess)
	}
	if err == nil {
		m.writes, err = register(reg, m.writes)
	}
	if err == nil {
		_, err = register(reg, stamp.Get().Collector())
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}

func (m *metrics) observeRender(d time.Duration, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	m.renderDuration.WithLabelValues(result).Observe(d.Seconds())
}

func (m *metrics) succeeded(namespace, app string, configMaps, secrets int, now time.Time) {
	m.layers.WithLabelValues(namespace, app, "ConfigMap").Set(float64(configMaps))
	m.layers.WithLabelValues(namespace, app, "Secret").Set(float64(secrets))
	m.ready.WithLabelValues(namespace, app).Set(1)
	m.lastSuccess.WithLabelValues(namespace, app).Set(float64(now.Unix()))
}

func (m *metrics) failed(namespace, app string) {
	m.ready.WithLabelValues(namespace, app).Set(0)
}

// forget drops the series of an App that is gone.
func (m *metrics) forget(namespace, app string) {
	labels := prometheus.Labels{"namespace": namespace, "app": app}
	m.layers.DeletePartialMatch(labels)
	m.ready.Delete(labels)
	m.lastSuccess.Delete(labels)
}

// MetricCollectors returns the collectors of the controller's own
// metrics (strata_layers_*): the names and types dashboards and alerts
// may use, those of vectors with no series yet included
// (deploy/observability checks them).
func MetricCollectors() []prometheus.Collector {
	var rec recorder
	if _, err := newMetrics(&rec); err != nil {
		panic(err) // a recorder takes every collector
	}
	return rec.collectors
}

// A recorder is a Registerer that keeps what it is given.
type recorder struct{ collectors []prometheus.Collector }

func (r *recorder) Register(c prometheus.Collector) error {
	r.collectors = append(r.collectors, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	r.collectors = append(r.collectors, cs...)
}

func (r *recorder) Unregister(prometheus.Collector) bool { return false }
