package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/golden"
	"github.com/strata-dev/strata/internal/operator"
	"github.com/strata-dev/strata/internal/operator/debug"
)

// startCase starts the operator on a lifecycle case's tree, with the debug
// socket, and waits for the first converge.
func startCase(t *testing.T, name string) (*harness, string) {
	t.Helper()
	c := golden.Cases(t, "testdata/lifecycle/"+name+".txtar")[0]
	dir := t.TempDir()
	for _, f := range c.Archive.Files {
		if !strings.HasPrefix(f.Name, "next/") && f.Name != "history" {
			writeFile(t, filepath.Join(dir, f.Name), f.Data)
		}
	}
	h := &harness{t: t, dir: dir}
	sock := filepath.Join(dir, "debug.sock")
	h.extra = func(s *operator.Settings) { s.DebugUnixSocket = sock }
	h.start()
	t.Cleanup(h.stop)
	return h, sock
}

func TestDebugAPI(t *testing.T) {
	_, sock := startCase(t, "startup")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	eventually.True(t, "the debug socket "+sock, func() (bool, string) {
		_, err := os.Stat(sock)
		return err == nil, fmt.Sprint(err)
	})
	get := func(path string) string {
		t.Helper()
		data, err := debug.Get(ctx, sock, path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return string(data)
	}
	tests := []struct {
		path string
		want []string // substrings of the answer
	}{
		{"/queue/list.json", []string{`"name":"main"`, `"tasks":[]`}},
		{"/global/values.json", []string{`"domain":"example.org"`}},
		{"/global/values.json?explain=true", []string{`"path":"global.domain"`, `000-init.sh`}},
		{"/global/patches.json", []string{`"hook":"000-init.sh"`, `"binding":"onStartup"`, `"path":"/global/domain"`}},
		{"/global/config.json", []string{`"global":null`}},
		{"/module/list.json", []string{`"name":"a","key":"a","order":10`, `"state":"enabled"`, `"reason":"the enabled script returned false: not today"`}},
		{"/module/a/values.json", []string{`{"a":{}}`}},
		{"/module/a/render.json", []string{`domain: example.org`}},
		{"/module/a/snapshots.json", []string{`{}`}},
		{"/module/a/values.yaml", []string{"a: {}"}},
	}
	for _, tc := range tests {
		got := get(tc.path)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("GET %s = %s\nwant it to contain %s", tc.path, got, w)
			}
		}
	}
	for _, path := range []string{"/module/nope/values.json", "/module/a/nonsense.json", "/global/values.xml"} {
		if _, err := debug.Get(ctx, sock, path); err == nil {
			t.Errorf("GET %s: no error", path)
		}
	}
}

func TestHTTP(t *testing.T) {
	h, _ := startCase(t, "startup")
	srv := httptest.NewServer(h.eng.HTTPHandler())
	defer srv.Close()
	for path, want := range map[string]string{
		"/healthz": "ok",
		"/readyz":  "ok",
		"/metrics": `addon_operator_module_hook_run_success_total{activation="OperatorStartup",binding="beforeHelm",hook="hooks/all.sh",module="a",queue="main"} 1`,
	} {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("GET %s = %d %s\nwant 200 with %s", path, resp.StatusCode, body, want)
		}
	}
	for _, name := range []string{"live_ticks", "tasks_queue_length", "convergence_total", "binding_count", "global_hook_run_seconds", "module_run_seconds", "module_enabled", "global_values_size_bytes",
		"global_hook_run_sys_cpu_seconds", "global_hook_run_user_cpu_seconds", "global_hook_run_max_rss_bytes",
		"module_hook_run_sys_cpu_seconds", "module_hook_run_user_cpu_seconds", "module_hook_run_max_rss_bytes",
		"tasks_queue_action_duration_seconds_count{queue_action=\"GetFirst\",queue_name=\"main\"}"} {
		resp, err := srv.Client().Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), "addon_operator_"+name) {
			t.Errorf("/metrics has no addon_operator_%s", name)
		}
	}
	var ms []operator.ModuleView
	data, _ := json.Marshal(h.eng.Modules())
	if err := json.Unmarshal(data, &ms); err != nil || len(ms) != 4 {
		t.Errorf("Modules() = %s, want 4 modules", data)
	}
}

func TestSnapshotMetrics(t *testing.T) {
	h, _ := startCase(t, "kubernetes")
	rec := httptest.NewRecorder()
	h.eng.HTTPHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`addon_operator_kube_snapshot_objects{binding="cms",hook="hooks/watch.sh",module="a",queue="main"} 1`,
		`addon_operator_kube_snapshot_objects{binding="nodes",hook="nodes.sh",module="",queue="main"} 0`,
		`addon_operator_kube_snapshot_objects{binding="cms-snapshot-only",hook="nodes.sh",module="",queue="main"} 1`,
		`addon_operator_kube_jq_filter_duration_seconds_count{binding="cms",hook="hooks/watch.sh",kind="ConfigMap",module="a",queue="main"}`,
		`strata_build_info{commit=`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// A change of the objects is timed per binding that watches its kind.
	writeFile(t, filepath.Join(h.dir, "objects", "extra.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: default\n  labels: {watch: \"yes\"}\n"))
	want := `addon_operator_kube_event_duration_seconds_count{binding="cms",hook="hooks/watch.sh",kind="ConfigMap",module="a",queue="main"}`
	eventually.True(t, "/metrics with "+want, func() (bool, string) {
		rec := httptest.NewRecorder()
		h.eng.HTTPHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return strings.Contains(rec.Body.String(), want), "not there yet"
	})
}

// TestAllowFailureMetric: a failing schedule with allowFailure counts in
// global_hook_run_allowed_errors_total, not in the errors counter, and its
// queue does not stall.
func TestAllowFailureMetric(t *testing.T) {
	h, _ := startCase(t, "schedule-global")
	scrape := func() string {
		rec := httptest.NewRecorder()
		h.eng.HTTPHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		return rec.Body.String()
	}
	allowed := regexp.MustCompile(`(?m)^addon_operator_global_hook_run_allowed_errors_total\{activation="Schedule",binding="always-fails",hook="flaky.sh",queue="flaky"\} ([2-9]|\d\d+)$`)
	eventually.True(t, "two allowed failures of flaky.sh", func() (bool, string) {
		m := scrape()
		return allowed.MatchString(m), m
	})
	if m := scrape(); strings.Contains(m, `global_hook_run_errors_total{activation="Schedule",binding="always-fails"`) {
		t.Errorf("an allowed failure counted as an error:\n%s", m)
	}
}
