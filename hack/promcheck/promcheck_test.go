// Package promcheck_test checks strata's alerting rules and Grafana
// dashboards (deploy/observability, and the chart's copies) with
// Prometheus' own parsers: every rule group as Prometheus loads it
// (rulefmt: expressions, durations, annotation templates), every PromQL
// expression of the dashboards, and every metric they name against the
// metrics strata exports. Those names are deploy/observability/metrics.txt,
// which TestMetricNames in deploy/ writes from the servers' own collectors
// and fails on when it is out of date.
//
// A module of its own, so that Prometheus' module graph stays out of
// strata's go.mod; `make test` runs it.
package promcheck_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

const observability = "../../deploy/observability"

// exported reads the names strata's servers export, with the series
// names Prometheus derives from histograms and summaries.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(observability, "metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, typ, _ := strings.Cut(line, " ")
		names[name] = true
		switch typ {
		case "histogram":
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[name+s] = true
			}
		case "summary":
			for _, s := range []string{"_sum", "_count"} {
				names[name+s] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(names) < 20 {
		t.Fatalf("metrics.txt lists %d names: not the servers' metrics", len(names))
	}
	return names
}

var promql = parser.NewParser(parser.Options{})

// metricsOf parses expr and returns the metric names its selectors name;
// a selector without a name is an error (it would match any metric).
func metricsOf(expr string) ([]string, error) {
	e, err := promql.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == model.MetricNameLabel {
					name = m.Value
				}
			}
			out = append(out, name)
		}
		return nil
	})
	return out, nil
}

// reporter is what checkExpr reports to: a *testing.T, or TestCatches'.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

func checkExpr(t reporter, names map[string]bool, where, expr string) {
	t.Helper()
	metrics, err := metricsOf(expr)
	if err != nil {
		t.Errorf("%s: %v\n%s", where, err, expr)
		return
	}
	if len(metrics) == 0 {
		t.Errorf("%s: names no metric: %s", where, expr)
	}
	for _, m := range metrics {
		if m == "" {
			t.Errorf("%s: a selector without a metric name matches any metric: %s", where, expr)
			continue
		}
		if !names[m] {
			t.Errorf("%s: %s is no metric strata exports (deploy/observability/metrics.txt)", where, m)
		}
	}
}

// TestRules loads the PrometheusRules' groups as Prometheus loads a rule
// file and checks the metrics of every expression.
func TestRules(t *testing.T) {
	names := exported(t)
	for _, path := range []string{
		filepath.Join(observability, "prometheusrule.yaml"),
		"../../deploy/chart/strata/files/observability/prometheusrule.yaml",
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var obj struct {
			APIVersion string          `json:"apiVersion"`
			Kind       string          `json:"kind"`
			Metadata   json.RawMessage `json:"metadata"`
			Spec       json.RawMessage `json:"spec"`
		}
		if err := yaml.UnmarshalStrict(data, &obj); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if obj.APIVersion != "monitoring.coreos.com/v1" || obj.Kind != "PrometheusRule" {
			t.Fatalf("%s: %s %s, want a monitoring.coreos.com/v1 PrometheusRule", path, obj.APIVersion, obj.Kind)
		}
		spec, err := yaml.JSONToYAML(obj.Spec)
		if err != nil {
			t.Fatal(err)
		}
		groups, errs := rulefmt.Parse(spec, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
		for _, err := range errs {
			t.Errorf("%s: %v", path, err)
		}
		if groups == nil || len(groups.Groups) == 0 {
			t.Fatalf("%s: no rule groups", path)
		}
		alerts := 0
		for _, g := range groups.Groups {
			for _, r := range g.Rules {
				checkExpr(t, names, path+": "+r.Alert+r.Record, r.Expr)
				if r.Alert != "" {
					alerts++
					if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
						t.Errorf("%s: alert %s lacks a severity label or a summary and description", path, r.Alert)
					}
				}
			}
		}
		if alerts == 0 {
			t.Errorf("%s: no alerts", path)
		}
	}
}

// grafanaVars are the dashboards' variables, replaced by what Grafana
// would put there before the expression is parsed.
var grafanaVars = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "${datasource}", "prometheus")

// labelValues is Grafana's label_values(metric, label) query.
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)

// TestDashboards parses every PromQL expression of every dashboard (panel
// targets and variable queries) and checks the metrics they name.
func TestDashboards(t *testing.T) {
	names := exported(t)
	files, err := filepath.Glob(filepath.Join(observability, "dashboards", "*.json"))
	if err != nil || len(files) < 4 {
		t.Fatalf("dashboards: %v (%d files; one per server)", err, len(files))
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			UID    string `json:"uid"`
			Title  string `json:"title"`
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
			Templating struct {
				List []struct {
					Name  string `json:"name"`
					Type  string `json:"type"`
					Query any    `json:"query"`
				} `json:"list"`
			} `json:"templating"`
		}
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
			t.Errorf("%s: a dashboard needs a uid, a title and panels", path)
		}
		exprs := 0
		for _, p := range d.Panels {
			for _, tg := range p.Targets {
				exprs++
				checkExpr(t, names, path+": panel "+p.Title, grafanaVars.Replace(tg.Expr))
			}
		}
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			q, _ := v.Query.(map[string]any)
			s, _ := q["query"].(string)
			m := labelValues.FindStringSubmatch(s)
			if m == nil {
				t.Errorf("%s: variable %s: query %q is not label_values(metric, label)", path, v.Name, s)
				continue
			}
			exprs++
			checkExpr(t, names, path+": variable "+v.Name, m[1])
		}
		if exprs == 0 {
			t.Errorf("%s: no expressions", path)
		}
	}
}

// TestCatches checks that the check catches what it is for.
func TestCatches(t *testing.T) {
	names := map[string]bool{"strata_cmp_requests_total": true}
	for _, tc := range []struct{ expr, want string }{
		{`rate(strata_cmp_requests_total[5m]`, "unclosed"},
		{`rate(strata_cmp_request_total[5m])`, "strata_cmp_request_total"},
		{`{code="OK"}`, "without a metric name"},
		{`{code=~".*"}`, "vector selector must contain"},
		{`sum(rate(strata_cmp_requests_total[5m])) by`, "unexpected"},
	} {
		var got errors
		checkExpr(&got, names, "case", tc.expr)
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, tc.want) }) {
			t.Errorf("checking %s: %q, want an error with %q", tc.expr, got, tc.want)
		}
	}
}

// errors collects what checkExpr reports.
type errors []string

func (e *errors) Helper() {}

func (e *errors) Errorf(format string, args ...any) { *e = append(*e, fmt.Sprintf(format, args...)) }
