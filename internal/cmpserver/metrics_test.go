package cmpserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
	"github.com/strata-dev/strata/internal/cmpserver/tarball"
)

// TestMetrics drives a command plugin (`cat m.yaml`) over gRPC and reads
// what the metrics endpoint says about it: requests by RPC and code,
// bytes received, the repository cache, the commands and their exit
// status, and the health and readiness endpoints.
func TestMetrics(t *testing.T) {
	cfg, err := cmpserver.ParseConfig([]byte(`apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: cat
spec:
  generate:
    command: [cat]
    args: [m.yaml]
`), "plugin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := cmpserver.NewMetrics()
	plugin := cmpserver.NewCommandPlugin(cfg, cmpserver.CommandOptions{Env: os.Environ(), Observe: m.ObserveCommand})
	dir, err := os.MkdirTemp("", "cmpm") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	store, err := tarball.NewStore(filepath.Join(dir, "repos"), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	m.AddCache("repository", cmpserver.StoreCache(store))
	web := httptest.NewServer(m.Handler())
	t.Cleanup(web.Close)
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(web.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before serving = %d, want 503", code)
	}

	srv := &cmpserver.Server{Plugin: plugin, Store: store, Metrics: m, ShutdownGrace: 5 * time.Second}
	socket := filepath.Join(dir, "cat.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, socket) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pluginpb.NewConfigManagementPluginServiceClient(conn)
	for i := 0; ; i++ {
		_, err := client.CheckPluginConfiguration(ctx, &emptypb.Empty{})
		if err == nil {
			break
		}
		if i == 200 {
			t.Fatalf("the server does not answer: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}

	good := tarGz(t, map[string]string{"apps/web/m.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n"})
	bad := tarGz(t, map[string]string{"apps/web/other.yaml": "{}\n"})
	generate := func(tgz []byte, wantCode codes.Code) {
		t.Helper()
		stream, err := client.GenerateManifest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		send(t, stream, "web", "apps/web", nil, tgz)
		_, err = stream.CloseAndRecv()
		if got := status.Code(err); got != wantCode {
			t.Fatalf("GenerateManifest: %v, want code %v", err, wantCode)
		}
	}
	generate(good, codes.OK)
	generate(good, codes.OK)     // from the repository cache
	generate(bad, codes.Unknown) // cat exits 1: no m.yaml
	// Metadata only, with a path out of the repository: rejected before
	// any chunk is read.
	stream, err := client.GenerateManifest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&pluginpb.AppStreamRequest{Request: &pluginpb.AppStreamRequest_Metadata{
		Metadata: &pluginpb.ManifestRequestMetadata{AppName: "web", AppRelPath: "../out"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.CloseAndRecv(); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("GenerateManifest of ../out: %v, want InvalidArgument", err)
	}

	if code, body := get("/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz = %d %q, want 200 ok", code, body)
	}
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz while serving = %d, want 200", code)
	}
	// The CheckPluginConfiguration calls of the wait loop that failed
	// never reached the server; the last one did, once.
	want := `
# HELP strata_cmp_requests_total Requests answered, by RPC and gRPC status code (OK, InvalidArgument, Unknown for a failing plugin, DeadlineExceeded, ...).
# TYPE strata_cmp_requests_total counter
strata_cmp_requests_total{code="InvalidArgument",rpc="GenerateManifest"} 1
strata_cmp_requests_total{code="OK",rpc="CheckPluginConfiguration"} 1
strata_cmp_requests_total{code="OK",rpc="GenerateManifest"} 2
strata_cmp_requests_total{code="Unknown",rpc="GenerateManifest"} 1
# HELP strata_cmp_received_bytes_total Bytes of repository tar.gz received in file chunks, by RPC.
# TYPE strata_cmp_received_bytes_total counter
strata_cmp_received_bytes_total{rpc="GenerateManifest"} ` + strconv.Itoa(2*len(good)+len(bad)) + `
# HELP strata_cmp_commands_total Plugin commands run, by step (init, generate, discover, parameters) and exit status: the exit code, signal, timeout, or error (did not start, output too large).
# TYPE strata_cmp_commands_total counter
strata_cmp_commands_total{exit="0",step="generate"} 2
strata_cmp_commands_total{exit="1",step="generate"} 1
# HELP strata_cmp_cache_hits_total Cache lookups that found the entry: repository (trees by tar.gz checksum), helm_chart (loaded charts), helm_document (rendered documents read), helm_values (values files parsed), helm_announcements (helm-parameters lists).
# TYPE strata_cmp_cache_hits_total counter
strata_cmp_cache_hits_total{cache="repository"} 1
# HELP strata_cmp_cache_misses_total Cache lookups that did not find the entry.
# TYPE strata_cmp_cache_misses_total counter
strata_cmp_cache_misses_total{cache="repository"} 2
# HELP strata_cmp_cache_entries Entries the cache holds now.
# TYPE strata_cmp_cache_entries gauge
strata_cmp_cache_entries{cache="repository"} 2
# HELP strata_cmp_in_flight_requests Requests being answered, by RPC.
# TYPE strata_cmp_in_flight_requests gauge
strata_cmp_in_flight_requests{rpc="CheckPluginConfiguration"} 0
strata_cmp_in_flight_requests{rpc="GenerateManifest"} 0
`
	if err := testutil.ScrapeAndCompare(web.URL+"/metrics", strings.NewReader(want),
		"strata_cmp_requests_total", "strata_cmp_received_bytes_total", "strata_cmp_commands_total",
		"strata_cmp_cache_hits_total", "strata_cmp_cache_misses_total", "strata_cmp_cache_entries",
		"strata_cmp_in_flight_requests"); err != nil {
		t.Error(err)
	}
	_, body := get("/metrics")
	for _, line := range []string{
		`strata_cmp_request_duration_seconds_count{rpc="GenerateManifest"} 4`,
		`strata_cmp_request_duration_seconds_count{rpc="CheckPluginConfiguration"} 1`,
		`strata_cmp_command_duration_seconds_count{step="generate"} 3`,
		`strata_cmp_cache_evictions_total{cache="repository"} 0`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
		`strata_build_info{commit=`,
	} {
		if !strings.Contains(body, line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if !strings.Contains(body, `strata_cmp_cache_bytes{cache="repository"} `) || strings.Contains(body, `strata_cmp_cache_bytes{cache="repository"} 0`+"\n") {
		t.Errorf("/metrics lacks a non-zero strata_cmp_cache_bytes{cache=\"repository\"}")
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	done <- nil // for the cleanup
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz after shutdown = %d, want 503", code)
	}
}
