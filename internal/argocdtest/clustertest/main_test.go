//go:build linux

package clustertest

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/testbin"
)

// argoNS is the namespace Argo CD runs in and keeps its Applications in.
const argoNS = "argocd"

var (
	appGVR    = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
	appSetGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"}
	projGVR   = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "appprojects"}
)

// env is the Argo CD every test shares.
type env struct {
	cluster   *kubetest.Cluster
	argoDir   string // the argo-cd module's directory in the module cache
	version   string // its version, v3.x.y
	argocd    string // the multi-call binary
	strata    string
	repo      *gitRepo
	repoAddr  string // the repo-server's gRPC address
	sockDir   string // ARGOCD_PLUGINSOCKFILEPATH
	genURL    string // strata generator serve's base URL
	genDir    string // its configuration's directory
	logDir    string
	procs     []*proc
	git       *gitServer
	startedAt time.Time
}

var shared struct {
	once sync.Once
	env  *env
	err  error
}

// setup starts the shared Argo CD on first use.
func setup(t testing.TB) *env {
	t.Helper()
	// Resolve the binaries with t (built on first use, or t skipped).
	etcd := testbin.Path(t, "etcd")
	apiserver := testbin.Path(t, "kube-apiserver")
	argocd := testbin.Path(t, "argocd")
	helm := testbin.Path(t, "helm")
	strata := testbin.Strata(t)
	shared.once.Do(func() {
		e := &env{argocd: argocd, strata: strata, startedAt: time.Now()}
		shared.env = e
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		shared.err = e.start(ctx, etcd, apiserver, helm)
	})
	if shared.err != nil {
		t.Fatalf("starting Argo CD and strata: %v", shared.err)
	}
	e := shared.env
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range e.procs {
				t.Logf("--- %s (log %s), last lines:\n%s", p.name, p.log, p.tail(25))
			}
		}
	})
	return e
}

// local is `make argocd-local`: start the shared Argo CD and strata, print
// how to reach them, and run until interrupted, instead of the tests.
var local = flag.Bool("argocd-local", false, "start Argo CD and strata as the tests do and keep them running until Ctrl-C (make argocd-local); runs no test")

func TestMain(m *testing.M) {
	flag.Parse()
	if *local {
		os.Exit(runLocal())
	}
	code := m.Run()
	if e := shared.env; e != nil {
		e.stop(code != 0)
	}
	testbin.RemoveStrata()
	os.Exit(code)
}

// stop ends every process, the control plane last; keep leaves the logs.
func (e *env) stop(keep bool) {
	for i := len(e.procs) - 1; i >= 0; i-- {
		e.procs[i].stop(10 * time.Second)
	}
	if e.git != nil {
		e.git.close()
	}
	if e.cluster != nil {
		if err := e.cluster.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "argocd clustertest: stopping the control plane: %v\n", err)
		}
	}
	if keep {
		fmt.Fprintf(os.Stderr, "argocd clustertest: the logs of Argo CD and strata are kept in %s\n", e.logDir)
		return
	}
	os.RemoveAll(filepath.Dir(e.logDir))
}

// argoModule finds the argo-cd module hack/testbin/argocd pins, in the
// module cache (downloading it if missing): its install manifests are
// read from there.
func argoModule(ctx context.Context) (dir, version string, err error) {
	root, err := testbin.Root()
	if err != nil {
		return "", "", err
	}
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", "github.com/argoproj/argo-cd/v3")
	cmd.Dir = filepath.Join(root, "hack", "testbin", "argocd")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("finding the argo-cd module of hack/testbin/argocd: %v\n%s", err, out)
	}
	var m struct{ Dir, Version, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", "", fmt.Errorf("reading go mod download's answer: %w", err)
	}
	if m.Error != "" || m.Dir == "" {
		return "", "", fmt.Errorf("the argo-cd module of hack/testbin/argocd: %s", m.Error)
	}
	return m.Dir, m.Version, nil
}

func (e *env) start(ctx context.Context, etcd, apiserver, helm string) error {
	base, err := os.MkdirTemp("", "strata-argocd-e2e-")
	if err != nil {
		return err
	}
	e.logDir = filepath.Join(base, "logs")
	dirs := map[string]string{}
	for _, d := range []string{"logs", "cluster", "git", "work", "sock", "home", "tmp", "tls", "ssh", "gpg", "bin", "gen"} {
		dirs[d] = filepath.Join(base, d)
		if err := os.MkdirAll(dirs[d], 0o700); err != nil {
			return err
		}
	}
	e.sockDir = dirs["sock"]
	e.genDir = dirs["gen"]

	if e.argoDir, e.version, err = argoModule(ctx); err != nil {
		return err
	}

	e.cluster, err = kubetest.StartCluster(ctx, kubetest.Options{EtcdPath: etcd, APIServerPath: apiserver, Dir: dirs["cluster"]})
	if err != nil {
		return fmt.Errorf("starting the control plane: %w", err)
	}
	crds := filepath.Join(e.argoDir, "manifests", "crds")
	if err := e.cluster.InstallCRDs(ctx, filepath.Join(crds, "application-crd.yaml"), filepath.Join(crds, "applicationset-crd.yaml"), filepath.Join(crds, "appproject-crd.yaml")); err != nil {
		return fmt.Errorf("installing Argo CD's CRDs: %w", err)
	}
	if err := e.installConfig(ctx); err != nil {
		return err
	}

	// The git repository Applications point at.
	if e.git, err = startGitServer(dirs["git"]); err != nil {
		return err
	}
	if e.repo, err = e.git.newRepo("apps", filepath.Join("testdata", "repo"), dirs["work"]); err != nil {
		return err
	}

	// helm on the repo-server's PATH, for native Helm sources.
	if err := os.Symlink(helm, filepath.Join(dirs["bin"], "helm")); err != nil {
		return err
	}
	path := dirs["bin"] + string(os.PathListSeparator) + os.Getenv("PATH")
	baseEnv := []string{
		"PATH=" + path,
		"HOME=" + dirs["home"],
		"TMPDIR=" + dirs["tmp"],
		"KUBECONFIG=" + e.cluster.Kubeconfig,
		"GIT_CONFIG_NOSYSTEM=1",
		// Argo CD's gRPC keepalive, scaled down from its 10 s default: the
		// clients (the repo-server's to the sidecars, the controllers' to
		// the repo-server) ping every 2 × this (at least gRPC's floor of
		// 10 s), and servers that enforce a longer minimum end a long call
		// with GOAWAY too_many_pings (TestKeepAlive).
		"ARGOCD_GRPC_KEEP_ALIVE_MIN=" + keepAliveMin,
	}

	// strata's plugin sidecars, their sockets where the repo-server looks.
	if err := e.startSidecars(ctx, baseEnv, dirs); err != nil {
		return err
	}

	// Redis, in memory.
	redis, err := start("miniredis", e.logDir, baseEnv, e.argocd, "miniredis", "--addr", "127.0.0.1:0")
	if err != nil {
		return err
	}
	e.procs = append(e.procs, redis)
	redisAddr, err := redis.waitLog(ctx, "listening on ")
	if err != nil {
		return err
	}

	argoEnv := append(baseEnv,
		"ARGOCD_FAKE_IN_CLUSTER=true",
		"ARGOCD_PLUGINSOCKFILEPATH="+e.sockDir,
		"ARGOCD_GPG_ENABLED=false",
		"ARGOCD_GNUPGHOME="+dirs["gpg"],
		"ARGOCD_TLS_DATA_PATH="+dirs["tls"],
		"ARGOCD_SSH_DATA_PATH="+dirs["ssh"],
	)

	// The repo-server.
	if e.repoAddr, err = freeAddr(); err != nil {
		return err
	}
	metrics, err := freeAddr()
	if err != nil {
		return err
	}
	repoServer, err := start("argocd-repo-server", e.logDir, argoEnv, e.argocd, "argocd-repo-server",
		"--address", "127.0.0.1", "--port", portOf(e.repoAddr),
		"--metrics-address", "127.0.0.1", "--metrics-port", portOf(metrics),
		"--redis", redisAddr, "--disable-tls", "--logformat", "text", "--loglevel", "info")
	if err != nil {
		return err
	}
	e.procs = append(e.procs, repoServer)
	if err := repoServer.waitListen(ctx, e.repoAddr); err != nil {
		return err
	}

	// The application controller: resyncs every 10 s (Argo CD's default is
	// 120 s), so a test sees a refresh soon.
	metrics, err = freeAddr()
	if err != nil {
		return err
	}
	controller, err := start("argocd-application-controller", e.logDir, append(argoEnv, "HOSTNAME=argocd-application-controller-0"),
		e.argocd, "argocd-application-controller",
		"--kubeconfig", e.cluster.Kubeconfig, "--namespace", argoNS,
		"--redis", redisAddr, "--repo-server", e.repoAddr, "--repo-server-plaintext",
		"--commit-server", "127.0.0.1:1",
		"--app-resync", "10", "--app-resync-jitter", "0", "--repo-error-grace-period-seconds", "0",
		"--metrics-port", portOf(metrics), "--logformat", "text", "--loglevel", "info")
	if err != nil {
		return err
	}
	e.procs = append(e.procs, controller)

	// The ApplicationSet controller.
	var addrs [3]string
	for i := range addrs {
		if addrs[i], err = freeAddr(); err != nil {
			return err
		}
	}
	appset, err := start("argocd-applicationset-controller", e.logDir, argoEnv,
		e.argocd, "argocd-applicationset-controller",
		"--kubeconfig", e.cluster.Kubeconfig, "--namespace", argoNS,
		"--argocd-repo-server", e.repoAddr, "--repo-server-plaintext",
		"--metrics-addr", addrs[0], "--probe-addr", addrs[1], "--webhook-addr", addrs[2],
		"--enable-leader-election=false", "--logformat", "text", "--loglevel", "info")
	if err != nil {
		return err
	}
	e.procs = append(e.procs, appset)

	// strata's ApplicationSet plugin generator.
	return e.startGenerator(ctx, baseEnv)
}

// installConfig creates Argo CD's namespace, its ConfigMaps and Secret from
// the install manifests (manifests/base/config), with the settings the
// tests need, and the default AppProject the API server would create.
func (e *env) installConfig(ctx context.Context) error {
	if _, err := e.cluster.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argoNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	dir := filepath.Join(e.argoDir, "manifests", "base", "config")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	settings := map[string]map[string]string{
		// Argo CD's reconciliation timeout, as the install sets it.
		"argocd-cm": {"timeout.reconciliation": "10s", "timeout.reconciliation.jitter": "0s"},
	}
	for _, ent := range entries {
		if ent.Name() == "kustomization.yaml" || !strings.HasSuffix(ent.Name(), ".yaml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			return err
		}
		var u unstructured.Unstructured
		if err := yaml.Unmarshal(data, &u.Object); err != nil {
			return fmt.Errorf("%s: %w", ent.Name(), err)
		}
		if extra := settings[u.GetName()]; extra != nil {
			for k, v := range extra {
				if err := unstructured.SetNestedField(u.Object, v, "data", k); err != nil {
					return err
				}
			}
		}
		u.SetNamespace(argoNS)
		gvr := schema.GroupVersionResource{Version: "v1", Resource: strings.ToLower(u.GetKind()) + "s"}
		if _, err := e.cluster.Dynamic.Resource(gvr).Namespace(argoNS).Create(ctx, &u, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating %s %s of %s: %w", u.GetKind(), u.GetName(), ent.Name(), err)
		}
	}
	proj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "AppProject",
		"metadata":   map[string]any{"name": "default", "namespace": argoNS},
		"spec": map[string]any{
			"sourceRepos":              []any{"*"},
			"destinations":             []any{map[string]any{"server": "*", "namespace": "*"}},
			"clusterResourceWhitelist": []any{map[string]any{"group": "*", "kind": "*"}},
		},
	}}
	if _, err := e.cluster.Dynamic.Resource(projGVR).Namespace(argoNS).Create(ctx, proj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the default AppProject: %w", err)
	}
	return nil
}

// apps is the Applications client.
func (e *env) apps() dynamic.ResourceInterface {
	return e.cluster.Dynamic.Resource(appGVR).Namespace(argoNS)
}

// namespace creates namespace name for a test's objects.
func (e *env) namespace(t *testing.T, name string) {
	t.Helper()
	if _, err := e.cluster.Client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// apply creates or replaces obj (an Application or ApplicationSet).
func (e *env) apply(t *testing.T, gvr schema.GroupVersionResource, obj map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(argoNS)
	ri := e.cluster.Dynamic.Resource(gvr).Namespace(argoNS)
	for {
		cur, err := ri.Get(t.Context(), u.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if _, err := ri.Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
				t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		cur.Object["spec"] = obj["spec"]
		_, err = ri.Update(t.Context(), cur, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			t.Fatalf("updating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		return
	}
}

// app reads Application name.
func (e *env) app(t *testing.T, name string) (*unstructured.Unstructured, error) {
	t.Helper()
	return e.apps().Get(t.Context(), name, metav1.GetOptions{})
}

// appState sums up an Application's status for messages and checks.
func appState(u *unstructured.Unstructured) (sync, revision, opPhase string, conditions []string) {
	sync, _, _ = unstructured.NestedString(u.Object, "status", "sync", "status")
	revision, _, _ = unstructured.NestedString(u.Object, "status", "sync", "revision")
	opPhase, _, _ = unstructured.NestedString(u.Object, "status", "operationState", "phase")
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		conditions = append(conditions, fmt.Sprintf("%v: %v", m["type"], m["message"]))
	}
	return
}

// deleteApp removes an Application with its resources (the finalizer).
func (e *env) deleteApp(t *testing.T, name string) {
	err := e.apps().Delete(context.Background(), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting Application %s: %v", name, err)
	}
}

// runLocal is TestMain under -argocd-local.
func runLocal() int {
	ctx := context.Background()
	bins := map[string]string{}
	for _, name := range []string{"etcd", "kube-apiserver", "argocd", "helm"} {
		path, err := testbin.Build(ctx, name, os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		bins[name] = path
	}
	root, err := testbin.Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	strata := filepath.Join(os.TempDir(), fmt.Sprintf("strata-argocd-local-%d", os.Getpid()))
	build := exec.Command("go", "build", "-o", strata, "./cmd/strata")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building strata: %v\n", err)
		return 1
	}
	defer os.Remove(strata)
	e := &env{argocd: bins["argocd"], strata: strata, startedAt: time.Now()}
	shared.env = e
	startCtx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	err = e.start(startCtx, bins["etcd"], bins["kube-apiserver"], bins["helm"])
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting Argo CD and strata: %v\n", err)
		e.stop(true)
		return 1
	}
	fmt.Printf(`Argo CD %s and strata are running (Ctrl-C stops them all).

  export KUBECONFIG=%s
  kubectl -n %s get applications,applicationsets

  git repository (push to it, or point Applications at it):  %s
    its working copy: %s  (commit, then: git push %s main)
  repo-server (plain gRPC):                  %s
  plugin sockets (ARGOCD_PLUGINSOCKFILEPATH): %s
    %s (testdata/plugin.yaml), %s (the built-in Helm plugin), and deploy/cmp's plugin
  plugin generator (ConfigMap %s):  %s
    its answer: %s
  logs: %s

An Application to try (the test plugin, with parameters):
  kubectl apply -f - <<'EOF'
  apiVersion: argoproj.io/v1alpha1
  kind: Application
  metadata: {name: try-strata, namespace: %s}
  spec:
    project: default
    source:
      repoURL: %s
      targetRevision: main
      path: cmp
      plugin: {name: %s, parameters: [{name: greeting, string: hi}]}
    destination: {server: https://kubernetes.default.svc, namespace: default}
    syncPolicy: {automated: {prune: true}}
  EOF
`, e.version, e.cluster.Kubeconfig, argoNS, e.repo.url, e.repo.work, e.repo.bare, e.repoAddr, e.sockDir,
		e2ePlugin, helmPlugin, genConfigMap, e.genURL, e.genSets(), e.logDir, argoNS, e.repo.url, e2ePlugin)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
	fmt.Println("stopping")
	e.stop(false)
	return 0
}
