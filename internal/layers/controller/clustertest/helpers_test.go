// Package clustertest_test runs the layers controller against a real
// kube-apiserver and etcd (internal/kube/kubetest): the reconciler, its
// watches, status, Events, leader election, and the RBAC of
// deploy/layers-controller. It is a package of its own so that the unit
// tests of the controller need nothing installed.
package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/layers/controller"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

func TestMain(m *testing.M) {
	// controller-runtime's and client-go's package-level loggers: only
	// their warnings, on stderr. Each Manager logs to its test.
	controller.SetProcessLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(kubetest.Main(m))
}

const crds = "../../../../deploy/crds"

// deadline bounds every wait for the controller: generous, since the
// machine may be busy; nothing asserts how fast it is.
const deadline = 90 * time.Second

type env struct {
	t  testing.TB
	c  *kubetest.Cluster
	cl client.Client
	ns string
}

// setup returns the shared control plane with the CRDs, a client, and a
// fresh namespace ns.
func setup(t testing.TB, ns string) *env {
	t.Helper()
	c := kubetest.Shared(t)
	if err := c.InstallCRDs(t.Context(), crds); err != nil {
		t.Fatal(err)
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, c: c, cl: cl, ns: ns}
	e.namespace(ns)
	return e
}

func (e *env) namespace(name string) {
	e.t.Helper()
	err := e.cl.Create(e.t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
}

func (e *env) create(objs ...client.Object) {
	e.t.Helper()
	for _, o := range objs {
		if err := e.cl.Create(e.t.Context(), o); err != nil {
			e.t.Fatalf("creating %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
		}
	}
}

func (e *env) delete(o client.Object) {
	e.t.Helper()
	if err := e.cl.Delete(e.t.Context(), o); err != nil {
		e.t.Fatalf("deleting %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
	}
}

// update reads o, changes it with f and writes it back.
func (e *env) update(o client.Object, f func()) {
	e.t.Helper()
	ctx := e.t.Context()
	if err := e.cl.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
		e.t.Fatal(err)
	}
	f()
	if err := e.cl.Update(ctx, o); err != nil {
		e.t.Fatalf("updating %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
	}
}

func configMap(ns, name, valuesYAML string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string]string{"values": valuesYAML}}
}

func secret(ns, name, key, valuesYAML string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{key: []byte(valuesYAML)}}
}

func catalog(ns, name, cm string) *v1alpha1.Catalog {
	return &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.CatalogSpec{Title: name, Config: v1alpha1.CatalogConfig{ConfigMap: v1alpha1.ObjectRef{Name: cm, Namespace: ns}}}}
}

func app(ns, name, catalogName string) *v1alpha1.App {
	return &v1alpha1.App{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AppSpec{Catalog: catalogName, CatalogNamespace: ns, Name: "chart", Namespace: "kube-system", Version: "1.0.0"}}
}

// running is a Manager started by a test.
type running struct {
	m      *controller.Manager
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan error
}

// start runs m against the cluster (Config, Logger and Registry set here)
// until stop or the end of the test.
func (e *env) start(m controller.Manager) *running {
	e.t.Helper()
	if m.Config == nil {
		m.Config = e.c.Config
	}
	if m.Logger == nil {
		w := &testWriter{t: e.t}
		e.t.Cleanup(w.close)
		m.Logger = slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	reg := prometheus.NewRegistry()
	if m.Registry == nil {
		m.Registry = reg
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{m: &m, reg: reg, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- m.Run(ctx) }()
	e.t.Cleanup(func() { r.stop(e.t) })
	return r
}

// testWriter writes to the test's output until the test ends: a few of
// controller-runtime's goroutines log after the Manager has returned.
type testWriter struct {
	mu     sync.Mutex
	t      testing.TB
	closed bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Output().Write(p)
	}
	return len(p), nil
}

func (w *testWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}

// stop ends the Manager and checks that it stopped cleanly.
func (r *running) stop(t testing.TB) {
	t.Helper()
	if r.done == nil {
		return
	}
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Manager.Run: %v", err)
		}
	case <-time.After(deadline):
		t.Errorf("Manager.Run did not return %v after its context ended", deadline)
	}
	r.done = nil
}

// counter sums the series of a metric family in reg.
func counter(t testing.TB, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

// output reads an App's output ConfigMap and Secret; missing ones are nil.
func (e *env) output(appName string) (*corev1.ConfigMap, *corev1.Secret) {
	e.t.Helper()
	ctx := e.t.Context()
	cm := &corev1.ConfigMap{}
	if err := e.cl.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: appName + "-chart-values"}, cm); err != nil {
		if !apierrors.IsNotFound(err) {
			e.t.Fatal(err)
		}
		cm = nil
	}
	sec := &corev1.Secret{}
	if err := e.cl.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: appName + "-chart-secrets"}, sec); err != nil {
		if !apierrors.IsNotFound(err) {
			e.t.Fatal(err)
		}
		sec = nil
	}
	return cm, sec
}

func parse(t testing.TB, text, what string) map[string]any {
	t.Helper()
	m, err := document.Parse([]byte(text), what)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return m
}

// waitValues waits until the App's outputs hold wantCM and wantSecret
// (YAML).
func (e *env) waitValues(appName, wantCM, wantSecret string) (*corev1.ConfigMap, *corev1.Secret) {
	e.t.Helper()
	wcm, wsec := parse(e.t, wantCM, "want ConfigMap"), parse(e.t, wantSecret, "want Secret")
	var cm *corev1.ConfigMap
	var sec *corev1.Secret
	eventually.Within(e.t, deadline, "App "+appName+"'s outputs hold the merged values", func() (bool, string) {
		cm, sec = e.output(appName)
		if cm == nil || sec == nil {
			return false, fmt.Sprintf("ConfigMap %v, Secret %v", cm != nil, sec != nil)
		}
		gcm, err1 := document.Parse([]byte(cm.Data["values"]), "ConfigMap")
		gsec, err2 := document.Parse(sec.Data["values"], "Secret")
		if err := errors.Join(err1, err2); err != nil {
			return false, err.Error()
		}
		d := cmp.Diff(wcm, gcm) + cmp.Diff(wsec, gsec)
		return d == "", "(-want +got):\n" + d
	})
	return cm, sec
}

// ready returns the App and its Ready condition.
func (e *env) ready(appName string) (*v1alpha1.App, *metav1.Condition) {
	e.t.Helper()
	a := &v1alpha1.App{}
	if err := e.cl.Get(e.t.Context(), client.ObjectKey{Namespace: e.ns, Name: appName}, a); err != nil {
		e.t.Fatal(err)
	}
	return a, meta.FindStatusCondition(a.Status.Conditions, controller.ConditionReady)
}

// waitReady waits until the App's Ready condition has status and reason
// for its current generation, and returns it.
func (e *env) waitReady(appName string, status metav1.ConditionStatus, reason string) (*v1alpha1.App, *metav1.Condition) {
	e.t.Helper()
	return e.waitReadyMessage(appName, status, reason, "")
}

// waitReadyMessage is waitReady for a condition whose message also
// contains msg: a layer created just before its App may first be missing
// from the controller's cache, a failure of the same reason.
func (e *env) waitReadyMessage(appName string, status metav1.ConditionStatus, reason, msg string) (*v1alpha1.App, *metav1.Condition) {
	e.t.Helper()
	var a *v1alpha1.App
	var c *metav1.Condition
	eventually.Within(e.t, deadline, fmt.Sprintf("App %s is Ready=%s (%s) %q", appName, status, reason, msg), func() (bool, string) {
		a, c = e.ready(appName)
		if c == nil {
			return false, "no Ready condition"
		}
		ok := c.Status == status && c.Reason == reason && strings.Contains(c.Message, msg) &&
			c.ObservedGeneration == a.Generation && a.Status.ObservedGeneration == a.Generation
		return ok, fmt.Sprintf("%s %s (generation %d, observed %d): %s", c.Status, c.Reason, a.Generation, c.ObservedGeneration, c.Message)
	})
	return a, c
}

// waitEvent waits for an Event of type and reason about the App, whose
// note contains note, and returns it.
func (e *env) waitEvent(appName, typ, reason, note string) *eventsv1.Event {
	e.t.Helper()
	var found *eventsv1.Event
	eventually.Within(e.t, deadline, fmt.Sprintf("a %s Event %s about App %s", typ, reason, appName), func() (bool, string) {
		var list eventsv1.EventList
		if err := e.cl.List(e.t.Context(), &list, client.InNamespace(e.ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for i, ev := range list.Items {
			if ev.Regarding.Kind != "App" || ev.Regarding.Name != appName {
				continue
			}
			seen = append(seen, ev.Type+" "+ev.Reason+": "+ev.Note)
			if ev.Type == typ && ev.Reason == reason && strings.Contains(ev.Note, note) {
				found = &list.Items[i]
				return true, ""
			}
		}
		return false, fmt.Sprintf("%q", seen)
	})
	return found
}

// impersonate returns a copy of cfg acting as user.
func impersonate(cfg *rest.Config, user string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user}
	return c
}
