// Command layersload is a load and fault run of the layers controller (the
// App CR controller, `strata layers controller`) under its shipped memory
// limit (make load-layers; see docs/benchmarks.md). It starts a real
// etcd and kube-apiserver (internal/kube/kubetest) with the CRDs of
// deploy/crds, and the controller as deploy/layers-controller runs it
// (--allowed-namespaces=giantswarm, leader election, STRATA_MEMORY_LIMIT
// set to the Deployment's 512Mi) as a child process; a watchdog samples
// its RssAnon every 5 ms and kills it past the limit, as the kernel
// would. For -duration, normal tenants, each in its own namespace, change
// their Apps' user values (a ConfigMap and a Secret) and their Apps'
// specs, and wait for each change to reach the App's output ConfigMap
// and Secret and its Ready condition; hostile tenants beside them put a
// 960 KB flow list in a userConfig ConfigMap, name another tenant's and
// an unlisted namespace's Secrets, store huge and deeply nested values,
// and churn Apps and ConfigMaps as fast as the API server takes them.
// It prints the normal tenants' operations and errors (the goal is
// none), the hostile tenants' outcomes as their Apps' Ready reasons, and
// the peak memory, and exits 1 when a normal tenant saw an error or the
// controller was killed or exited.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/strata-dev/strata/hack/internal/loadrun"
	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "layersload:", err)
		os.Exit(1)
	}
}

type options struct {
	strata   string
	crds     string
	limit    int64
	duration time.Duration
	tenants  int
	quick    bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("layersload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.strata, "strata", "", "the strata binary (required)")
	fs.StringVar(&o.crds, "crds", "", "the CRDs (default: deploy/crds of the repository the run is in)")
	fs.Int64Var(&o.limit, "limit", 512<<20, "the controller's memory limit, bytes (deploy/layers-controller: 512Mi)")
	fs.DurationVar(&o.duration, "duration", time.Minute, "how long to run")
	fs.IntVar(&o.tenants, "tenants", 6, "normal tenants, each with an App in a namespace of its own")
	fs.BoolVar(&o.quick, "quick", false, "a smoke run: 6 s, 3 normal tenants (overrides -duration and -tenants)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.strata == "":
		return errors.New("-strata is required")
	case o.tenants < 1 || o.tenants > 100:
		return errors.New("-tenants must be 1 to 100")
	case o.limit < 1:
		return errors.New("-limit must be positive")
	}
	if o.quick {
		o.duration, o.tenants = 6*time.Second, 3
	}
	if o.crds == "" {
		root, err := repoRoot()
		if err != nil {
			return err
		}
		o.crds = filepath.Join(root, "deploy", "crds")
	}
	return load(ctx, o, stdout)
}

// repoRoot finds the directory of strata's go.mod above the working
// directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(data), "module github.com/strata-dev/strata\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the strata repository: give -crds")
		}
		dir = parent
	}
}

// The platform's namespaces: the Catalog's (listed in the controller's
// --allowed-namespaces, as deploy/layers-controller lists it) and one
// that is not listed, holding a platform Secret.
const (
	catalogNS  = "giantswarm"
	platformNS = "platform"
)

// opTimeout bounds the wait for one change to reach an App's outputs.
const opTimeout = 60 * time.Second

// k are the run's clients.
type k struct {
	c *kubetest.Cluster
}

func (k *k) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

func (k *k) namespace(name string) error {
	ctx, cancel := k.ctx()
	defer cancel()
	_, err := k.c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return err
}

// applyConfigMap creates or replaces a ConfigMap's values.
func (k *k) applyConfigMap(ns, name, values string) error {
	ctx, cancel := k.ctx()
	defer cancel()
	cms := k.c.Client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"values": values}}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	cm.Data = map[string]string{"values": values}
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// applySecret creates or replaces a Secret's values.
func (k *k) applySecret(ns, name, values string) error {
	ctx, cancel := k.ctx()
	defer cancel()
	secs := k.c.Client.CoreV1().Secrets(ns)
	s, err := secs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = secs.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"values": []byte(values)}}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	s.Data = map[string][]byte{"values": []byte(values)}
	_, err = secs.Update(ctx, s, metav1.UpdateOptions{})
	return err
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}

func (k *k) createCatalog(c *v1alpha1.Catalog) error {
	c.APIVersion, c.Kind = v1alpha1.GroupVersion.String(), "Catalog"
	u, err := toUnstructured(c)
	if err != nil {
		return err
	}
	ctx, cancel := k.ctx()
	defer cancel()
	_, err = k.c.Dynamic.Resource(v1alpha1.CatalogResource).Namespace(c.Namespace).Create(ctx, u, metav1.CreateOptions{})
	return err
}

func (k *k) createApp(a *v1alpha1.App) error {
	a.APIVersion, a.Kind = v1alpha1.GroupVersion.String(), "App"
	u, err := toUnstructured(a)
	if err != nil {
		return err
	}
	ctx, cancel := k.ctx()
	defer cancel()
	_, err = k.c.Dynamic.Resource(v1alpha1.AppResource).Namespace(a.Namespace).Create(ctx, u, metav1.CreateOptions{})
	return err
}

func (k *k) getApp(ns, name string) (*v1alpha1.App, error) {
	ctx, cancel := k.ctx()
	defer cancel()
	u, err := k.c.Dynamic.Resource(v1alpha1.AppResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var a v1alpha1.App
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

// updateApp reads an App, changes its spec with f and writes it back,
// again on a conflict; it returns the generation written.
func (k *k) updateApp(ns, name string, f func(*v1alpha1.AppSpec)) (int64, error) {
	for {
		a, err := k.getApp(ns, name)
		if err != nil {
			return 0, err
		}
		f(&a.Spec)
		u, err := toUnstructured(a)
		if err != nil {
			return 0, err
		}
		ctx, cancel := k.ctx()
		u, err = k.c.Dynamic.Resource(v1alpha1.AppResource).Namespace(ns).Update(ctx, u, metav1.UpdateOptions{})
		cancel()
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return u.GetGeneration(), nil
	}
}

func (k *k) deleteApp(ns, name string) error {
	ctx, cancel := k.ctx()
	defer cancel()
	return k.c.Dynamic.Resource(v1alpha1.AppResource).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
}

// ready returns an App's Ready condition's status and reason, and
// whether it is of the App's current generation.
func ready(a *v1alpha1.App) (status, reason string, current bool) {
	for _, c := range a.Status.Conditions {
		if c.Type == "Ready" {
			return string(c.Status), c.Reason, c.ObservedGeneration == a.Generation && a.Status.ObservedGeneration == a.Generation
		}
	}
	return "", "", false
}

// outputs reads an App's output ConfigMap's and Secret's values.
func (k *k) outputs(ns, app string) (cm, sec map[string]any, err error) {
	ctx, cancel := k.ctx()
	defer cancel()
	c, err := k.c.Client.CoreV1().ConfigMaps(ns).Get(ctx, app+"-chart-values", metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	s, err := k.c.Client.CoreV1().Secrets(ns).Get(ctx, app+"-chart-secrets", metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	if cm, err = document.Parse([]byte(c.Data["values"]), "ConfigMap "+ns+"/"+c.Name); err != nil {
		return nil, nil, err
	}
	if sec, err = document.Parse(s.Data["values"], "Secret "+ns+"/"+s.Name); err != nil {
		return nil, nil, err
	}
	return cm, sec, nil
}

func load(ctx context.Context, o options, stdout io.Writer) error {
	dir, err := os.MkdirTemp("", "layersload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintln(os.Stderr, "layersload: starting etcd and kube-apiserver")
	c, err := kubetest.StartCluster(ctx, kubetest.Options{Dir: filepath.Join(dir, "cluster"), CRDs: []string{o.crds}, BuildOutput: os.Stderr,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	defer c.Stop()
	kc := &k{c: c}
	if err := setup(kc, o.tenants); err != nil {
		return err
	}
	srv, err := loadrun.Start(dir, "controller", o.limit, []string{o.strata, "layers", "controller",
		"--kubeconfig", c.Kubeconfig,
		"--allowed-namespaces=" + catalogNS,
		"--leader-elect", "--leader-election-namespace=" + catalogNS,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--log-format=json"})
	if err != nil {
		return err
	}
	defer srv.Stop(30 * time.Second)
	fmt.Fprintf(os.Stderr, "layersload: the controller runs (log %s); %s of load\n", srv.Log, o.duration)

	runCtx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var (
		wg      sync.WaitGroup
		normal  loadrun.Errors
		hostile loadrun.Tally
		churned atomic.Int64
	)
	for i := range o.tenants {
		wg.Go(func() { tenant(runCtx, kc, i, &normal) })
	}
	wg.Go(func() { flood(runCtx, kc, &hostile) })
	wg.Go(func() { steal(runCtx, kc, &hostile) })
	wg.Go(func() { huge(runCtx, kc, &hostile) })
	for w := range 2 {
		wg.Go(func() { churn(runCtx, kc, w, &churned, &hostile) })
	}
	start := time.Now()
	wg.Wait()
	elapsed := time.Since(start)
	failure := srv.Failure()
	if failure == "" {
		// The controller still serves a normal tenant after the run.
		normal.Done(step(kc, 0, 1_000_000, false))
	}
	failure = srv.Failure()
	srv.Stop(30 * time.Second)

	ok, errs := normal.Counts()
	fmt.Fprintf(stdout, "controller: strata layers controller --allowed-namespaces=%s --leader-elect, STRATA_MEMORY_LIMIT=%d (%d MiB), %s\n",
		catalogNS, o.limit, o.limit>>20, elapsed.Round(time.Second))
	fmt.Fprintf(stdout, "normal tenants: %d (catalog, config, userConfig ConfigMap and Secret, extraConfigs ConfigMap and Secret), changes seen through: %d, errors: %d\n",
		o.tenants, ok, len(errs))
	for i, e := range errs {
		if i == 5 {
			fmt.Fprintf(stdout, "  ... %d more\n", len(errs)-5)
			break
		}
		fmt.Fprintf(stdout, "  %s\n", e)
	}
	fmt.Fprintf(stdout, "hostile tenants, their Apps' Ready condition (status/reason) × times seen:\n%s", hostile.String())
	fmt.Fprintf(stdout, "churn: %d Apps and ConfigMaps created and deleted\n", churned.Load())
	fmt.Fprintf(stdout, "peak RssAnon: %d MiB of %d MiB\n", srv.Peak()>>20, o.limit>>20)
	if failure != "" {
		return fmt.Errorf("the controller %s; its log's end:\n%s", failure, srv.LogTail(20))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d errors seen by normal tenants", len(errs))
	}
	return nil
}

// setup creates the platform's namespaces, the Catalog and the tenants'
// namespaces and objects.
func setup(kc *k, tenants int) error {
	for _, ns := range []string{catalogNS, platformNS, "hostile-flood", "hostile-cross", "hostile-huge", "hostile-churn"} {
		if err := kc.namespace(ns); err != nil {
			return err
		}
	}
	if err := kc.applyConfigMap(catalogNS, "catalog-values", "catalog: giantswarm\nshared:\n  replicas: 2\n  image: registry.example/app\n"); err != nil {
		return err
	}
	if err := kc.createCatalog(&v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Namespace: catalogNS, Name: "giantswarm"},
		Spec: v1alpha1.CatalogSpec{Title: "giantswarm", Config: v1alpha1.CatalogConfig{ConfigMap: v1alpha1.ObjectRef{Name: "catalog-values", Namespace: catalogNS}}}}); err != nil {
		return err
	}
	if err := kc.applySecret(platformNS, "api-key", "apiKey: platform-api-key-value\n"); err != nil {
		return err
	}
	for i := range tenants {
		ns := tenantNS(i)
		if err := kc.namespace(ns); err != nil {
			return err
		}
		for _, f := range []func() error{
			func() error { return kc.applyConfigMap(ns, "config", "config: "+ns+"\n") },
			func() error { return kc.applyConfigMap(ns, "user", "user:\n  round: 0\n") },
			func() error { return kc.applySecret(ns, "user", "token: secret-0\n") },
			func() error { return kc.applyConfigMap(ns, "extra", fmt.Sprintf("extra:\n  tenant: %d\n", i)) },
			func() error { return kc.applySecret(ns, "extra", "password: "+ns+"-password\n") },
		} {
			if err := f(); err != nil {
				return err
			}
		}
	}
	return nil
}

func tenantNS(i int) string { return fmt.Sprintf("tenant-%d", i) }

// newApp is an App of the giantswarm Catalog in ns.
func newApp(ns, name string) *v1alpha1.App {
	return &v1alpha1.App{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AppSpec{Catalog: "giantswarm", CatalogNamespace: catalogNS, Name: "chart", Namespace: ns, Version: "1.0.0"}}
}

// tenant is a normal tenant: it creates its App, then changes its user
// values (every change), its App's spec (every fourth) and waits for each
// change to reach the outputs and the Ready condition.
func tenant(ctx context.Context, kc *k, i int, errs *loadrun.Errors) {
	ns := tenantNS(i)
	a := newApp(ns, "app")
	a.Spec.Config.ConfigMap = v1alpha1.ObjectRef{Name: "config", Namespace: ns}
	a.Spec.UserConfig = v1alpha1.AppConfig{ConfigMap: v1alpha1.ObjectRef{Name: "user", Namespace: ns}, Secret: v1alpha1.ObjectRef{Name: "user", Namespace: ns}}
	a.Spec.ExtraConfigs = []v1alpha1.ExtraConfig{{Kind: "configMap", Name: "extra", Namespace: ns, Priority: 30}, {Kind: "secret", Name: "extra", Namespace: ns, Priority: 30}}
	if err := kc.createApp(a); err != nil {
		errs.Done(fmt.Errorf("%s: creating the App: %w", ns, err))
		return
	}
	errs.Done(wait(kc, ns, i, 0, 1))
	for round := 1; ctx.Err() == nil; round++ {
		errs.Done(step(kc, i, round, round%4 == 0))
	}
}

// step changes tenant i's user values to round (and its App's spec when
// spec is set) and waits for them to reach the outputs.
func step(kc *k, i, round int, spec bool) error {
	ns := tenantNS(i)
	if err := kc.applyConfigMap(ns, "user", fmt.Sprintf("user:\n  round: %d\n", round)); err != nil {
		return fmt.Errorf("%s: round %d: %w", ns, round, err)
	}
	if err := kc.applySecret(ns, "user", fmt.Sprintf("token: secret-%d\n", round)); err != nil {
		return fmt.Errorf("%s: round %d: %w", ns, round, err)
	}
	gen := int64(0)
	if spec {
		var err error
		gen, err = kc.updateApp(ns, "app", func(s *v1alpha1.AppSpec) {
			s.ExtraConfigs[0].Priority = 30 + round%2 // a new generation, the same values
		})
		if err != nil {
			return fmt.Errorf("%s: round %d: updating the App: %w", ns, round, err)
		}
	}
	return wait(kc, ns, i, round, gen)
}

// wait waits until tenant i's outputs hold round and its Ready condition
// is True (ValuesMerged) for generation gen (0: any).
func wait(kc *k, ns string, i, round int, gen int64) error {
	deadline := time.Now().Add(opTimeout)
	var last string
	for time.Now().Before(deadline) {
		last = check(kc, ns, i, round, gen)
		if last == "" {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s: round %d: not seen after %s: %s", ns, round, opTimeout, last)
}

// check says what of round is not in tenant i's outputs yet; "" when all
// is.
func check(kc *k, ns string, i, round int, gen int64) string {
	cm, sec, err := kc.outputs(ns, "app")
	if err != nil {
		return err.Error()
	}
	want := map[string]string{
		"catalog":         "giantswarm",
		"config":          ns,
		"shared.replicas": "2",
		"extra.tenant":    strconv.Itoa(i),
		"user.round":      strconv.Itoa(round),
	}
	for path, v := range want {
		if got := lookup(cm, path); got != v {
			return fmt.Sprintf("the ConfigMap's %s is %q, want %q", path, got, v)
		}
	}
	if got, want := lookup(sec, "token"), fmt.Sprintf("secret-%d", round); got != want {
		return fmt.Sprintf("the Secret's token is %q, want %q", got, want)
	}
	if got := lookup(sec, "password"); got != ns+"-password" {
		return fmt.Sprintf("the Secret's password is %q", got)
	}
	a, err := kc.getApp(ns, "app")
	if err != nil {
		return err.Error()
	}
	status, reason, current := ready(a)
	if status != "True" || reason != "ValuesMerged" || !current || (gen != 0 && a.Generation < gen) {
		return fmt.Sprintf("Ready %s %s (current generation: %v)", status, reason, current)
	}
	return ""
}

// lookup returns the value at a dotted path of m, as text.
func lookup(m map[string]any, path string) string {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = mm[k]
	}
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// observe records the Ready condition of an App of a hostile tenant,
// every half second until ctx ends.
func observe(ctx context.Context, kc *k, ns, name, kind string, t *loadrun.Tally) {
	for ctx.Err() == nil {
		time.Sleep(500 * time.Millisecond)
		a, err := kc.getApp(ns, name)
		if err != nil {
			t.Add(kind, "reading the App: "+err.Error())
			continue
		}
		if status, reason, current := ready(a); current {
			t.Add(kind, status+"/"+reason)
		}
	}
}

// flowList is a YAML flow list of n integers under key flows: 960 KB for
// 480,000 (the input).
func flowList(n, round int) string {
	return "flows: [" + strings.Repeat("1,", n-1) + strconv.Itoa(round) + "]\n"
}

// flood is the hostile tenant of the 960 KB flow list in its userConfig
// ConfigMap, rewritten every second.
func flood(ctx context.Context, kc *k, t *loadrun.Tally) {
	const ns, kind = "hostile-flood", "960 KB flow list"
	if err := kc.applyConfigMap(ns, "flows", flowList(480_000, 0)); err != nil {
		t.Add(kind, "setup: "+err.Error())
		return
	}
	a := newApp(ns, "flood")
	a.Spec.UserConfig.ConfigMap = v1alpha1.ObjectRef{Name: "flows", Namespace: ns}
	if err := kc.createApp(a); err != nil {
		t.Add(kind, "setup: "+err.Error())
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { observe(ctx, kc, ns, "flood", kind, t) })
	for round := 1; ctx.Err() == nil; round++ {
		if err := kc.applyConfigMap(ns, "flows", flowList(480_000, round)); err != nil && ctx.Err() == nil {
			t.Add(kind, "writing: "+err.Error())
		}
		time.Sleep(time.Second)
	}
	wg.Wait()
}

// steal is the hostile tenant naming another tenant's Secret and the
// platform's, its App's spec changed every second.
func steal(ctx context.Context, kc *k, t *loadrun.Tally) {
	const ns, kind = "hostile-cross", "cross-namespace refs"
	a := newApp(ns, "steal")
	a.Spec.UserConfig.Secret = v1alpha1.ObjectRef{Name: "api-key", Namespace: platformNS}
	a.Spec.ExtraConfigs = []v1alpha1.ExtraConfig{{Kind: "secret", Name: "user", Namespace: tenantNS(0), Priority: 120}}
	if err := kc.createApp(a); err != nil {
		t.Add(kind, "setup: "+err.Error())
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { observe(ctx, kc, ns, "steal", kind, t) })
	for round := 1; ctx.Err() == nil; round++ {
		if _, err := kc.updateApp(ns, "steal", func(s *v1alpha1.AppSpec) { s.ExtraConfigs[0].Priority = 100 + round%50 }); err != nil && ctx.Err() == nil {
			t.Add(kind, "updating: "+err.Error())
		}
		time.Sleep(time.Second)
	}
	wg.Wait()
	// Nothing of the other namespaces in the hostile tenant's outputs.
	if _, err := kc.c.Client.CoreV1().Secrets(ns).Get(context.Background(), "steal-chart-secrets", metav1.GetOptions{}); err == nil {
		t.Add(kind, "LEAK: an output Secret was written")
	}
}

// huge is the hostile tenant of huge values: a Secret holding a 1,000,000
// byte string (the API server takes a Secret of at most 1 MiB) and a
// ConfigMap of 100,000 nested lists, rewritten every second.
func huge(ctx context.Context, kc *k, t *loadrun.Tally) {
	const ns, kind = "hostile-huge", "huge and nested values"
	blob := func(round int) string { return "blob: " + strings.Repeat("x", 1_000_000) + strconv.Itoa(round) + "\n" }
	deep := func(round int) string {
		return "deep: " + strings.Repeat("[", 100_000) + strconv.Itoa(round) + strings.Repeat("]", 100_000) + "\n"
	}
	if err := errors.Join(kc.applySecret(ns, "blob", blob(0)), kc.applyConfigMap(ns, "deep", deep(0))); err != nil {
		t.Add(kind, "setup: "+err.Error())
		return
	}
	a := newApp(ns, "huge")
	a.Spec.UserConfig.Secret = v1alpha1.ObjectRef{Name: "blob", Namespace: ns}
	a.Spec.ExtraConfigs = []v1alpha1.ExtraConfig{{Kind: "configMap", Name: "deep", Namespace: ns, Priority: 30}}
	if err := kc.createApp(a); err != nil {
		t.Add(kind, "setup: "+err.Error())
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { observe(ctx, kc, ns, "huge", kind, t) })
	for round := 1; ctx.Err() == nil; round++ {
		if err := errors.Join(kc.applySecret(ns, "blob", blob(round)), kc.applyConfigMap(ns, "deep", deep(round))); err != nil && ctx.Err() == nil {
			t.Add(kind, "writing: "+err.Error())
		}
		time.Sleep(time.Second)
	}
	wg.Wait()
}

// churn creates an App and its ConfigMap and deletes them again, as fast
// as the API server takes it.
func churn(ctx context.Context, kc *k, w int, n *atomic.Int64, t *loadrun.Tally) {
	const ns, kind = "hostile-churn", "churn"
	for i := 0; ctx.Err() == nil; i++ {
		name := fmt.Sprintf("churn-%d-%d", w, i)
		a := newApp(ns, name)
		a.Spec.UserConfig.ConfigMap = v1alpha1.ObjectRef{Name: name, Namespace: ns}
		err := errors.Join(kc.applyConfigMap(ns, name, fmt.Sprintf("n: %d\n", i)), kc.createApp(a), kc.deleteApp(ns, name))
		ctx2, cancel := kc.ctx()
		err = errors.Join(err, kc.c.Client.CoreV1().ConfigMaps(ns).Delete(ctx2, name, metav1.DeleteOptions{}))
		cancel()
		if err != nil && ctx.Err() == nil {
			t.Add(kind, "error: "+err.Error())
			continue
		}
		n.Add(1)
	}
}
