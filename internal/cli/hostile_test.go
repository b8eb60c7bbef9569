package cli_test

// Attacks on the built binary, each a regression test of issue 16: hostile
// inputs under a memory limit must end in a clear error, not an out of
// memory crash; a server that stops must not leave its commands running
// nor their workspaces behind.

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/testbin"
)

// strataBinary is cmd/strata, built once for the package's tests.
func strataBinary(t *testing.T) string { return testbin.Strata(t) }

// memoryLimit is the address space the attacked commands get: less than
// the attacks took before they were fixed (2 GB and more of memory), with
// the 1 GiB or so of address space a Go program reserves besides.
const memoryLimit = 5 << 29

// runLimited runs the binary under RLIMIT_AS (prlimit) and returns its
// exit code and stderr.
func runLimited(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("these tests need prlimit (util-linux): %v", err)
	}
	cmd := exec.Command(prlimit, append([]string{"--as=" + strconv.Itoa(memoryLimit), "--", strataBinary(t)}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOGC=100")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stderr.String()
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// aliasBomb is 500 bytes of YAML whose aliases and merge keys expand to
// 1.2 million values and 240 MB of strings: before aliases had a budget of
// their own, it was read, merged and encoded in 41 s and 2 GB.
var aliasBomb = `a: &a "` + strings.Repeat("x", 200) + `"
b: &b [*a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d]
f: &f {<<: {x0: *e, x1: *e}, x2: *e, x3: *e, x4: *e, x5: *e, x6: *e, x7: *e}
g: &g [*f, *f, *f, *f, *f, *f, *f, *f]
h: [*g, *g, *g, *g]
`

// TestHostileYAML: YAML built to exhaust memory is refused with an error
// that names the budget, within a 1 GiB address space.
func TestHostileYAML(t *testing.T) {
	dir := t.TempDir()
	// 40 MB of small values: 6.7 million, past the 4,194,304 budget.
	var stream bytes.Buffer
	stream.WriteString("apiVersion: v1\nkind: Thing\nmetadata:\n  name: x\nspec:\n  xs:\n")
	for stream.Len() < 40<<20 {
		stream.WriteString("  - 1\n")
	}
	var values bytes.Buffer
	values.WriteString("xs:\n")
	for values.Len() < 15<<20 {
		values.WriteString("  - 1\n")
	}
	writeFiles(t, dir, map[string]string{
		"app/manifests.yaml": stream.String(),
		"plugin.yaml": `apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata: {name: cat}
spec:
  generate: {command: [cat], args: [manifests.yaml]}
`,
		"chart/Chart.yaml":      "apiVersion: v2\nname: big\nversion: 0.1.0\n",
		"chart/values.yaml":     values.String(),
		"bomb.yaml":             aliasBomb,
		"bombchart/Chart.yaml":  "apiVersion: v2\nname: bomb\nversion: 0.1.0\n",
		"bombchart/values.yaml": aliasBomb,
		"base.yaml":             "a: 1\n",
		"layers/app.yaml": `apiVersion: application.giantswarm.io/v1alpha1
kind: App
metadata: {name: web, namespace: apps}
spec:
  catalog: c
  catalogNamespace: apps
  name: web
  namespace: apps
  version: 1.0.0
  userConfig:
    configMap: {name: web-user, namespace: apps}
`,
		"layers/objects.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-user, namespace: apps}\ndata:\n  values: |\n" +
			indent(aliasBomb, "    ") + "---\napiVersion: application.giantswarm.io/v1alpha1\nkind: Catalog\n" +
			"metadata: {name: c, namespace: apps}\nspec:\n  storage: {type: helm, URL: 'https://example.com/'}\n",
	})
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"manifest stream of small values", []string{"cmp", "generate", "app", "--config", "plugin.yaml", "--insecure-no-sandbox"},
			"more than 4194304 values"},
		{"chart values.yaml of small values", []string{"cmp", "parameters", "chart", "--builtin", "helm"},
			"more than 1048576 values"},
		{"chart values.yaml holding an alias bomb", []string{"cmp", "parameters", "bombchart", "--builtin", "helm"},
			"YAML aliases and merge keys (<<) expand to more than"},
		{"values merge of an alias bomb", []string{"values", "merge", "base.yaml", "bomb.yaml"},
			"YAML aliases and merge keys (<<) expand to more than"},
		{"values flatten of an alias bomb", []string{"values", "flatten", "bomb.yaml"},
			"YAML aliases and merge keys (<<) expand to more than"},
		{"layers render of an alias bomb in a user ConfigMap", []string{"layers", "render", "layers/app.yaml"},
			"ConfigMap apps/web-user data.values: YAML aliases and merge keys (<<) expand to more than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr := runLimited(t, dir, tc.args...)
			if code == 0 || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "out of memory") {
				t.Errorf("strata %s under a %d-byte address space: exit %d, stderr:\n%s\nwant a failure saying %q",
					strings.Join(tc.args, " "), memoryLimit, code, clip(stderr), tc.want)
			}
		})
	}
}

func indent(s, by string) string {
	return by + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+by) + "\n"
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

// processGone reports whether pid has exited (a zombie waiting for its new
// parent counts as gone).
func processGone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name, in parentheses.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// stubbornScript ignores SIGTERM, as does a child it starts; both write
// their pid into $PIDS before sleeping: as /proc names them, not $$, which
// in the command's own PID namespace is 1.
const stubbornScript = `#!/bin/sh
trap '' TERM
sh -c 'trap "" TERM; read -r p _ </proc/self/stat; echo $p > "$PIDS/child"; exec sleep 300' &
read -r p _ </proc/self/stat; echo $p > "$PIDS/parent"
cat >/dev/null
sleep 300
`

func readPids(t *testing.T, dir string) (pids []int, ok bool) {
	for _, name := range []string{"parent", "child"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || len(bytes.TrimSpace(data)) == 0 {
			return nil, false
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids, true
}

// stopAndCheck sends SIGTERM to a server, waits for it to exit, and checks
// that the stubborn command and its child are gone.
func stopAndCheck(t *testing.T, server *exec.Cmd, pidDir string) {
	t.Helper()
	var pids []int
	eventually.True(t, "the command has started", func() (bool, string) {
		var ok bool
		pids, ok = readPids(t, pidDir)
		return ok, "no pid files yet"
	})
	if err := server.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- server.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		server.Process.Kill()
		t.Fatal("the server did not exit within 60 s of SIGTERM")
	}
	for _, pid := range pids {
		if !processGone(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("process %d of the command still runs after the server exited", pid)
		}
	}
}

// TestCmpServeShutdownKillsCommands: on SIGTERM, after its grace period,
// cmp serve kills a command that ignores SIGTERM, and its child, and
// leaves no workspace behind.
func TestCmpServeShutdownKillsCommands(t *testing.T) {
	dir := t.TempDir()
	pidDir, socketDir, cacheDir := filepath.Join(dir, "pids"), filepath.Join(dir, "sock"), filepath.Join(dir, "cache")
	writeFiles(t, dir, map[string]string{
		"stubborn.sh": stubbornScript,
		"plugin.yaml": "apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\nmetadata: {name: stubborn}\nspec:\n  generate: {command: [" +
			filepath.Join(dir, "stubborn.sh") + "]}\n",
	})
	for _, d := range []string{pidDir, socketDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	server := exec.Command(strataBinary(t), "cmp", "serve", "--config", filepath.Join(dir, "plugin.yaml"), "--socket-dir", socketDir,
		"--cache-dir", cacheDir, "--shutdown-grace", "500ms", "--insecure-no-sandbox")
	server.Env = append(os.Environ(), "PIDS="+pidDir)
	var logs bytes.Buffer
	server.Stderr = &logs
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Kill() })
	socket := filepath.Join(socketDir, "stubborn.sock")
	eventually.True(t, "the server listens", func() (bool, string) {
		_, err := os.Stat(socket)
		return err == nil, fmt.Sprint(err)
	})

	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pluginpb.NewConfigManagementPluginServiceClient(conn)
	stream, err := client.GenerateManifest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := cmpserver.SendApp(stream, &pluginpb.ManifestRequestMetadata{AppName: "demo", AppRelPath: "."}, tgzOf(t, "README", "x")); err != nil {
		t.Fatal(err)
	}
	go stream.CloseAndRecv() // answered with an error when the server stops

	stopAndCheck(t, server, pidDir)
	left, _ := filepath.Glob(filepath.Join(cacheDir, "work", "ws-*"))
	if len(left) > 0 {
		t.Errorf("workspaces left behind: %v", left)
	}
	if t.Failed() {
		t.Logf("server log:\n%s", logs.String())
	}
}

// TestGeneratorServeShutdownKillsCommands: the same for generator serve.
func TestGeneratorServeShutdownKillsCommands(t *testing.T) {
	dir := t.TempDir()
	pidDir := filepath.Join(dir, "pids")
	if err := os.MkdirAll(pidDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{
		"stubborn.sh": stubbornScript,
		"gen.yaml": `apiVersion: strata.dev/v1alpha1
kind: GeneratorConfig
listen: unix:` + filepath.Join(dir, "gen.sock") + `
shutdownGrace: 500ms
plugins:
  - name: stubborn
    allowUnauthenticated: true
    requestTimeout: 5m
    backend:
      command:
        argv: [./stubborn.sh]
        passEnv: [PIDS]
`,
	})
	server := exec.Command(strataBinary(t), "generator", "serve", "--config", filepath.Join(dir, "gen.yaml"))
	server.Env = append(os.Environ(), "PIDS="+pidDir)
	var logs bytes.Buffer
	server.Stderr = &logs
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Kill() })
	socket := filepath.Join(dir, "gen.sock")
	eventually.True(t, "the server listens", func() (bool, string) {
		_, err := os.Stat(socket)
		return err == nil, fmt.Sprint(err)
	})
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", socket)
	}}}
	go func() {
		resp, err := hc.Post("http://gen/stubborn/api/v1/getparams.execute", "application/json", strings.NewReader(`{"applicationSetName":"a","input":{}}`))
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	stopAndCheck(t, server, pidDir)
	if t.Failed() {
		t.Logf("server log:\n%s", logs.String())
	}
}

// tgzOf returns a gzip-compressed tar holding one file.
func tgzOf(t *testing.T, name, body string) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
