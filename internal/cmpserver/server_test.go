package cmpserver_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
	"github.com/strata-dev/strata/internal/cmpserver/tarball"
	"github.com/strata-dev/strata/internal/params"
)

// catPlugin is a small real plugin: it returns the file m.json of the app
// directory, and echoes the request back in an announcement.
type catPlugin struct{ block chan struct{} }

func (catPlugin) Info() cmpserver.Info {
	return cmpserver.Info{Name: "cat", DiscoveryConfigured: true, ProvideGitCreds: true}
}

func (catPlugin) Match(_ context.Context, req *params.Request) (bool, error) {
	_, err := os.Stat(filepath.Join(req.AppPath, "m.json"))
	return err == nil, nil
}

func (catPlugin) Announce(_ context.Context, req *params.Request) ([]params.Announcement, error) {
	env := append([]string(nil), req.Env...)
	sort.Strings(env)
	var names []string
	for _, p := range req.Parameters {
		names = append(names, p.Name)
	}
	return []params.Announcement{
		{Name: "env", CollectionType: params.CollectionArray, Array: env},
		{Name: "params", CollectionType: params.CollectionArray, Array: names},
		{Name: "app", String: req.AppName + " " + filepath.Base(req.AppPath)},
	}, nil
}

func (p catPlugin) Generate(ctx context.Context, req *params.Request) ([]string, error) {
	if p.block != nil {
		select {
		case <-p.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	data, err := os.ReadFile(filepath.Join(req.AppPath, "m.json"))
	if err != nil {
		return nil, err
	}
	// A plugin may write into its private copy of the repository.
	if err := os.WriteFile(filepath.Join(req.AppPath, "m.json"), []byte("garbage"), 0o644); err != nil {
		return nil, err
	}
	return []string{strings.TrimSpace(string(data))}, nil
}

func tarGz(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[n])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type testServer struct {
	client pluginpb.ConfigManagementPluginServiceClient
	conn   *grpc.ClientConn
	socket string
	cancel context.CancelFunc
	done   chan error
}

func startServer(t *testing.T, p cmpserver.Plugin) *testServer {
	t.Helper()
	dir, err := os.MkdirTemp("", "cmp") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	store, err := tarball.NewStore(filepath.Join(dir, "repos"), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	srv := &cmpserver.Server{Plugin: p, Store: store, ShutdownGrace: 5 * time.Second}
	socket := filepath.Join(dir, p.Info().SocketName())
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{socket: socket, cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(ctx, socket) }()
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ts.conn = conn
	ts.client = pluginpb.NewConfigManagementPluginServiceClient(conn)
	t.Cleanup(func() {
		conn.Close()
		cancel()
		<-ts.done
	})
	return ts
}

// send streams a request the way Argo CD's repo-server does (SendApp).
func send(t testing.TB, s cmpserver.AppSender, app, rel string, env map[string]string, tgz []byte) {
	t.Helper()
	md := &pluginpb.ManifestRequestMetadata{AppName: app, AppRelPath: rel}
	for k, v := range env {
		md.Env = append(md.Env, &pluginpb.EnvEntry{Name: k, Value: v})
	}
	if err := cmpserver.SendApp(s, md, tgz); err != nil {
		t.Fatal(err)
	}
}

func TestServerRPCs(t *testing.T) {
	ts := startServer(t, catPlugin{})
	ctx := context.Background()
	repo := tarGz(t, map[string]string{
		"apps/web/m.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web"}}`,
		"README.md":       strings.Repeat("monorepo ", 1000),
	})

	cfg, err := ts.client.CheckPluginConfiguration(ctx, &emptypb.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.GetIsDiscoveryConfigured() || !cfg.GetProvideGitCreds() {
		t.Errorf("CheckPluginConfiguration = %v", cfg)
	}

	ms, err := ts.client.MatchRepository(ctx)
	if err != nil {
		t.Fatal(err)
	}
	send(t, ms, "web", "apps/web", nil, repo)
	match, err := ms.CloseAndRecv()
	if err != nil {
		t.Fatal(err)
	}
	if !match.GetIsSupported() || !match.GetIsDiscoveryEnabled() {
		t.Errorf("MatchRepository = %v", match)
	}

	ps, err := ts.client.GetParametersAnnouncement(ctx)
	if err != nil {
		t.Fatal(err)
	}
	send(t, ps, "web", "apps/web", map[string]string{
		"ARGOCD_APP_NAME":    "web",
		"ARGOCD_ENV_FOO":     "bar",
		params.ParametersVar: `[{"name":"replicas","string":"3"}]`,
		"PARAM_REPLICAS":     "3",
	}, repo)
	anns, err := ps.CloseAndRecv()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for _, a := range anns.GetParameterAnnouncements() {
		if a.GetCollectionType() == "array" {
			got[a.GetName()] = a.GetArray()
		} else {
			got[a.GetName()] = a.GetString_()
		}
	}
	want := map[string]any{
		"env":    []string{"ARGOCD_APP_NAME=web", "ARGOCD_ENV_FOO=bar"},
		"params": []string{"replicas"},
		"app":    "web web",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("announcement mismatch (-want +got):\n%s", diff)
	}

	// Generate twice: the second request hits the cache and must not see
	// what the first request's plugin wrote into its copy.
	for i := 0; i < 2; i++ {
		gs, err := ts.client.GenerateManifest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		send(t, gs, "web", "apps/web", nil, repo)
		resp, err := gs.CloseAndRecv()
		if err != nil {
			t.Fatalf("GenerateManifest #%d: %v", i, err)
		}
		if diff := cmp.Diff([]string{`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web"}}`}, resp.GetManifests()); diff != "" {
			t.Errorf("GenerateManifest #%d manifests (-want +got):\n%s", i, diff)
		}
	}

	hc, err := healthpb.NewHealthClient(ts.conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health = %v, %v", hc, err)
	}
}

func TestServerRejectsBadStreams(t *testing.T) {
	ts := startServer(t, catPlugin{})
	ctx := context.Background()
	repo := tarGz(t, map[string]string{"app/m.json": "{}"})
	tests := []struct {
		name string
		run  func(t testing.TB, s pluginpb.ConfigManagementPluginService_GenerateManifestClient)
		want string
	}{
		{"checksum mismatch", func(t testing.TB, s pluginpb.ConfigManagementPluginService_GenerateManifestClient) {
			bad := append([]byte(nil), repo...)
			bad[len(bad)-1] ^= 0xff
			sum := sha256.Sum256(repo)
			s.Send(&pluginpb.AppStreamRequest{Request: &pluginpb.AppStreamRequest_Metadata{Metadata: &pluginpb.ManifestRequestMetadata{
				AppRelPath: "app", Checksum: hex.EncodeToString(sum[:]), Size: int64(len(bad))}}})
			s.Send(&pluginpb.AppStreamRequest{Request: &pluginpb.AppStreamRequest_File{File: &pluginpb.File{Chunk: bad}}})
		}, "checksum"},
		{"file before metadata", func(t testing.TB, s pluginpb.ConfigManagementPluginService_GenerateManifestClient) {
			s.Send(&pluginpb.AppStreamRequest{Request: &pluginpb.AppStreamRequest_File{File: &pluginpb.File{Chunk: repo}}})
		}, "first message of the stream must be the metadata"},
		{"app path escapes", func(t testing.TB, s pluginpb.ConfigManagementPluginService_GenerateManifestClient) {
			send(t, s, "x", "../etc", nil, repo)
		}, `appRelPath "../etc" is not a path inside the repository`},
		{"app path missing", func(t testing.TB, s pluginpb.ConfigManagementPluginService_GenerateManifestClient) {
			send(t, s, "x", "nope", nil, repo)
		}, `appRelPath "nope" is not a directory of the repository`},
		{"bad parameters", func(t testing.TB, s pluginpb.ConfigManagementPluginService_GenerateManifestClient) {
			send(t, s, "x", "app", map[string]string{params.ParametersVar: "[{"}, repo)
		}, "ARGOCD_APP_PARAMETERS"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ts.client.GenerateManifest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tc.run(t, s)
			_, err = s.CloseAndRecv()
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("GenerateManifest = %v, want InvalidArgument containing %q", err, tc.want)
			}
		})
	}
}

func TestServerGracefulShutdown(t *testing.T) {
	block := make(chan struct{})
	ts := startServer(t, catPlugin{block: block})
	repo := tarGz(t, map[string]string{"app/m.json": `{"kind":"A"}`})
	s, err := ts.client.GenerateManifest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	send(t, s, "x", "app", nil, repo)
	result := make(chan error, 1)
	go func() {
		_, err := s.CloseAndRecv()
		result <- err
	}()
	time.Sleep(100 * time.Millisecond) // let the request reach the plugin
	ts.cancel()                        // SIGTERM, as the CLI maps it
	time.Sleep(100 * time.Millisecond)
	close(block) // the in-flight request finishes
	if err := <-result; err != nil {
		t.Errorf("in-flight request failed during shutdown: %v", err)
	}
	if err := <-ts.done; err != nil {
		t.Errorf("Serve = %v", err)
	}
	ts.done <- nil // for the cleanup
	if _, err := os.Stat(ts.socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket %s still exists after shutdown (%v)", ts.socket, err)
	}
}

func TestServerClientDisconnects(t *testing.T) {
	ts := startServer(t, catPlugin{})
	repo := tarGz(t, map[string]string{"app/m.json": `{"kind":"A"}`, "big": strings.Repeat("x", 200000)})
	ctx, cancel := context.WithCancel(context.Background())
	s, err := ts.client.GenerateManifest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(repo)
	s.Send(&pluginpb.AppStreamRequest{Request: &pluginpb.AppStreamRequest_Metadata{Metadata: &pluginpb.ManifestRequestMetadata{
		AppRelPath: "app", Checksum: hex.EncodeToString(sum[:]), Size: int64(len(repo))}}})
	s.Send(&pluginpb.AppStreamRequest{Request: &pluginpb.AppStreamRequest_File{File: &pluginpb.File{Chunk: repo[:len(repo)/2]}}})
	cancel()
	// The server stays healthy and serves the next request.
	s2, err := ts.client.GenerateManifest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	send(t, s2, "x", "app", nil, repo)
	if _, err := s2.CloseAndRecv(); err != nil {
		t.Errorf("request after a disconnect: %v", err)
	}
}
