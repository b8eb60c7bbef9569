package operator

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the engine's own metrics, named as addon-operator's
// documentation names them, under Settings.MetricsPrefix.
type metrics struct {
	bindingCount *prometheus.GaugeVec

	configValuesErrors prometheus.Counter

	globalHookSeconds   *prometheus.HistogramVec
	globalHookErrors    *prometheus.CounterVec
	globalHookAllowed   *prometheus.CounterVec
	globalHookSuccesses *prometheus.CounterVec
	globalHookSysCPU    *prometheus.HistogramVec
	globalHookUserCPU   *prometheus.HistogramVec
	globalHookMaxRSS    *prometheus.GaugeVec

	moduleHookSeconds   *prometheus.HistogramVec
	moduleHookErrors    *prometheus.CounterVec
	moduleHookAllowed   *prometheus.CounterVec
	moduleHookSuccesses *prometheus.CounterVec
	moduleHookSysCPU    *prometheus.HistogramVec
	moduleHookUserCPU   *prometheus.HistogramVec
	moduleHookMaxRSS    *prometheus.GaugeVec

	discoverErrors  prometheus.Counter
	moduleRunErrors *prometheus.CounterVec
	moduleDelErrors *prometheus.CounterVec
	moduleRunSecs   *prometheus.HistogramVec
	moduleHelmSecs  *prometheus.HistogramVec
	helmOpSecs      *prometheus.HistogramVec
	absentResources *prometheus.CounterVec

	convergenceSeconds *prometheus.CounterVec
	convergenceTotal   *prometheus.CounterVec

	queueLength *prometheus.GaugeVec
	taskWait    *prometheus.CounterVec
	liveTicks   prometheus.Counter

	globalValuesBytes prometheus.Gauge
	moduleValuesBytes *prometheus.GaugeVec
	moduleEnabled     *prometheus.GaugeVec
	moduleMaintenance *prometheus.GaugeVec

	snapshotObjects *prometheus.GaugeVec
	snapshotBytes   *prometheus.GaugeVec
	kindsWaiting    prometheus.Gauge
	kubeJqSeconds   *prometheus.HistogramVec
	kubeEventSecs   *prometheus.HistogramVec
	queueActionSecs *prometheus.HistogramVec
}

var hookLabels = []string{"hook", "binding", "activation", "queue"}
var moduleHookLabels = []string{"module", "hook", "binding", "activation", "queue"}

// kubeLabels label the kubernetes binding metrics, as addon-operator's.
var kubeLabels = []string{"module", "hook", "binding", "queue", "kind"}

func newMetrics(prefix string, reg prometheus.Registerer) *metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: prefix + name, Help: help}, labels)
		reg.MustRegister(v)
		return v
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: prefix + name, Help: help}, labels)
		reg.MustRegister(v)
		return v
	}
	// fineHist is for work measured in micro- to milliseconds.
	fineHist := func(name, help string, labels ...string) *prometheus.HistogramVec {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: prefix + name, Help: help,
			Buckets: []float64{1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10}}, labels)
		reg.MustRegister(v)
		return v
	}
	hist := func(name, help string, labels ...string) *prometheus.HistogramVec {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: prefix + name, Help: help,
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}}, labels)
		reg.MustRegister(v)
		return v
	}
	m := &metrics{
		bindingCount:        gauge("binding_count", "Bindings of every hook; global hooks have an empty module.", "module", "hook"),
		configValuesErrors:  counter("config_values_errors_total", "Config store contents rejected by validation.").WithLabelValues(),
		globalHookSeconds:   hist("global_hook_run_seconds", "Global hook run time.", hookLabels...),
		globalHookErrors:    counter("global_hook_run_errors_total", "Failed global hook runs without allowFailure.", hookLabels...),
		globalHookAllowed:   counter("global_hook_run_allowed_errors_total", "Failed global hook runs forgiven by allowFailure.", hookLabels...),
		globalHookSuccesses: counter("global_hook_run_success_total", "Successful global hook runs.", hookLabels...),
		globalHookSysCPU:    hist("global_hook_run_sys_cpu_seconds", "System CPU time of a global hook run.", hookLabels...),
		globalHookUserCPU:   hist("global_hook_run_user_cpu_seconds", "User CPU time of a global hook run.", hookLabels...),
		globalHookMaxRSS:    gauge("global_hook_run_max_rss_bytes", "Peak resident memory of the last global hook run.", hookLabels...),
		moduleHookSeconds:   hist("module_hook_run_seconds", "Module hook run time.", moduleHookLabels...),
		moduleHookErrors:    counter("module_hook_run_errors_total", "Failed module hook runs without allowFailure.", moduleHookLabels...),
		moduleHookAllowed:   counter("module_hook_run_allowed_errors_total", "Failed module hook runs forgiven by allowFailure.", moduleHookLabels...),
		moduleHookSuccesses: counter("module_hook_run_success_total", "Successful module hook runs.", moduleHookLabels...),
		moduleHookSysCPU:    hist("module_hook_run_sys_cpu_seconds", "System CPU time of a module hook run.", moduleHookLabels...),
		moduleHookUserCPU:   hist("module_hook_run_user_cpu_seconds", "User CPU time of a module hook run.", moduleHookLabels...),
		moduleHookMaxRSS:    gauge("module_hook_run_max_rss_bytes", "Peak resident memory of the last module hook run.", moduleHookLabels...),
		discoverErrors:      counter("module_discover_errors_total", "Failed module discoveries.").WithLabelValues(),
		moduleRunErrors:     counter("module_run_errors_total", "Failed module runs.", "module"),
		moduleDelErrors:     counter("module_delete_errors_total", "Failed module deletions.", "module"),
		moduleRunSecs:       hist("module_run_seconds", "Module run time.", "module"),
		moduleHelmSecs:      hist("module_helm_seconds", "Module Helm upgrade time.", "module", "activation"),
		helmOpSecs:          hist("helm_operation_seconds", "Helm operation time.", "module", "activation", "operation"),
		absentResources:     counter("modules_absent_resources_total", "Resources of module releases found absent by the auto-healing monitor.", "module", "resource"),
		convergenceSeconds:  counter("convergence_seconds", "Seconds spent in 'reload all modules'.", "activation"),
		convergenceTotal:    counter("convergence_total", "'Reload all modules' runs.", "activation"),
		queueLength:         gauge("tasks_queue_length", "Tasks in a queue.", "queue"),
		taskWait:            counter("task_wait_in_queue_seconds_total", "Seconds tasks waited in a queue.", "module", "hook", "binding", "queue"),
		liveTicks:           counter("live_ticks", "Increases every 10 seconds while the operator lives.").WithLabelValues(),
		globalValuesBytes:   gauge("global_values_size_bytes", "Size of the global values, JSON.").WithLabelValues(),
		moduleValuesBytes:   gauge("module_values_size_bytes", "Size of a module's values, JSON.", "module"),
		moduleEnabled:       gauge("module_enabled", "1 when the module is enabled, 0 when not.", "module"),
		moduleMaintenance:   gauge("mm_module_maintenance", "1 for a module whose maintenance state in the config store is NoResourceReconciliation.", "module", "state"),
		snapshotObjects:     gauge("kube_snapshot_objects", "Objects in a kubernetes binding's snapshot; global hooks have an empty module.", "module", "hook", "binding", "queue"),
		snapshotBytes:       gauge("kube_snapshot_bytes", "JSON size of a kubernetes binding's snapshot (objects and filter results).", "module", "hook", "binding", "queue"),
		kindsWaiting:        gauge("kube_bindings_waiting_for_kind", "Kubernetes bindings whose apiVersion/kind the API server does not serve (yet): a CRD not installed.").WithLabelValues(),
		kubeJqSeconds:       fineHist("kube_jq_filter_duration_seconds", "Time of one jqFilter run on one object.", kubeLabels...),
		kubeEventSecs:       fineHist("kube_event_duration_seconds", "Time to handle one object change of a kubernetes binding.", kubeLabels...),
		queueActionSecs:     fineHist("tasks_queue_action_duration_seconds", "Time of one low-level action on a task queue (QUEUE_ACTIONS_METRICS=no turns it off).", "queue_name", "queue_action"),
	}
	return m
}

// MetricCollectors returns the collectors of every metric of the engine
// (under prefix, DefaultMetricsPrefix by default) and of the process: the
// names and types dashboards and alerts may use, those of vectors with no
// series yet included (deploy/observability checks them). The hooks' own
// metrics are the modules' and are not among them.
func MetricCollectors(prefix string) []prometheus.Collector {
	var rec recorder
	newMetrics(prefix, &rec)
	rec.MustRegister(newLeaderGauge(prefix), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
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
