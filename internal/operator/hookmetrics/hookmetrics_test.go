package hookmetrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/hookmetrics"
)

func ops(t *testing.T, lines string) []hook.MetricOperation {
	t.Helper()
	o, err := hook.ParseMetrics([]byte(lines), "metrics")
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func check(t *testing.T, reg *prometheus.Registry, want string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

// TestSeedExample runs the example of addon-operator's documentation on
// grouped metrics, step by step.
func TestSeedExample(t *testing.T) {
	c := hookmetrics.NewCollector(hookmetrics.Limits{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	names := []string{"hook_metric", "hook1_special_metric", "hook2_special_metric", "common_metric"}

	if err := c.Apply("hook1.sh", ops(t, `{"group":"hook1", "name":"hook_metric", "action":"add", "value":1, "labels":{"kind":"pod"}}
{"group":"hook1", "name":"hook_metric", "action":"add", "value":1, "labels":{"kind":"replicaset"}}
{"group":"hook1", "name":"hook_metric", "action":"add", "value":1, "labels":{"kind":"deployment"}}
{"group":"hook1", "name":"hook1_special_metric", "action":"set", "value":12, "labels":{"label1":"value1"}}
{"group":"hook1", "name":"common_metric", "action":"set", "value":300, "labels":{"source":"source3"}}
{"name":"common_metric", "action":"set", "value":100, "labels":{"source":"source1"}}
`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply("hook2.sh", ops(t, `{"group":"hook2", "name":"hook_metric","action":"add", "value":1, "labels":{"kind":"configmap"}}
{"group":"hook2", "name":"hook_metric","action":"add", "value":1, "labels":{"kind":"secret"}}
{"group":"hook2", "name":"hook2_special_metric", "action":"set", "value":42}
{"name":"common_metric", "action":"set", "value":200, "labels":{"source":"source2"}}
`)); err != nil {
		t.Fatal(err)
	}
	check(t, reg, `# HELP common_metric common_metric
# TYPE common_metric gauge
common_metric{hook="hook1.sh",source="source1"} 100
common_metric{hook="hook1.sh",source="source3"} 300
common_metric{hook="hook2.sh",source="source2"} 200
# HELP hook1_special_metric hook1_special_metric
# TYPE hook1_special_metric gauge
hook1_special_metric{hook="hook1.sh",label1="value1"} 12
# HELP hook2_special_metric hook2_special_metric
# TYPE hook2_special_metric gauge
hook2_special_metric{hook="hook2.sh"} 42
# HELP hook_metric hook_metric
# TYPE hook_metric counter
hook_metric{hook="hook1.sh",kind="deployment"} 1
hook_metric{hook="hook1.sh",kind="pod"} 1
hook_metric{hook="hook1.sh",kind="replicaset"} 1
hook_metric{hook="hook2.sh",kind="configmap"} 1
hook_metric{hook="hook2.sh",kind="secret"} 1
`, names...)

	// hook1 runs again and writes one series of its group.
	if err := c.Apply("hook1.sh", ops(t, `{"group":"hook1", "name":"hook_metric", "action":"add", "value":1, "labels":{"kind":"pod"}}`)); err != nil {
		t.Fatal(err)
	}
	check(t, reg, `# HELP common_metric common_metric
# TYPE common_metric gauge
common_metric{hook="hook1.sh",source="source1"} 100
common_metric{hook="hook2.sh",source="source2"} 200
# HELP hook2_special_metric hook2_special_metric
# TYPE hook2_special_metric gauge
hook2_special_metric{hook="hook2.sh"} 42
# HELP hook_metric hook_metric
# TYPE hook_metric counter
hook_metric{hook="hook1.sh",kind="pod"} 2
hook_metric{hook="hook2.sh",kind="configmap"} 1
hook_metric{hook="hook2.sh",kind="secret"} 1
`, names...)

	// hook2 expires its group.
	if err := c.Apply("hook2.sh", ops(t, `{"group":"hook2", "action":"expire"}`)); err != nil {
		t.Fatal(err)
	}
	check(t, reg, `# HELP common_metric common_metric
# TYPE common_metric gauge
common_metric{hook="hook1.sh",source="source1"} 100
common_metric{hook="hook2.sh",source="source2"} 200
# HELP hook_metric hook_metric
# TYPE hook_metric counter
hook_metric{hook="hook1.sh",kind="pod"} 2
`, names...)

	// Without a group, a counter keeps counting across runs.
	for range 3 {
		if err := c.Apply("hook3.sh", ops(t, `{"name":"runs_total","add":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	check(t, reg, "# HELP runs_total runs_total\n# TYPE runs_total counter\nruns_total{hook=\"hook3.sh\"} 3\n", "runs_total")
}

func TestHistogramAndModule(t *testing.T) {
	c := hookmetrics.NewCollector(hookmetrics.Limits{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if err := c.ApplyModule("cert-manager", "hooks/h.sh", ops(t, `{"name":"latency","action":"observe","value":3,"buckets":[1,5,10]}
{"name":"latency","action":"observe","value":0.5,"buckets":[1,5,10]}
{"name":"latency","action":"observe","value":50,"buckets":[1,5,10]}`)); err != nil {
		t.Fatal(err)
	}
	check(t, reg, `# HELP latency latency
# TYPE latency histogram
latency_bucket{hook="hooks/h.sh",module="cert-manager",le="1"} 1
latency_bucket{hook="hooks/h.sh",module="cert-manager",le="5"} 2
latency_bucket{hook="hooks/h.sh",module="cert-manager",le="10"} 2
latency_bucket{hook="hooks/h.sh",module="cert-manager",le="+Inf"} 3
latency_sum{hook="hooks/h.sh",module="cert-manager"} 53.5
latency_count{hook="hooks/h.sh",module="cert-manager"} 3
`, "latency")
}

func TestApplyErrors(t *testing.T) {
	tests := []struct {
		name       string
		first, bad string
		module     bool
		want       string
	}{
		{"type changes", `{"name":"m","add":1}`, `{"name":"m","set":1}`, false,
			"metrics line 1: metric m is a counter (add), and this operation makes it a gauge (set); use one action per metric name"},
		{"labels change", `{"name":"m","set":1,"labels":{"a":"x"}}`, `{"name":"m","set":1,"labels":{"b":"x"}}`, false,
			"metrics line 1: metric m has the labels [a hook], and this operation gives [b hook]; give every series of a metric the same label names"},
		{"buckets change", `{"name":"m","action":"observe","value":1,"buckets":[1]}`, `{"name":"m","action":"observe","value":1,"buckets":[2]}`, false,
			"metrics line 1: histogram m has the buckets [1], and this operation gives [2]; keep the buckets of a histogram"},
		{"module label", ``, `{"name":"m","set":1,"labels":{"module":"x"}}`, true,
			"metrics line 1: metric m: the label \"module\" is the operator's; rename yours"},
		{"within one run", ``, "{\"name\":\"m\",\"set\":1}\n{\"name\":\"m\",\"add\":1}", false,
			"metrics line 2: metric m is a gauge (set), and this operation makes it a counter (add); use one action per metric name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := hookmetrics.NewCollector(hookmetrics.Limits{})
			apply := func(o []hook.MetricOperation) error {
				if tc.module {
					return c.ApplyModule("mod", "h", o)
				}
				return c.Apply("h", o)
			}
			if tc.first != "" {
				if err := apply(ops(t, tc.first)); err != nil {
					t.Fatal(err)
				}
			}
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(c)
			before, _ := testutil.GatherAndCount(reg)
			err := apply(ops(t, tc.bad))
			if err == nil || err.Error() != tc.want {
				t.Errorf("Apply error = %v, want %s", err, tc.want)
			}
			if after, _ := testutil.GatherAndCount(reg); after != before {
				t.Errorf("a failed Apply changed the series: %d before, %d after", before, after)
			}
		})
	}
}

func TestMaxSeries(t *testing.T) {
	c := hookmetrics.NewCollector(hookmetrics.Limits{MaxSeries: 2})
	if err := c.Apply("h", ops(t, `{"name":"a","set":1,"labels":{"x":"1"}}`+"\n"+`{"name":"a","set":1,"labels":{"x":"2"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply("h", ops(t, `{"name":"a","set":1,"labels":{"x":"3"}}`)); err == nil || err.Error() != "the hooks' metrics would have 3 series, more than the limit of 2" {
		t.Errorf("Apply error = %v", err)
	}
	// Rewriting an existing series is no new series.
	if err := c.Apply("h", ops(t, `{"name":"a","set":5,"labels":{"x":"2"}}`)); err != nil {
		t.Errorf("Apply: %v", err)
	}
}

// TestApplyChecksOperations: operations that did not come through
// hook.ParseMetrics are checked too, so that Collect never fails.
func TestApplyChecksOperations(t *testing.T) {
	c := hookmetrics.NewCollector(hookmetrics.Limits{})
	for _, op := range []hook.MetricOperation{
		{Name: "bad-name", Action: hook.MetricSet, Value: 1},
		{Name: "m", Action: hook.MetricSet, Value: 1, Labels: map[string]string{"__x": "y"}},
		{Name: "m", Action: hook.MetricAdd, Value: -1},
		{Name: "m", Action: "inc", Value: 1},
		{Action: hook.MetricExpire},
	} {
		if err := c.Apply("h", []hook.MetricOperation{op}); err == nil {
			t.Errorf("Apply(%+v) succeeded", op)
		}
	}
}
