package cmpserver_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
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
	"github.com/strata-dev/strata/internal/eventually"
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
	store  string // the repository Store's root
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
	ts := &testServer{socket: socket, store: filepath.Join(dir, "repos"), cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- srv.Serve(ctx, socket) }()
	eventually.True(t, "the server listens on "+socket, func() (bool, string) {
		// A connection, not the socket file: the file exists from bind,
		// a moment before listen, and a connection then is refused.
		c, err := net.Dial("unix", socket)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
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

// gatePlugin is catPlugin whose Generate signals entered once it runs,
// then waits for release: a request the test holds in flight.
type gatePlugin struct {
	catPlugin
	entered chan struct{}
	release chan struct{}
}

func (p gatePlugin) Generate(ctx context.Context, req *params.Request) ([]string, error) {
	close(p.entered)
	<-p.release
	return p.catPlugin.Generate(ctx, req)
}

// refused reports whether a new connection's request fails because the
// server no longer serves; any other outcome is described.
func refused(ts *testServer) (bool, string) {
	conn, err := grpc.NewClient("unix://"+ts.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false, err.Error()
	}
	defer conn.Close()
	_, err = pluginpb.NewConfigManagementPluginServiceClient(conn).CheckPluginConfiguration(context.Background(), &emptypb.Empty{})
	if status.Code(err) == codes.Unavailable {
		return true, ""
	}
	return false, fmt.Sprintf("a new request got %v", err)
}

// TestServerGracefulShutdown shuts the server down while a request is in
// the plugin: new requests are refused while it runs, and it completes.
func TestServerGracefulShutdown(t *testing.T) {
	p := gatePlugin{entered: make(chan struct{}), release: make(chan struct{})}
	ts := startServer(t, p)
	repo := tarGz(t, map[string]string{"app/m.json": `{"kind":"A"}`})
	s, err := ts.client.GenerateManifest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	send(t, s, "x", "app", nil, repo)
	type reply struct {
		resp *pluginpb.ManifestResponse
		err  error
	}
	result := make(chan reply, 1)
	go func() {
		resp, err := s.CloseAndRecv()
		result <- reply{resp, err}
	}()
	<-p.entered // the request is in the plugin
	ts.cancel() // SIGTERM, as the CLI maps it
	eventually.True(t, "new requests refused once shutdown began", func() (bool, string) { return refused(ts) })
	select {
	case r := <-result:
		t.Fatalf("the in-flight request ended before the plugin returned: %v, %v", r.resp, r.err)
	case err := <-ts.done:
		t.Fatalf("Serve returned %v with a request in flight", err)
	default: // shutdown has begun and the request is still in flight
	}
	close(p.release)
	r := <-result
	if r.err != nil {
		t.Fatalf("in-flight request failed during shutdown: %v", r.err)
	}
	if diff := cmp.Diff([]string{`{"kind":"A"}`}, r.resp.GetManifests()); diff != "" {
		t.Errorf("in-flight request's manifests (-want +got):\n%s", diff)
	}
	if err := <-ts.done; err != nil {
		t.Errorf("Serve = %v", err)
	}
	ts.done <- nil // for the cleanup
	if _, err := os.Stat(ts.socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket %s still exists after shutdown (%v)", ts.socket, err)
	}
	if ok, state := refused(ts); !ok {
		t.Errorf("after shutdown: %s", state)
	}
}

// serverGoroutines lists the goroutines running the server's request
// handling: cmpserver's service and the repository Store.
func serverGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "internal/cmpserver.(*service)") || strings.Contains(g, "internal/cmpserver/tarball.") {
			out = append(out, g)
		}
	}
	return out
}

// storeFiles lists what the Store holds outside its cache: spooled
// uploads, extractions under way and workspaces.
func storeFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	for _, d := range []string{"tmp", "work"} {
		es, err := os.ReadDir(filepath.Join(root, d))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			out = append(out, d+"/"+e.Name())
		}
	}
	return out
}

// TestServerClientDisconnects drops a client in the middle of its upload:
// the server removes what it received, its handler ends, and it serves
// the next request.
func TestServerClientDisconnects(t *testing.T) {
	ts := startServer(t, catPlugin{})
	repo := tarGz(t, map[string]string{"app/m.json": `{"kind":"A"}`, "big": strings.Repeat("x", 200000)})
	eventually.True(t, "no request handled before this test's", func() (bool, string) {
		gs := serverGoroutines()
		return len(gs) == 0, strings.Join(gs, "\n\n")
	})
	ctx, cancel := context.WithCancel(context.Background())
	s, err := ts.client.GenerateManifest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(repo)
	if err := s.Send(&pluginpb.AppStreamRequest{Request: &pluginpb.AppStreamRequest_Metadata{Metadata: &pluginpb.ManifestRequestMetadata{
		AppRelPath: "app", Checksum: hex.EncodeToString(sum[:]), Size: int64(len(repo))}}}); err != nil {
		t.Fatalf("sending the metadata: %v", err)
	}
	if err := s.Send(&pluginpb.AppStreamRequest{Request: &pluginpb.AppStreamRequest_File{File: &pluginpb.File{Chunk: repo[:len(repo)/2]}}}); err != nil {
		t.Fatalf("sending half the repository: %v", err)
	}
	// The server is receiving: its extraction directory (or, when another
	// request extracts the same tarball, its spool file) exists, and its
	// handler runs. Then the client goes.
	eventually.True(t, "the server receives the upload", func() (bool, string) {
		files := storeFiles(t, ts.store)
		return len(files) > 0 && len(serverGoroutines()) > 0, fmt.Sprintf("files %q", files)
	})
	cancel()
	if _, err := s.CloseAndRecv(); status.Code(err) != codes.Canceled {
		t.Errorf("the cancelled request returned %v, want Canceled", err)
	}
	eventually.True(t, "the server cleans up after the disconnect", func() (bool, string) {
		files, gs := storeFiles(t, ts.store), serverGoroutines()
		return len(files) == 0 && len(gs) == 0, fmt.Sprintf("files %q, handler goroutines:\n%s", files, strings.Join(gs, "\n\n"))
	})
	// The server stays healthy and serves the next request.
	s2, err := ts.client.GenerateManifest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	send(t, s2, "x", "app", nil, repo)
	resp, err := s2.CloseAndRecv()
	if err != nil {
		t.Fatalf("request after a disconnect: %v", err)
	}
	if diff := cmp.Diff([]string{`{"kind":"A"}`}, resp.GetManifests()); diff != "" {
		t.Errorf("request after a disconnect (-want +got):\n%s", diff)
	}
	// Its private workspace is removed after the reply, in the background.
	eventually.True(t, "the next request's workspace is removed", func() (bool, string) {
		files := storeFiles(t, ts.store)
		return len(files) == 0, fmt.Sprintf("after the next request the Store holds %q outside its cache", files)
	})
}

// TestServerEnvEntries: what the server makes of the request's environment
// entries, as Argo CD's sidecar does: an entry without a name is dropped
// (one with an empty value too, later, by CommandPlugin.Environ); a name
// holding = or NUL, which no process environment can carry, is refused.
func TestServerEnvEntries(t *testing.T) {
	ts := startServer(t, catPlugin{})
	repo := tarGz(t, map[string]string{"app/m.json": "{}"})
	tests := []struct {
		name    string
		env     map[string]string
		want    []string
		wantErr string
	}{
		{name: "no name", env: map[string]string{"": "dropped", "A": "1", "B": ""}, want: []string{"A=1", "B="}},
		{name: "= in a name", env: map[string]string{"A=B": "x"}, wantErr: `environment entry "A=B" is not a valid variable name`},
		{name: "NUL in a name", env: map[string]string{"A\x00": "x"}, wantErr: "is not a valid variable name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ts.client.GetParametersAnnouncement(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			send(t, s, "x", "app", tc.env, repo)
			resp, err := s.CloseAndRecv()
			if tc.wantErr != "" {
				if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("GetParametersAnnouncement = %v, want InvalidArgument containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, resp.GetParameterAnnouncements()[0].GetArray()); diff != "" {
				t.Errorf("the plugin's request environment differs (-want +got):\n%s", diff)
			}
		})
	}
}
