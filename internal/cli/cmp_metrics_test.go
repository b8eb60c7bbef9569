package cli_test

import (
	"bytes"
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
)

// TestCmpServeMetrics runs `strata cmp serve --builtin helm
// --metrics-listen unix:PATH`, renders a chart twice over gRPC, and reads
// the metrics: the requests, the repository cache and the Helm caches
// count what happened.
func TestCmpServeMetrics(t *testing.T) {
	dir, err := os.MkdirTemp("", "cmp") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket, metrics := filepath.Join(dir, "helm.sock"), filepath.Join(dir, "metrics.sock")
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"cmp", "serve", "--builtin", "helm", "--socket-dir", dir, "--cache-dir", filepath.Join(dir, "cache"),
			"--metrics-listen", "unix:" + metrics}, strings.NewReader(""), &stdout, &stderr)
	}()
	defer func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("strata cmp serve exited %d\nstderr:\n%s", code, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("strata cmp serve did not stop\nstderr:\n%s", stderr.String())
		}
	}()
	for i := 0; ; i++ {
		_, err1 := os.Stat(socket)
		_, err2 := os.Stat(metrics)
		if err1 == nil && err2 == nil {
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
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := web.Get("http://strata" + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

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
