package cli_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/strata-dev/strata/internal/cli"
	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
)

// helmRepo is a repository with a chart in apps/web and a directory that
// is not a chart.
var helmRepo = map[string]string{
	"apps/web/Chart.yaml":       "apiVersion: v2\nname: web\nversion: 0.1.0\n",
	"apps/web/values.yaml":      "replicas: 1\nimage:\n  tag: \"1.0\"\n",
	"apps/web/values-prod.yaml": "replicas: 3\n",
	"apps/web/templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
spec:
  replicas: {{ .Values.replicas }}
  template:
    spec:
      containers:
        - name: web
          image: "nginx:{{ .Values.image.tag }}"
`,
	"apps/web/templates/service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}\n",
	"apps/plain/m.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n",
}

func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	}) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[name])); err != nil {
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

// sendApp streams a request as Argo CD's repo-server does: the metadata
// (the application, its build environment and ARGOCD_APP_PARAMETERS),
// then the repository's tarball in 1 KiB chunks.
func sendApp(t *testing.T, s cmpserver.AppSender, rel string, env map[string]string, tgz []byte) {
	t.Helper()
	md := &pluginpb.ManifestRequestMetadata{AppName: "argocd_web", AppRelPath: rel}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		md.Env = append(md.Env, &pluginpb.EnvEntry{Name: k, Value: env[k]})
	}
	if err := cmpserver.SendApp(s, md, tgz); err != nil {
		t.Fatal(err)
	}
}

// TestCmpServeBuiltinHelm runs `strata cmp serve --builtin helm` as the
// binary does (cli.Main, a context cancelled like SIGTERM) on a unix
// socket, and drives it over Argo CD's CMP gRPC protocol as the
// repo-server does: the plugin's configuration, discovery, the parameters
// announcement, manifests, and a parameter error reaching the client.
func TestCmpServeBuiltinHelm(t *testing.T) {
	dir, err := os.MkdirTemp("", "cmp") // short: unix socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket := filepath.Join(dir, "helm.sock")

	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, []string{"cmp", "serve", "--builtin", "helm", "--socket-dir", dir,
			"--cache-dir", filepath.Join(dir, "cache"), "--shutdown-grace", "5s"}, strings.NewReader(""), &stdout, &stderr)
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("strata cmp serve exited %d\nstderr:\n%s", code, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("strata cmp serve did not stop\nstderr:\n%s", stderr.String())
		}
	}
	t.Cleanup(stop)
	for i := 0; ; i++ {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("strata cmp serve exited %d before listening\nstderr:\n%s", code, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if i > 1500 {
			t.Fatalf("no socket %s after 30s\nstderr:\n%s", socket, stderr.String())
		}
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pluginpb.NewConfigManagementPluginServiceClient(conn)
	repo := tarGz(t, helmRepo)
	buildEnv := map[string]string{"ARGOCD_APP_NAME": "web", "ARGOCD_APP_NAMESPACE": "team-a", "KUBE_VERSION": "1.31"}
	withParams := func(ps string) map[string]string {
		env := map[string]string{"ARGOCD_APP_PARAMETERS": ps}
		for k, v := range buildEnv {
			env[k] = v
		}
		return env
	}

	t.Run("CheckPluginConfiguration", func(t *testing.T) {
		cfg, err := client.CheckPluginConfiguration(ctx, &emptypb.Empty{})
		if err != nil {
			t.Fatal(err)
		}
		if !cfg.GetIsDiscoveryConfigured() {
			t.Errorf("CheckPluginConfiguration = %v, want discovery configured", cfg)
		}
	})

	t.Run("MatchRepository", func(t *testing.T) {
		for rel, want := range map[string]bool{"apps/web": true, "apps/plain": false} {
			s, err := client.MatchRepository(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sendApp(t, s, rel, buildEnv, repo)
			resp, err := s.CloseAndRecv()
			if err != nil {
				t.Fatalf("MatchRepository(%s): %v", rel, err)
			}
			if resp.GetIsSupported() != want || !resp.GetIsDiscoveryEnabled() {
				t.Errorf("MatchRepository(%s) = %v, want supported %v", rel, resp, want)
			}
		}
	})

	t.Run("GetParametersAnnouncement", func(t *testing.T) {
		s, err := client.GetParametersAnnouncement(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sendApp(t, s, "apps/web", withParams(`[{"name":"values-files","array":["values-prod.yaml"]}]`), repo)
		resp, err := s.CloseAndRecv()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*pluginpb.ParameterAnnouncement{}
		for _, a := range resp.GetParameterAnnouncements() {
			got[a.GetName()] = a
		}
		if diff := cmp.Diff(map[string]string{"replicas": "3", "image.tag": "1.0"}, got["helm-parameters"].GetMap()); diff != "" {
			t.Errorf("helm-parameters announces (-want +got):\n%s", diff)
		}
		if a := got["values-files"]; !slices.Equal(a.GetArray(), []string{"values-prod.yaml"}) || a.GetCollectionType() != "array" ||
			!strings.Contains(a.GetTooltip(), "values-prod.yaml") {
			t.Errorf("values-files = %v", a)
		}
		for name, want := range map[string]string{"release-name": "web", "namespace": "team-a", "kube-version": "1.31"} {
			if got[name].GetString_() != want {
				t.Errorf("%s = %q, want %q", name, got[name].GetString_(), want)
			}
		}
	})

	t.Run("GenerateManifest", func(t *testing.T) {
		want := []string{
			`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"}}`,
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"team-a"},"spec":{"replicas":5,"template":{"spec":{"containers":[{"image":"nginx:2.0","name":"web"}]}}}}`,
		}
		// Twice: the second render takes the chart from the plugin's cache.
		for i := range 2 {
			s, err := client.GenerateManifest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sendApp(t, s, "apps/web", withParams(`[{"name":"values-files","array":["values-prod.yaml"]},
				{"name":"helm-parameters","map":{"replicas":"5","image.tag":"2.0"}}]`), repo)
			resp, err := s.CloseAndRecv()
			if err != nil {
				t.Fatalf("GenerateManifest #%d: %v", i, err)
			}
			if diff := cmp.Diff(want, resp.GetManifests()); diff != "" {
				t.Errorf("GenerateManifest #%d (-want +got):\n%s", i, diff)
			}
		}
	})

	t.Run("ParameterError", func(t *testing.T) {
		for _, c := range []struct{ params, want string }{
			{`[{"name":"values-files","array":["missing.yaml"]}]`,
				`parameter "values-files": array[0]: values file "missing.yaml": apps/web/missing.yaml does not exist in the repository; fix the path (relative to the chart's directory) or set ignore-missing-value-files`},
			{`[{"name":"skip-crds","string":"maybe"}]`, `parameter "skip-crds"`},
		} {
			s, err := client.GenerateManifest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sendApp(t, s, "apps/web", withParams(c.params), repo)
			resp, err := s.CloseAndRecv()
			st, _ := status.FromError(err)
			if err == nil || st.Code() != codes.Unknown || !strings.Contains(st.Message(), c.want) {
				t.Errorf("GenerateManifest with %s = %v, %v; want code Unknown and a message holding %q", c.params, resp, err, c.want)
			}
		}
	})

	stop()
	if _, err := os.Stat(socket); err == nil {
		t.Errorf("the socket %s is left behind after shutdown", socket)
	}
}
