package clustertest_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/operator"
)

// e2eTree is an operator tree using every cluster backend: a module whose
// chart reads its config section, a module hook on a kubernetes binding
// that answers with a kubernetes patch, an afterDeleteHelm hook, and a
// global afterAll hook writing a config patch.
var e2eTree = map[string]string{
	"modules/001-echo/Chart.yaml":  "apiVersion: v2\nname: echo\nversion: 0.1.0\n",
	"modules/001-echo/values.yaml": "echo:\n  message: default\n",
	"modules/001-echo/openapi/config-values.yaml": `type: object
properties:
  message: {type: string}
`,
	"modules/001-echo/templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: echo-message
data:
  message: {{ .Values.echo.message | quote }}
`,
	"modules/001-echo/hooks/watch.sh": `#!/bin/sh
if [ "$1" = "--config" ]; then
  cat <<'CFG'
configVersion: v1
afterDeleteHelm: 1
kubernetes:
- name: triggers
  apiVersion: v1
  kind: ConfigMap
  labelSelector:
    matchLabels:
      trigger: "yes"
  jqFilter: .metadata.name
  executeHookOnSynchronization: false
CFG
  exit 0
fi
if grep -q '"binding":"afterDeleteHelm"' "$BINDING_CONTEXT_PATH"; then
  echo "afterDeleteHelm" >> "$E2E_MARKER"
  exit 0
fi
for name in $(grep -o '"filterResult":"[^"]*"' "$BINDING_CONTEXT_PATH" | sed 's/.*:"\(.*\)"/\1/' | sort -u); do
  printf '{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"seen-%s","namespace":"%s"},"data":{"by":"watch.sh"}}}\n' "$name" "$E2E_NAMESPACE" >> "$KUBERNETES_PATCH_PATH"
done
`,
	"modules/001-echo/hooks/fail.sh": `#!/bin/sh
if [ "$1" = "--config" ]; then
  cat <<'CFG'
configVersion: v1
kubernetes:
- name: gadgets
  apiVersion: e2e.strata.test/v1
  kind: Gadget
  jqFilter: .metadata.name
  executeHookOnSynchronization: false
  allowFailure: true
CFG
  exit 0
fi
for name in $(grep -o '"filterResult":"[^"]*"' "$BINDING_CONTEXT_PATH" | sed 's/.*:"\(.*\)"/\1/' | sort -u); do
  printf '{"operation":"MergePatch","apiVersion":"e2e.strata.test/v1","kind":"Gadget","namespace":"%s","name":"%s","subresource":"status","mergePatch":{"status":{"failed":"yes"}},"ignoreHookError":true}\n' "$E2E_NAMESPACE" "$name" >> "$KUBERNETES_PATCH_PATH"
  printf '{"operation":"MergePatch","apiVersion":"e2e.strata.test/v1","kind":"Gadget","namespace":"%s","name":"%s","mergePatch":{"spec":{"touched":true}},"ignoreHookError":true}\n' "$E2E_NAMESPACE" "$name" >> "$KUBERNETES_PATCH_PATH"
done
echo "gadget check failed" >&2
exit 1
`,
	"global-hooks/openapi/config-values.yaml": `type: object
properties:
  converged: {type: boolean}
`,
	"global-hooks/hooks/converged.sh": `#!/bin/sh
if [ "$1" = "--config" ]; then
  printf 'configVersion: v1\nafterAll: 1\n'
  exit 0
fi
echo '[{"op":"add","path":"/global/converged","value":true}]' > "$CONFIG_VALUES_JSON_PATCH_PATH"
`,
}

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.Contains(name, "/hooks/") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// freshNamespace creates a namespace of its own for one run of a test
// (-count=N reruns find nothing of the runs before).
func freshNamespace(t *testing.T, c *kubetest.Cluster, prefix string) string {
	t.Helper()
	ns := fmt.Sprintf("%s-%d", prefix, nsSeq.Add(1))
	namespace(t, c, ns)
	return ns
}

var nsSeq atomic.Int64

// clusterSettings are the settings of an in-process operator on c for the
// tree in dir, in namespace ns, with quick retries and no listeners.
func clusterSettings(dir, ns string, c *kubetest.Cluster) operator.Settings {
	s := operator.DefaultSettings()
	s.ModulesDir = filepath.Join(dir, "modules")
	s.GlobalHooksDir = filepath.Join(dir, "global-hooks")
	s.Namespace = ns
	s.KubeConfig = c.Kubeconfig
	s.TempDir = filepath.Join(dir, "tmp")
	s.ListenPort = ""
	s.DebugUnixSocket = ""
	s.Retry = 100 * time.Millisecond
	s.RetryMax = time.Second
	return s
}

// engineRun is one in-process operator on the cluster.
type engineRun struct {
	eng    *operator.Engine
	cancel context.CancelFunc
	done   chan error
}

func startEngine(t *testing.T, s operator.Settings) *engineRun {
	t.Helper()
	e, err := operator.New(s, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &engineRun{eng: e, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- e.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	select {
	case <-e.Ready():
	case err := <-r.done:
		r.done <- err
		t.Fatalf("the operator stopped before its first converge: %v\nhistory:\n%s", err, strings.Join(e.History(), "\n"))
	case <-time.After(deadline):
		t.Fatalf("no converge within %v; history:\n%s", deadline, strings.Join(e.History(), "\n"))
	}
	r.idle(t)
	return r
}

func (r *engineRun) idle(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	if err := r.eng.WaitIdle(ctx); err != nil {
		t.Fatalf("queues not idle: %v; history:\n%s", err, strings.Join(r.eng.History(), "\n"))
	}
}

func (r *engineRun) stop(t *testing.T) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil && !strings.Contains(err.Error(), "context canceled") {
			t.Errorf("the operator stopped with %v", err)
		}
	case <-time.After(deadline):
		t.Errorf("the operator did not stop within %v", deadline)
	}
}

// releaseRevisions lists the revisions of Helm release name stored in ns
// (Helm's Secret driver: owner=helm, name=<release>), with their status.
func releaseRevisions(t *testing.T, c *kubetest.Cluster, ns, name string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	list, err := c.Client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range list.Items {
		out = append(out, s.Labels["version"]+":"+s.Labels["status"])
	}
	sort.Strings(out)
	return out
}

func configMapData(t *testing.T, c *kubetest.Cluster, ns, name string) (map[string]string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cm, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return cm.Data, true
}

func putConfigMap(t *testing.T, c *kubetest.Cluster, ns, name string, labels, data map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cms := c.Client.CoreV1().ConfigMaps(ns)
	cur, err := cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}, Data: data}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	cur.Labels, cur.Data = labels, data
	if _, err := cms.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestEngineOnCluster runs the operator in process with every cluster
// backend: the ConfigMap config store, Helm releases on the API server, a
// kubernetes binding whose hook answers with a kubernetes patch, and a
// config patch written back to the ConfigMap; then a config edit upgrades
// the release, a deleted resource is healed, a restart changes nothing,
// and disabling the module uninstalls it and runs afterDeleteHelm.
func TestEngineOnCluster(t *testing.T) {
	c := kubetest.Shared(t)
	ns := freshNamespace(t, c, "operator-e2e")
	if err := c.InstallCRDs(t.Context(), "testdata/gadgets.yaml"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeTree(t, dir, e2eTree)
	marker := filepath.Join(dir, "marker")
	t.Setenv("E2E_MARKER", marker)
	t.Setenv("E2E_NAMESPACE", ns)
	putConfigMap(t, c, ns, "addon-operator", nil, map[string]string{"echo": "message: hello\n", "echoEnabled": "true"})

	s := clusterSettings(dir, ns, c)
	s.ReleaseCheck = 200 * time.Millisecond

	r := startEngine(t, s)
	if d, _ := configMapData(t, c, ns, "echo-message"); d["message"] != "hello" {
		t.Fatalf("echo-message = %v, want message hello (the config section reached the chart); history:\n%s", d, strings.Join(r.eng.History(), "\n"))
	}
	if got := releaseRevisions(t, c, ns, "echo"); fmt.Sprint(got) != "[1:deployed]" {
		t.Fatalf("release echo = %v, want [1:deployed]", got)
	}
	eventually.True(t, "the global hook's config patch in the ConfigMap", func() (bool, string) {
		d, _ := configMapData(t, c, ns, "addon-operator")
		return strings.Contains(d["global"], "converged: true"), fmt.Sprint(d)
	})

	// A kubernetes binding: the hook answers with a CreateOrUpdate.
	putConfigMap(t, c, ns, "first", map[string]string{"trigger": "yes"}, nil)
	eventually.True(t, "seen-first created by the hook's kubernetes patch", func() (bool, string) {
		d, ok := configMapData(t, c, ns, "seen-first")
		return ok && d["by"] == "watch.sh", fmt.Sprint(d)
	})

	// A hook that fails: its status patch marked ignoreHookError is
	// applied, its other patch is not.
	gadgets := c.Dynamic.Resource(schema.GroupVersionResource{Group: "e2e.strata.test", Version: "v1", Resource: "gadgets"}).Namespace(ns)
	g := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "e2e.strata.test/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g1", "namespace": ns},
		"spec":     map[string]any{"size": int64(1)},
	}}
	if _, err := gadgets.Create(t.Context(), g, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "the failed hook's status patch applied", func() (bool, string) {
		got, err := gadgets.Get(t.Context(), "g1", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		failed, _, _ := unstructured.NestedString(got.Object, "status", "failed")
		return failed == "yes", fmt.Sprint(got.Object)
	})
	if got, err := gadgets.Get(t.Context(), "g1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if _, touched, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "touched"); touched {
		t.Errorf("the failed hook's spec patch was applied: %v", got.Object)
	}

	// A config edit upgrades the release.
	cfg, _ := configMapData(t, c, ns, "addon-operator")
	cfg["echo"] = "message: bye\n"
	putConfigMap(t, c, ns, "addon-operator", nil, cfg)
	eventually.True(t, "echo-message upgraded", func() (bool, string) {
		d, _ := configMapData(t, c, ns, "echo-message")
		return d["message"] == "bye", fmt.Sprint(d)
	})
	r.idle(t)
	if got := releaseRevisions(t, c, ns, "echo"); fmt.Sprint(got) != "[1:superseded 2:deployed]" {
		t.Fatalf("release echo after the edit = %v, want [1:superseded 2:deployed]", got)
	}

	// A resource of the release deleted is put back.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := c.Client.CoreV1().ConfigMaps(ns).Delete(ctx, "echo-message", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, "echo-message healed", func() (bool, string) {
		d, ok := configMapData(t, c, ns, "echo-message")
		return ok && d["message"] == "bye", fmt.Sprint(d)
	})
	r.idle(t)
	before := releaseRevisions(t, c, ns, "echo")

	// A restart with nothing changed stores no revision.
	r.stop(t)
	r = startEngine(t, s)
	if got := releaseRevisions(t, c, ns, "echo"); fmt.Sprint(got) != fmt.Sprint(before) {
		t.Fatalf("a restart changed the release: %v, was %v", got, before)
	}

	// Disabled: uninstalled, then afterDeleteHelm.
	cfg, _ = configMapData(t, c, ns, "addon-operator")
	cfg["echoEnabled"] = "false"
	putConfigMap(t, c, ns, "addon-operator", nil, cfg)
	eventually.True(t, "release echo uninstalled", func() (bool, string) {
		got := releaseRevisions(t, c, ns, "echo")
		_, cm := configMapData(t, c, ns, "echo-message")
		return len(got) == 0 && !cm, fmt.Sprintf("revisions %v, echo-message exists: %v", got, cm)
	})
	eventually.True(t, "afterDeleteHelm ran", func() (bool, string) {
		data, _ := os.ReadFile(marker)
		return strings.Contains(string(data), "afterDeleteHelm"), string(data)
	})
	r.stop(t)
}

// killTree has two modules: first (order 1) installs at once; slow (order
// 2) holds its beforeHelm hook while $E2E_HOLD exists, so the operator can
// be killed in the middle of a converge. A global onStartup hook writes a
// config patch before any module runs.
var killTree = map[string]string{
	"modules/001-first/Chart.yaml":               "apiVersion: v2\nname: first\nversion: 0.1.0\n",
	"modules/001-first/templates/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: first\ndata:\n  a: b\n",
	"modules/002-slow/Chart.yaml":                "apiVersion: v2\nname: slow\nversion: 0.1.0\n",
	"modules/002-slow/templates/configmap.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: slow\ndata:\n  a: b\n",
	"modules/002-slow/hooks/hold.sh": `#!/bin/sh
if [ "$1" = "--config" ]; then
  printf 'configVersion: v1\nbeforeHelm: 1\n'
  exit 0
fi
echo "slow beforeHelm" >> "$E2E_MARKER"
while [ -e "$E2E_HOLD" ]; do sleep 0.1; done
`,
	"global-hooks/openapi/config-values.yaml": "type: object\nproperties:\n  started: {type: integer}\n",
	"global-hooks/hooks/started.sh": `#!/bin/sh
if [ "$1" = "--config" ]; then
  printf 'configVersion: v1\nonStartup: 1\n'
  exit 0
fi
echo '[{"op":"add","path":"/global/started","value":1}]' > "$CONFIG_VALUES_JSON_PATCH_PATH"
`,
}

// TestOperatorKilledMidConverge kills `strata operator run` with SIGKILL
// while a module's hook runs in the middle of the first converge, then
// starts it again: the restart converges with the config patch written
// before the kill kept, and no release gets a second revision.
func TestOperatorKilledMidConverge(t *testing.T) {
	c := kubetest.Shared(t)
	ns := freshNamespace(t, c, "operator-kill")
	dir := t.TempDir()
	writeTree(t, dir, killTree)
	marker, hold := filepath.Join(dir, "marker"), filepath.Join(dir, "hold")
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	putConfigMap(t, c, ns, "addon-operator", nil, map[string]string{"firstEnabled": "true", "slowEnabled": "true"})

	run := func(name string) (*exec.Cmd, *lockedBuffer, string) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(strataBinary(t), "operator", "run", "--debug-unix-socket=", "--tmp-dir", filepath.Join(dir, "tmp-"+name))
		cmd.Env = append(os.Environ(),
			"KUBE_CONFIG="+c.Kubeconfig, "ADDON_OPERATOR_NAMESPACE="+ns,
			"ADDON_OPERATOR_LISTEN_ADDRESS=127.0.0.1", "ADDON_OPERATOR_LISTEN_PORT="+port,
			"MODULES_DIR="+filepath.Join(dir, "modules"), "GLOBAL_HOOKS_DIR="+filepath.Join(dir, "global-hooks"),
			"E2E_MARKER="+marker, "E2E_HOLD="+hold, "LOG_TYPE=json")
		var stderr lockedBuffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("operator %s:\n%s", name, stderr.String())
			}
		})
		return cmd, &stderr, addr
	}

	first, _, _ := run("first")
	eventually.Within(t, deadline, "slow's beforeHelm running", func() (bool, string) {
		data, _ := os.ReadFile(marker)
		return strings.Contains(string(data), "slow beforeHelm"), string(data)
	})
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	firstRevs := releaseRevisions(t, c, ns, "first")
	if fmt.Sprint(firstRevs) != "[1:deployed]" {
		t.Fatalf("release first before the kill = %v, want [1:deployed]", firstRevs)
	}
	if got := releaseRevisions(t, c, ns, "slow"); len(got) != 0 {
		t.Fatalf("release slow before the kill = %v, want none (killed in beforeHelm)", got)
	}

	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	_, _, addr := run("second")
	eventually.Within(t, deadline, "the restarted operator ready (first converge done)", func() (bool, string) {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	if got := releaseRevisions(t, c, ns, "first"); fmt.Sprint(got) != "[1:deployed]" {
		t.Errorf("release first after the restart = %v, want [1:deployed] (no second revision)", got)
	}
	if got := releaseRevisions(t, c, ns, "slow"); fmt.Sprint(got) != "[1:deployed]" {
		t.Errorf("release slow after the restart = %v, want [1:deployed]", got)
	}
	d, _ := configMapData(t, c, ns, "addon-operator")
	if !strings.Contains(d["global"], "started: 1") || d["firstEnabled"] != "true" || d["slowEnabled"] != "true" {
		t.Errorf("the config after the kill and restart lost a value: %v", d)
	}
}

// TestEngineAcrossAPIServerRestart restarts kube-apiserver while a module's
// hook holds the first converge: the converge completes when the API
// server is back, every release is installed once, and the ConfigMap's
// watch, cut by the restart, still delivers edits.
func TestEngineAcrossAPIServerRestart(t *testing.T) {
	c := kubetest.Start(t)
	ns := freshNamespace(t, c, "operator-restart")
	dir := t.TempDir()
	writeTree(t, dir, killTree)
	marker, hold := filepath.Join(dir, "marker"), filepath.Join(dir, "hold")
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("E2E_MARKER", marker)
	t.Setenv("E2E_HOLD", hold)
	putConfigMap(t, c, ns, "addon-operator", nil, map[string]string{"firstEnabled": "true", "slowEnabled": "true"})

	s := clusterSettings(dir, ns, c)
	e, err := operator.New(s, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &engineRun{eng: e, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- e.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })

	eventually.Within(t, deadline, "slow's beforeHelm running", func() (bool, string) {
		data, _ := os.ReadFile(marker)
		return strings.Contains(string(data), "slow beforeHelm"), string(data)
	})
	if err := c.RestartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.Ready():
	case err := <-r.done:
		r.done <- err
		t.Fatalf("the operator stopped: %v\nhistory:\n%s", err, strings.Join(e.History(), "\n"))
	case <-time.After(deadline):
		t.Fatalf("no converge within %v after the restart; history:\n%s", deadline, strings.Join(e.History(), "\n"))
	}
	r.idle(t)
	for _, name := range []string{"first", "slow"} {
		if got := releaseRevisions(t, c, ns, name); fmt.Sprint(got) != "[1:deployed]" {
			t.Errorf("release %s = %v, want [1:deployed]", name, got)
		}
	}
	cfg, _ := configMapData(t, c, ns, "addon-operator")
	cfg["slowEnabled"] = "false"
	putConfigMap(t, c, ns, "addon-operator", nil, cfg)
	eventually.Within(t, deadline, "release slow uninstalled after an edit made once the API server was back", func() (bool, string) {
		got := releaseRevisions(t, c, ns, "slow")
		return len(got) == 0, fmt.Sprint(got)
	})
}
