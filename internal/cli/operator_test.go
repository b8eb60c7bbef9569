package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/cli"
	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/golden"
	"github.com/strata-dev/strata/internal/operator"
	"github.com/strata-dev/strata/internal/operator/queue"
)

// timestamp matches the times of hook patches, which vary per run.
var timestamp = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)

// spaces matches the padding of table columns.
var spaces = regexp.MustCompile(` {2,}`)

// writeTree writes an archive's files (hooks and enabled scripts
// executable) under dir.
func writeTree(t *testing.T, c golden.Case, dir string) {
	t.Helper()
	for _, f := range c.Archive.Files {
		if strings.HasPrefix(f.Name, "want/") {
			continue
		}
		p := filepath.Join(dir, f.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.Contains(f.Name, "hooks/") || filepath.Base(f.Name) == "enabled" {
			mode = 0o755
		}
		if err := os.WriteFile(p, f.Data, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOperatorDebugCommands runs the debug commands against a running
// operator over its socket; testdata/operator/debug.txtar holds the tree
// and, under want/, each command's output.
func TestOperatorDebugCommands(t *testing.T) {
	c := golden.Cases(t, "testdata/operator/debug.txtar")[0]
	dir := t.TempDir()
	writeTree(t, c, dir)
	sock := filepath.Join(dir, "op.sock")
	s := operator.DefaultSettings()
	s.ModulesDir, s.GlobalHooksDir = filepath.Join(dir, "modules"), filepath.Join(dir, "global-hooks")
	s.ConfigFile, s.TempDir, s.Namespace = filepath.Join(dir, "config.yaml"), filepath.Join(dir, "tmp"), "addons"
	s.ListenPort, s.DebugUnixSocket = "", sock
	e, err := operator.New(s, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-e.Ready():
	case err := <-done:
		t.Fatalf("operator stopped: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("no converge within a minute")
	}
	eventually.True(t, "the debug socket "+sock, func() (bool, string) {
		_, err := os.Stat(sock)
		return err == nil, fmt.Sprint(err)
	})
	for _, f := range c.Archive.Files {
		if !strings.HasPrefix(f.Name, "want/") {
			continue
		}
		args := strings.Fields(strings.ReplaceAll(strings.TrimPrefix(f.Name, "want/"), "_", " "))
		args = append([]string{"operator"}, append(args, "--debug-unix-socket", sock)...)
		t.Run(strings.Join(args[1:len(args)-2], " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cli.Main(context.Background(), args, nil, &stdout, &stderr)
			out := strings.ReplaceAll(stdout.String()+stderr.String(), dir, "$WORK")
			out = timestamp.ReplaceAllString(out, "TIME")
			// Table columns are as wide as the temporary paths in them.
			out = spaces.ReplaceAllString(out, "  ")
			golden.Check(t, c.Path, f.Name, out)
		})
	}

	// The task history: its times vary, so it is checked here, not in the
	// golden file.
	t.Run("queue history", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		if code := cli.Main(context.Background(), []string{"operator", "queue", "history", "-o", "json", "--debug-unix-socket", sock}, nil, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		var runs []queue.RunInfo
		if err := json.Unmarshal(stdout.Bytes(), &runs); err != nil {
			t.Fatalf("queue history -o json: %v\n%s", err, stdout.String())
		}
		seen := map[string]bool{}
		for _, r := range runs {
			if r.Outcome != "succeeded" || r.Queue != "main" || r.Started.IsZero() || r.Attempt != 1 {
				t.Errorf("history entry %+v: want a first, succeeded run on main", r)
			}
			seen[r.Kind] = true
		}
		for _, kind := range []string{operator.KindGlobalHookRun, operator.KindModuleRun, operator.KindDiscover} {
			if !seen[kind] {
				t.Errorf("no %s run in the history: %s", kind, stdout.String())
			}
		}
		stdout.Reset()
		if code := cli.Main(context.Background(), []string{"operator", "queue", "history", "--debug-unix-socket", sock}, nil, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "STARTED") || !strings.Contains(stdout.String(), "succeeded") {
			t.Errorf("queue history (text): exit %d\n%s%s", code, stdout.String(), stderr.String())
		}
	})
}

// TestOperatorFlagsWin: a flag wins over its environment variable, and
// the ADDON_OPERATOR_ spelling is read.
func TestOperatorFlagsWin(t *testing.T) {
	c := golden.Cases(t, "testdata/operator/debug.txtar")[0]
	dir := t.TempDir()
	writeTree(t, c, dir)
	t.Setenv("ADDON_OPERATOR_MODULES_DIR", filepath.Join(dir, "nonexistent"))
	t.Setenv("ADDON_OPERATOR_GLOBAL_HOOKS_DIR", filepath.Join(dir, "global-hooks"))
	t.Setenv("ADDON_OPERATOR_NAMESPACE", "from-env")
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), []string{"operator", "render", "--modules-dir", filepath.Join(dir, "modules"), "--config", filepath.Join(dir, "config.yaml"), "--namespace", "from-flag"}, nil, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"# module: echo", "namespace: from-flag", "global 000-init.sh onStartup"} {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q:\n%s", want, out)
		}
	}
	// The config file is read, never written: the hook's config patch
	// stays in the private workspace.
	data, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "fromHook") {
		t.Errorf("render wrote the hook's config patch back to the user's config file:\n%s", data)
	}
}

// TestOperatorRenderFails: a failing hook stops render with its stderr.
func TestOperatorRenderFails(t *testing.T) {
	dir := t.TempDir()
	hook := filepath.Join(dir, "global-hooks", "hooks", "bad.sh")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nif [ \"$1\" = --config ]; then echo '{\"configVersion\":\"v1\",\"onStartup\":1}'; exit 0; fi\necho 'cannot reach the vault' >&2\nexit 3\n"
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), []string{"operator", "render", "--modules-dir", "", "--global-hooks-dir", filepath.Join(dir, "global-hooks")}, nil, &stdout, &stderr)
	if code == 0 || !strings.Contains(stderr.String(), "cannot reach the vault") || !strings.Contains(stderr.String(), "bad.sh") {
		t.Errorf("exit %d, stderr %q: want non-zero with the hook's name and stderr", code, stderr.String())
	}
}

// TestOperatorExample runs examples/operator/basic with `operator run`'s
// engine and checks what render cannot show: the metrics its hook writes,
// the values its hooks and config store give, and an objects edit
// reaching the watching hook.
func TestOperatorExample(t *testing.T) {
	root, err := filepath.Abs("../../examples/operator/basic")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	objects := filepath.Join(dir, "objects")
	if err := os.MkdirAll(objects, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "objects", "configmaps.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(objects, "configmaps.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(root, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	s := operator.DefaultSettings()
	s.ModulesDir, s.GlobalHooksDir = filepath.Join(root, "modules"), filepath.Join(root, "global-hooks")
	s.ConfigFile, s.ObjectsDir, s.TempDir, s.Namespace = filepath.Join(dir, "config.yaml"), objects, filepath.Join(dir, "tmp"), "addons"
	s.ListenPort, s.DebugUnixSocket = "", ""
	e, err := operator.New(s, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-e.Ready():
	case err := <-done:
		t.Fatalf("operator stopped: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("no converge within a minute")
	}
	rec := httptest.NewRecorder()
	e.HTTPHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if want := `exporter_reports_total{hook="hooks/report.sh",module="metrics-exporter",source="report.sh"} 1`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("/metrics lacks %s", want)
	}
	values := func() string {
		v, err := e.Module(ctx, "echo-server", "values", false)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	if got, want := values(), `{"echoServer":{"message":"hello","replicas":2,"watchedConfigMaps":["farewells","greetings"]}}`; got != want {
		t.Errorf("echo-server values = %s, want %s", got, want)
	}
	// A new labelled ConfigMap reaches the watching hook: the module's
	// values change and the module runs again.
	more := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: welcome\n  namespace: default\n  labels: {echo: \"true\"}\n"
	if err := os.WriteFile(filepath.Join(objects, "more.yaml"), []byte(more), 0o644); err != nil {
		t.Fatal(err)
	}
	want := `{"echoServer":{"message":"hello","replicas":2,"watchedConfigMaps":["farewells","greetings","welcome"]}}`
	eventually.True(t, "echo-server's values to list the new ConfigMap", func() (bool, string) {
		got := values()
		return got == want, got
	})
}

// TestOperatorClusterSettings: the cluster and HA settings come from
// addon-operator's variables, a flag wins, and what a run on a cluster
// lacks stops it with the variable and the flag named.
func TestOperatorClusterSettings(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"HA needs a cluster", map[string]string{"ADDON_OPERATOR_HA": "true"}, nil, "ADDON_OPERATOR_HA (--ha) needs a cluster for its Lease"},
		{"--ha", nil, []string{"--ha"}, "ADDON_OPERATOR_HA (--ha) needs a cluster for its Lease"},
		{"--pod-name wins", map[string]string{"ADDON_OPERATOR_HA": "true", "KUBE_CONFIG": "/nonexistent/kubeconfig", "ADDON_OPERATOR_NAMESPACE": "ns", "ADDON_OPERATOR_POD": "pod-a"},
			[]string{"--pod-name", ""}, "ADDON_OPERATOR_POD (--pod-name) is empty"},
		{"a cluster needs a namespace", map[string]string{"KUBE_CONFIG": "/nonexistent/kubeconfig"}, nil, "ADDON_OPERATOR_NAMESPACE (--namespace)"},
		{"burst", map[string]string{"KUBE_CLIENT_BURST": "0"}, nil, "KUBE_CLIENT_BURST (--kube-client-burst) 0"},
		{"--kube-client-burst wins", map[string]string{"KUBE_CLIENT_BURST": "0", "ADDON_OPERATOR_HA": "true"}, []string{"--kube-client-burst", "3"}, "needs a cluster for its Lease"},
		{"bad QPS", map[string]string{"KUBE_CLIENT_QPS": "many"}, nil, "environment variable KUBE_CLIENT_QPS"},
		// addon-operator's flag names are bound to the same settings.
		{"--prometheus-listen-port", nil, []string{"--prometheus-listen-port", "http"}, `listen port "http": not a number`},
		{"--helm-timeout", nil, []string{"--helm-timeout", "-1s"}, "HELM_TIMEOUT (--helm-timeout) -1s: must be positive"},
		// shell-operator's webhook flags.
		{"--validating-webhook-failure-policy", nil, []string{"--validating-webhook-failure-policy", "Never"}, `VALIDATING_WEBHOOK_FAILURE_POLICY (--validating-webhook-failure-policy) "Never": must be Fail or Ignore`},
		{"VALIDATING_WEBHOOK_FAILURE_POLICY", map[string]string{"VALIDATING_WEBHOOK_FAILURE_POLICY": "Never"}, nil, `VALIDATING_WEBHOOK_FAILURE_POLICY (--validating-webhook-failure-policy) "Never"`},
		{"--conversion-webhook-url", nil, []string{"--conversion-webhook-url", "http://op"}, `STRATA_CONVERSION_WEBHOOK_URL (--conversion-webhook-url) "http://op": must be an https URL`},
		{"HELM_TIMEOUT", map[string]string{"HELM_TIMEOUT": "soon"}, nil, "environment variable HELM_TIMEOUT: \"soon\" is not a duration"},
		{"HA on the cluster", map[string]string{"ADDON_OPERATOR_HA": "true", "KUBE_CONFIG": "/nonexistent/kubeconfig", "ADDON_OPERATOR_NAMESPACE": "ns", "ADDON_OPERATOR_POD": "pod-a"},
			nil, "cluster (KUBE_CONFIG, KUBE_CONTEXT): loading /nonexistent/kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, k := range []string{"KUBERNETES_SERVICE_HOST", "KUBE_CONFIG", "ADDON_OPERATOR_NAMESPACE", "ADDON_OPERATOR_HA", "ADDON_OPERATOR_POD", "KUBE_CLIENT_QPS", "KUBE_CLIENT_BURST"} {
				t.Setenv(k, "")
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := append([]string{"operator", "run", "--modules-dir", dir, "--tmp-dir", filepath.Join(dir, "tmp"), "--debug-unix-socket", "", "--listen-port", ""}, tc.args...)
			var stdout, stderr bytes.Buffer
			code := cli.Main(context.Background(), args, nil, &stdout, &stderr)
			if code == 0 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("strata %s: exit %d, stderr %q; want an error with %q", strings.Join(args, " "), code, stderr.String(), tc.want)
			}
		})
	}
}

// TestOperatorRenderConfigErrors: a config store key of no module is
// refused with the module meant, and render's errors name the user's
// config file, not the private copy it works on.
func TestOperatorRenderConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, config, want string
	}{
		{"section of a typo", "ngnix: |\n  replicas: 2\n", `config.yaml:1: ngnix: no module has the values key "ngnix"; did you mean nginx?`},
		{"flag of a typo", "ngnixEnabled: \"false\"\n", `config.yaml: ngnixEnabled: no module has the values key "ngnix"; did you mean nginxEnabled?`},
		{"bad YAML", "nginx: |\n  replicas: [\n", "config.yaml:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			chart := filepath.Join(dir, "modules", "001-nginx", "Chart.yaml")
			if err := os.MkdirAll(filepath.Dir(chart), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(chart, []byte("apiVersion: v2\nname: nginx\nversion: 0.1.0\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(dir, "config.yaml")
			if err := os.WriteFile(cfg, []byte(tc.config), 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := cli.Main(context.Background(), []string{"operator", "render", "--modules-dir", filepath.Join(dir, "modules"), "--global-hooks-dir", "", "--config", cfg}, nil, &stdout, &stderr)
			if code == 0 || !strings.Contains(stderr.String(), filepath.Join(dir, tc.want)) {
				t.Errorf("exit %d, stderr %q: want non-zero with %q", code, stderr.String(), filepath.Join(dir, tc.want))
			}
			if strings.Contains(stderr.String(), "strata-operator-render-") {
				t.Errorf("the error names the private copy: %s", stderr.String())
			}
		})
	}
}
