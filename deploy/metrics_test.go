package deploy_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/strata-dev/strata/deploy/deploytest"
	"github.com/strata-dev/strata/internal/cli"
	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/generator"
	"github.com/strata-dev/strata/internal/golden"
	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/layers/controller"
	"github.com/strata-dev/strata/internal/operator"
)

const metricsHeader = `# The metrics strata's servers export, with their types: what the alerts and
# dashboards here may name. Written from the servers' own collectors by
# TestMetricNames (go test ./deploy -update), which fails when it is out of
# date; hack/promcheck checks every PromQL expression against it.
`

// TestMetricNames lists the metrics of every server, from their
// collectors, into deploy/observability/metrics.txt.
func TestMetricNames(t *testing.T) {
	cmp := cmpserver.NewMetrics()
	cmp.AddCache("repository", func() cmpserver.CacheStats { return cmpserver.CacheStats{} })
	cli.AddHelmWorkerMetrics(cmp, func() helmplugin.WorkerStats { return helmplugin.WorkerStats{} })
	var cs []prometheus.Collector
	cs = append(cs, cmp.Collectors()...)
	cs = append(cs, generator.MetricCollectors()...)
	cs = append(cs, controller.MetricCollectors()...)
	cs = append(cs, operator.MetricCollectors(operator.DefaultSettings().MetricsPrefix)...)
	types := map[string]string{}
	for _, c := range cs {
		for name, typ := range collectorTypes(t, c) {
			if old, ok := types[name]; ok && old != typ {
				t.Errorf("metric %s is a %s and a %s", name, old, typ)
			}
			types[name] = typ
		}
	}
	for _, want := range []string{"strata_cmp_requests_total", "strata_generator_backend_calls_total", "strata_layers_reconciles_total", "addon_operator_tasks_queue_length", "strata_cmp_helm_renders_stopped_total"} {
		if types[want] == "" {
			t.Errorf("the servers' collectors do not describe %s", want)
		}
	}
	var lines []string
	for name, typ := range types {
		lines = append(lines, name+" "+typ)
	}
	slices.Sort(lines)
	golden.CheckFile(t, deploytest.Path(t, "deploy/observability/metrics.txt"), []byte(metricsHeader+strings.Join(lines, "\n")+"\n"))
}

var fqName = regexp.MustCompile(`^Desc\{fqName: "([^"]+)"`)

// collectorTypes returns the names and types of the metrics c exports: a
// vector's from its type (it may have no series), others' from what they
// collect.
func collectorTypes(t *testing.T, c prometheus.Collector) map[string]string {
	t.Helper()
	out := map[string]string{}
	descs := make(chan *prometheus.Desc, 1024)
	c.Describe(descs)
	close(descs)
	vecType := ""
	// A vector may have no series to collect: its type tells. (The
	// interfaces of single metrics overlap, a Gauge is a Counter too:
	// those are collected.)
	switch c.(type) {
	case *prometheus.HistogramVec:
		vecType = "histogram"
	case *prometheus.SummaryVec:
		vecType = "summary"
	case *prometheus.CounterVec:
		vecType = "counter"
	case *prometheus.GaugeVec:
		vecType = "gauge"
	}
	for d := range descs {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read the name of %s", d)
		}
		out[m[1]] = vecType
	}
	if vecType != "" {
		return out
	}
	metrics := make(chan prometheus.Metric, 4096)
	c.Collect(metrics)
	close(metrics)
	for m := range metrics {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		name := fqName.FindStringSubmatch(m.Desc().String())[1]
		switch {
		case pb.Histogram != nil:
			out[name] = "histogram"
		case pb.Summary != nil:
			out[name] = "summary"
		case pb.Counter != nil:
			out[name] = "counter"
		case pb.Gauge != nil:
			out[name] = "gauge"
		default:
			out[name] = "untyped"
		}
	}
	for name, typ := range out {
		if typ == "" {
			out[name] = "other" // described, not collected now (a cache collector with no caches)
		}
	}
	return out
}
