package cli_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/strata-dev/strata/internal/cli"
	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/hookexec"
)

// serveWithMetrics runs `strata cmp serve ARGS... --metrics-listen
// unix:PATH` in a new directory, stopped when the test ends, and returns
// the directory (its socket directory) and a getter of its metrics
// server's paths.
func serveWithMetrics(t *testing.T, args ...string) (string, func(path string) (int, string)) {
	t.Helper()
	dir, err := os.MkdirTemp("", "cmp") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	metrics := filepath.Join(dir, "metrics.sock")
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, append(append([]string{"cmp", "serve"}, args...), "--socket-dir", dir, "--cache-dir", filepath.Join(dir, "cache"),
			"--metrics-listen", "unix:"+metrics), strings.NewReader(""), &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("strata cmp serve exited %d\nstderr:\n%s", code, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("strata cmp serve did not stop\nstderr:\n%s", stderr.String())
		}
	})
	for i := 0; ; i++ {
		socks, _ := filepath.Glob(filepath.Join(dir, "*.sock"))
		if len(socks) == 2 {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("strata cmp serve exited %d before listening\nstderr:\n%s", code, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if i > 1500 {
			t.Fatalf("no sockets after 30s\nstderr:\n%s", stderr.String())
		}
	}
	web := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", metrics)
	}}}
	return dir, func(path string) (int, string) {
		t.Helper()
		resp, err := web.Get("http://strata" + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
}

// TestCmpServeMetrics runs `strata cmp serve --builtin helm
// --metrics-listen unix:PATH`, renders a chart twice over gRPC, and reads
// the metrics: the requests, the repository cache and the Helm caches
// count what happened.
func TestCmpServeMetrics(t *testing.T) {
	dir, get := serveWithMetrics(t, "--builtin", "helm")
	socket := filepath.Join(dir, "helm.sock")
	ctx := t.Context()

	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pluginpb.NewConfigManagementPluginServiceClient(conn)
	repo := tarGz(t, helmRepo)
	for range 2 {
		s, err := client.GenerateManifest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sendApp(t, s, "apps/web", map[string]string{"ARGOCD_APP_NAME": "web", "ARGOCD_APP_NAMESPACE": "team-a"}, repo)
		if _, err := s.CloseAndRecv(); err != nil {
			t.Fatal(err)
		}
	}

	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", code)
	}
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz = %d, want 200", code)
	}
	code, body := get("/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d", code)
	}
	// Two renders of one chart of two templates: the repository and the
	// chart come from the caches the second time, and so do both
	// rendered documents.
	for _, line := range []string{
		`strata_cmp_requests_total{code="OK",rpc="GenerateManifest"} 2`,
		`strata_cmp_request_duration_seconds_count{rpc="GenerateManifest"} 2`,
		`strata_cmp_received_bytes_total{rpc="GenerateManifest"} ` + strconv.Itoa(2*len(repo)),
		`strata_cmp_cache_hits_total{cache="repository"} 1`,
		`strata_cmp_cache_misses_total{cache="repository"} 1`,
		`strata_cmp_cache_hits_total{cache="helm_chart"} 1`,
		`strata_cmp_cache_misses_total{cache="helm_chart"} 1`,
		`strata_cmp_cache_hits_total{cache="helm_document"} 2`,
		`strata_cmp_cache_misses_total{cache="helm_document"} 2`,
		`strata_cmp_cache_entries{cache="helm_chart"} 1`,
		`strata_cmp_cache_hits_total{cache="helm_values"} 0`,
		`strata_cmp_cache_hits_total{cache="helm_announcements"} 0`,
		// Both rendered in render workers, none stopped.
		`strata_cmp_helm_renders_total 2`,
		`strata_cmp_helm_renders_stopped_total{reason="timeout"} 0`,
		`strata_cmp_helm_renders_stopped_total{reason="memory"} 0`,
		`strata_cmp_helm_renders_stopped_total{reason="crash"} 0`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

// TestCmpServeRecycles runs `strata cmp serve --config` and sends one
// repository three times: the first request's copy is kept and the next
// two get it (the metrics say so), each printing what the commit holds
// though the plugin rewrites the manifest it printed.
func TestCmpServeRecycles(t *testing.T) {
	if _, err := hookexec.LandlockABI(); err != nil {
		t.Skip(err)
	}
	conf := filepath.Join(t.TempDir(), "plugin.yaml")
	plugin := "apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\nmetadata:\n  name: cat\nspec:\n" +
		"  generate:\n    command: [sh, -c, 'cat m.yaml; echo \"{\\\"kind\\\": \\\"Secret\\\"}\" > m.yaml']\n"
	if err := os.WriteFile(conf, []byte(plugin), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, get := serveWithMetrics(t, "--config", conf)
	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "cat.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pluginpb.NewConfigManagementPluginServiceClient(conn)
	const manifest = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web"}}`
	repo := tarGz(t, map[string]string{"apps/web/m.yaml": manifest + "\n"})
	metric := func(name string) string {
		_, body := get("/metrics")
		for _, l := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(l, name+" "); ok {
				return v
			}
		}
		return ""
	}
	for i := range 3 {
		s, err := client.GenerateManifest(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		sendApp(t, s, "apps/web", nil, repo)
		resp, err := s.CloseAndRecv()
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetManifests(); len(got) != 1 || got[0] != manifest {
			t.Errorf("request %d: manifests %q, want [%s]", i, got, manifest)
		}
		// The copy is checked after the reply.
		want := strconv.Itoa(i + 1)
		eventually.Within(t, 20*time.Second, "workspace "+want+" recycled", func() (bool, string) {
			got := metric("strata_cmp_workspaces_recycled_total")
			return got == want, "strata_cmp_workspaces_recycled_total " + got
		})
	}
	if got := metric("strata_cmp_workspaces_reused_total"); got != "2" {
		t.Errorf("strata_cmp_workspaces_reused_total = %q, want 2", got)
	}
	if got := metric("strata_cmp_workspaces_kept"); got != "1" {
		t.Errorf("strata_cmp_workspaces_kept = %q, want 1", got)
	}
}
