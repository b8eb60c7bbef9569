//go:build linux

package kubetest_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/testbin"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// processesIn lists the processes whose command line mentions dir: the
// control plane's etcd and kube-apiserver carry it in their flags.
func processesIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // exited meanwhile
		}
		if bytes.Contains(cmdline, []byte(dir)) {
			found = append(found, e.Name()+": "+string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
		}
	}
	return found
}

func TestStartStop(t *testing.T) {
	c := kubetest.Start(t)
	ctx := t.Context()

	if got := processesIn(t, c.Dir); len(got) != 2 {
		t.Errorf("processes of the control plane = %q, want etcd and kube-apiserver", got)
	}

	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "greeting", Namespace: "default"},
		Data:       map[string]string{"hello": "world"},
	}
	if _, err := c.Client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ConfigMap: %v", err)
	}

	// Read it back through the kubeconfig file, as a tool run by a test would.
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatalf("loading %s: %v", c.Kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().ConfigMaps("default").Get(ctx, "greeting", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading ConfigMap back: %v", err)
	}
	if got.Data["hello"] != "world" {
		t.Errorf("ConfigMap data = %v, want hello=world", got.Data)
	}
	version, err := client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if version.GitVersion != "v1.37.1" {
		t.Errorf("server version = %q, want v1.37.1 (hack/testbin/kube-apiserver/go.mod)", version.GitVersion)
	}
	// RBAC is on, and the admin is allowed everything.
	if _, err := client.RbacV1().ClusterRoles().Get(ctx, "cluster-admin", metav1.GetOptions{}); err != nil {
		t.Errorf("reading ClusterRole cluster-admin: %v", err)
	}

	pids := c.PIDs()
	if len(pids) != 2 {
		t.Fatalf("PIDs() = %v, want 2", pids)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("after Stop, process group %d: kill(0) = %v, want ESRCH", pid, err)
		}
	}
	if got := processesIn(t, c.Dir); len(got) != 0 {
		t.Errorf("after Stop, processes left: %q", got)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// TestStartClusterFailure: a kube-apiserver that cannot start yields an
// error with its log, and leaves no process behind.
func TestStartClusterFailure(t *testing.T) {
	dir := t.TempDir()
	c, err := kubetest.StartCluster(t.Context(), kubetest.Options{
		EtcdPath:      testbin.Path(t, "etcd"),
		APIServerPath: testbin.Path(t, "kube-apiserver"),
		Dir:           dir,
		APIServerArgs: []string{"--no-such-flag"},
	})
	if err == nil {
		c.Stop()
		t.Fatal("StartCluster with an unknown kube-apiserver flag: no error")
	}
	for _, want := range []string{"kube-apiserver exited during start-up", "unknown flag: --no-such-flag", "kube-apiserver.log (tail)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("StartCluster error = %v\nwant it to contain %q", err, want)
		}
	}
	if got := processesIn(t, dir); len(got) != 0 {
		t.Errorf("after a failed start, processes left: %q", got)
	}
}

func TestShared(t *testing.T) {
	c := kubetest.Shared(t)
	t.Run("same", func(t *testing.T) {
		if again := kubetest.Shared(t); again != c {
			t.Errorf("Shared returned %p, then %p; want one cluster", c, again)
		}
	})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "shared-"}}
	ns, err := c.Client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	if _, err := c.Client.CoreV1().ConfigMaps(ns.Name).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Errorf("listing ConfigMaps in %s: %v", ns.Name, err)
	}
}

func TestInstallCRDs(t *testing.T) {
	c := kubetest.Shared(t)
	ctx := t.Context()
	for range 2 { // installing is idempotent
		if err := c.InstallCRDs(ctx, "testdata/crds"); err != nil {
			t.Fatalf("InstallCRDs(testdata/crds): %v", err)
		}
	}
	widgets := c.Dynamic.Resource(schema.GroupVersionResource{Group: "kubetest.strata.dev", Version: "v1", Resource: "widgets"})
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubetest.strata.dev/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"generateName": "w-", "namespace": "default"},
		"spec":       map[string]any{"size": int64(3)},
	}}
	created, err := widgets.Namespace("default").Create(ctx, w, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a Widget: %v", err)
	}
	got, err := widgets.Namespace("default").Get(ctx, created.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the Widget back: %v", err)
	}
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 3 {
		t.Errorf("Widget spec.size = %d, want 3", size)
	}

	err = c.InstallCRDs(ctx, "testdata/conflict/gizmos.yaml")
	if err == nil || !strings.Contains(err.Error(), "testdata/conflict/gizmos.yaml:3: CRD gizmos.kubetest.strata.dev: names not accepted") {
		t.Errorf("InstallCRDs(conflicting kind) error = %v, want names not accepted, with file and line", err)
	}
}

func TestWithCRDs(t *testing.T) {
	c := kubetest.Start(t, kubetest.WithCRDs("testdata/crds/widgets.yaml"))
	list, err := c.Dynamic.Resource(schema.GroupVersionResource{Group: "kubetest.strata.dev", Version: "v1", Resource: "gadgets"}).
		List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing Gadgets after WithCRDs: %v", err)
	}
	if len(list.Items) != 0 {
		t.Errorf("Gadgets = %d, want 0", len(list.Items))
	}
}

// TestRestartAPIServer: after a restart the same clients reach the same
// data, the process is a new one, and Done stays open.
func TestRestartAPIServer(t *testing.T) {
	c := kubetest.Start(t)
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: "default"}, Data: map[string]string{"a": "b"}}
	if _, err := c.Client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := c.PIDs()
	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	after := c.PIDs()
	if len(before) != 2 || len(after) != 2 || before[0] != after[0] || before[1] == after[1] {
		t.Errorf("PIDs (etcd, kube-apiserver) before %v, after %v: want the same etcd and a new kube-apiserver", before, after)
	}
	got, err := c.Client.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
	if err != nil || got.Data["a"] != "b" {
		t.Fatalf("the ConfigMap after the restart: %v, %v", got, err)
	}
	select {
	case <-c.Done():
		t.Fatal("Done closed by a restart")
	default:
	}
}
