// Package clustertest_test runs the kubernetes bindings' ClusterSource
// against a real kube-apiserver and etcd (internal/kube/kubetest):
// Synchronization and events through server-side selectors, namespaces
// that come and go, a kind installed after the binding started, and what
// keepFullObjectsInMemory: false keeps. It is a package of its own so that
// kubebind's unit tests need nothing installed.
package clustertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/kubebind"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
)

// env is one test's source over the shared control plane, and the events
// of the monitors it started.
type env struct {
	t      *testing.T
	c      *kubetest.Cluster
	src    *kubebind.ClusterSource
	events chan string

	mu   sync.Mutex
	errs []string
}

func setup(t *testing.T) *env {
	t.Helper()
	c := kubetest.Shared(t)
	src, err := kubebind.NewClusterSource(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, c: c, src: src, events: make(chan string, 1000)}
	src.RetryMin, src.RetryMax = 20*time.Millisecond, 200*time.Millisecond
	src.OnError = func(err error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.errs = append(e.errs, err.Error())
	}
	return e
}

// start starts a monitor of the one binding of a hook config (YAML) and
// returns it with its Synchronization, formatted.
func (e *env) start(config string) (*kubebind.Monitor, string) {
	e.t.Helper()
	cfg, err := hook.ParseConfig([]byte(config), hook.Global, "h")
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	m := kubebind.NewMonitor(cfg.Kubernetes[0], e.src)
	sync, err := m.Start(ctx, func(ev kubebind.Event) {
		e.events <- string(ev.Context.WatchEvent) + " " + results(ev.Context.Objects)
	})
	if err != nil {
		e.t.Fatalf("Start: %v", err)
	}
	return m, results(sync.Objects)
}

// next returns the next event of the monitors.
func (e *env) next() string {
	e.t.Helper()
	select {
	case ev := <-e.events:
		return ev
	case <-time.After(eventually.DefaultTimeout):
		e.t.Fatalf("no event after %v; errors reported: %q", eventually.DefaultTimeout, e.reported())
		return ""
	}
}

func (e *env) expect(want string) {
	e.t.Helper()
	if got := e.next(); got != want {
		e.t.Fatalf("event %q, want %q", got, want)
	}
}

func (e *env) reported() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.errs...)
}

// results formats objects' filter results (or names, without a filter).
func results(objs []hook.ObjectResult) string {
	parts := make([]string, 0, len(objs))
	for _, o := range objs {
		if o.FilterResult != nil {
			parts = append(parts, string(o.FilterResult))
			continue
		}
		var v struct {
			Metadata struct{ Namespace, Name string }
		}
		_ = json.Unmarshal(o.Object, &v)
		parts = append(parts, v.Metadata.Namespace+"/"+v.Metadata.Name)
	}
	return strings.Join(parts, " ")
}

// apply applies a manifest with server-side apply (fields left out are
// removed, labels included).
func (e *env) apply(gvr schema.GroupVersionResource, manifest string) {
	e.t.Helper()
	var u unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		e.t.Fatal(err)
	}
	ri := e.c.Dynamic.Resource(gvr)
	var err error
	if ns := u.GetNamespace(); ns != "" {
		_, err = ri.Namespace(ns).Apply(context.Background(), u.GetName(), &u, metav1.ApplyOptions{FieldManager: "test", Force: true})
	} else {
		_, err = ri.Apply(context.Background(), u.GetName(), &u, metav1.ApplyOptions{FieldManager: "test", Force: true})
	}
	if err != nil {
		e.t.Fatalf("applying %s: %v", manifest, err)
	}
}

// applyB is apply for a benchmark.
func (e *env) applyB(b *testing.B, gvr schema.GroupVersionResource, manifest string) {
	b.Helper()
	var u unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		b.Fatal(err)
	}
	_, err := e.c.Dynamic.Resource(gvr).Namespace(u.GetNamespace()).Apply(context.Background(), u.GetName(), &u, metav1.ApplyOptions{FieldManager: "test", Force: true})
	if err != nil {
		b.Fatalf("applying %s: %v", manifest, err)
	}
}

func (e *env) delete(gvr schema.GroupVersionResource, ns, name string) {
	e.t.Helper()
	if err := e.c.Dynamic.Resource(gvr).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("deleting %s/%s: %v", ns, name, err)
	}
}

// unique returns a name no earlier run of the test (-count) used.
func unique(prefix string) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := []byte(prefix)
	for range 6 {
		b = append(b, letters[rand.IntN(len(letters))])
	}
	return string(b)
}

func (e *env) namespace(name string, labels string) {
	e.t.Helper()
	e.apply(namespaces, fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {%s}}\n", name, labels))
}

// cm is a ConfigMap with data {v: v}.
func cm(ns, name, labels, v string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s, labels: {%s}}\ndata: {v: '%s'}\n", name, ns, labels, v)
}

const filter = `{n: (.metadata.namespace + "/" + .metadata.name), v: .data.v}`

func binding(extra string) string {
	return fmt.Sprintf("configVersion: v1\nkubernetes:\n- name: b\n  apiVersion: v1\n  kind: ConfigMap\n  jqFilter: '%s'\n%s", filter, extra)
}

func res(ns, name, v string) string {
	return fmt.Sprintf(`{"n":"%s/%s","v":"%s"}`, ns, name, v)
}

// TestSelectors: each selector picks the objects on the API server; the
// Synchronization has the objects that exist, then objects created,
// changed and deleted make Added, Modified and Deleted events of the
// selected objects only.
func TestSelectors(t *testing.T) {
	e := setup(t)
	ns, other := unique("kb-sel-"), unique("kb-other-")
	e.namespace(ns, "")
	e.namespace(other, "")
	e.apply(configMaps, cm(ns, "a", "app: web, tier: x", "a1"))
	e.apply(configMaps, cm(ns, "b", "app: db", "b1"))
	e.apply(configMaps, cm(other, "a", "app: web, tier: x", "oa1"))

	t.Run("labelSelector", func(t *testing.T) {
		e.t = t
		_, sync := e.start(binding(fmt.Sprintf(`  namespace: {nameSelector: {matchNames: [%s, %s]}}
  labelSelector:
    matchLabels: {app: web}
    matchExpressions: [{key: tier, operator: In, values: [x, w]}]
`, ns, other)))
		if want := res(other, "a", "oa1") + " " + res(ns, "a", "a1"); sync != want { // by namespace
			t.Fatalf("Synchronization %s, want %s", sync, want)
		}
		e.apply(configMaps, cm(ns, "c", "app: web, tier: w", "c1"))
		e.expect("Added " + res(ns, "c", "c1"))
		e.apply(configMaps, cm(ns, "b", "app: db, tier: x", "b2")) // not selected
		e.apply(configMaps, cm(ns, "c", "app: web, tier: w", "c2"))
		e.expect("Modified " + res(ns, "c", "c2"))
		e.apply(configMaps, cm(ns, "c", "app: web, tier: z", "c2")) // leaves the selection
		e.expect("Deleted " + res(ns, "c", "c2"))
		e.apply(configMaps, cm(ns, "c", "app: web, tier: x", "c3"))
		e.expect("Added " + res(ns, "c", "c3"))
		e.delete(configMaps, ns, "c")
		e.expect("Deleted " + res(ns, "c", "c3"))
	})
	t.Run("fieldSelector", func(t *testing.T) {
		e.t = t
		_, sync := e.start(binding(fmt.Sprintf("  fieldSelector: {matchExpressions: [{field: metadata.namespace, operator: Equals, value: %s}, {field: metadata.name, operator: NotEquals, value: b}]}\n", ns)))
		if want := res(ns, "a", "a1"); sync != want {
			t.Fatalf("Synchronization %s, want %s", sync, want)
		}
		e.apply(configMaps, cm(ns, "b", "app: db", "b3")) // not selected
		e.apply(configMaps, cm(ns, "d", "", "d1"))
		e.expect("Added " + res(ns, "d", "d1"))
		e.delete(configMaps, ns, "d")
		e.expect("Deleted " + res(ns, "d", "d1"))
	})
	t.Run("nameSelector", func(t *testing.T) {
		e.t = t
		_, sync := e.start(binding(fmt.Sprintf("  nameSelector: {matchNames: [a, e]}\n  namespace: {nameSelector: {matchNames: [%s]}}\n", ns)))
		if want := res(ns, "a", "a1"); sync != want {
			t.Fatalf("Synchronization %s, want %s", sync, want)
		}
		e.apply(configMaps, cm(ns, "f", "", "f1")) // not selected
		e.apply(configMaps, cm(ns, "e", "", "e1"))
		e.expect("Added " + res(ns, "e", "e1"))
		e.apply(configMaps, cm(ns, "a", "app: web, tier: x", "a2"))
		e.expect("Modified " + res(ns, "a", "a2"))
		e.delete(configMaps, ns, "e")
		e.expect("Deleted " + res(ns, "e", "e1"))
	})
	if errs := e.reported(); len(errs) > 0 {
		t.Errorf("errors reported: %q", errs)
	}
}

// TestNamespaceLabelSelector: namespaces that come to match (created
// later, or labelled) bring their objects as Added events; one that stops
// matching takes them away as Deleted events.
func TestNamespaceLabelSelector(t *testing.T) {
	e := setup(t)
	team := unique("t")
	ns1, ns2, ns3 := unique("kb-ns1-"), unique("kb-ns2-"), unique("kb-ns3-")
	e.namespace(ns1, "team: "+team)
	e.namespace(ns2, "")
	e.apply(configMaps, cm(ns1, "a", "", "1"))
	e.apply(configMaps, cm(ns2, "a", "", "2"))
	_, sync := e.start(binding(fmt.Sprintf("  namespace: {labelSelector: {matchLabels: {team: %s}}}\n", team)))
	if want := res(ns1, "a", "1"); sync != want {
		t.Fatalf("Synchronization %s, want %s", sync, want)
	}
	e.namespace(ns2, "team: "+team) // comes to match
	e.expect("Added " + res(ns2, "a", "2"))
	e.namespace(ns3, "team: "+team) // created later
	e.apply(configMaps, cm(ns3, "b", "", "3"))
	e.expect("Added " + res(ns3, "b", "3"))
	e.namespace(ns1, "") // stops matching
	e.expect("Deleted " + res(ns1, "a", "1"))
	e.apply(configMaps, cm(ns1, "a", "", "1b")) // no longer watched
	e.apply(configMaps, cm(ns2, "a", "", "2b"))
	e.expect("Modified " + res(ns2, "a", "2b"))
}

// TestUnchangedFilterResult: a change the jqFilter does not see makes no
// event; the next change it sees does.
func TestUnchangedFilterResult(t *testing.T) {
	e := setup(t)
	ns := unique("kb-same-")
	e.namespace(ns, "")
	e.apply(configMaps, cm(ns, "a", "", "1"))
	_, sync := e.start(binding(fmt.Sprintf("  namespace: {nameSelector: {matchNames: [%s]}}\n", ns)))
	if want := res(ns, "a", "1"); sync != want {
		t.Fatalf("Synchronization %s, want %s", sync, want)
	}
	// An annotation and another data key: a new resourceVersion, the
	// same filter result.
	e.apply(configMaps, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: %s, annotations: {note: changed}}\ndata: {v: '1', other: z}\n", ns))
	e.apply(configMaps, cm(ns, "a", "", "2"))
	e.expect("Modified " + res(ns, "a", "2"))
}

// TestKindInstalledLater: a binding on a kind the API server does not
// serve yet starts with no objects and is reported; once the CRD is
// installed, its objects come as Added events.
func TestKindInstalledLater(t *testing.T) {
	e := setup(t)
	suffix := unique("")
	kind, plural, group := "Widget"+suffix, "widgets"+suffix, "kbtest.strata.dev"
	ns := unique("kb-crd-")
	e.namespace(ns, "")
	m, sync := e.start(fmt.Sprintf("configVersion: v1\nkubernetes:\n- name: w\n  apiVersion: %s/v1\n  kind: %s\n  jqFilter: .spec.size\n", group, kind))
	if sync != "" {
		t.Fatalf("Synchronization %q, want no objects", sync)
	}
	if got, want := e.src.Stats().Waiting, []string{"w: " + group + "/v1 " + kind}; !cmp.Equal(got, want) {
		t.Errorf("Stats().Waiting = %q, want %q", got, want)
	}
	if errs := e.reported(); len(errs) != 1 || !strings.Contains(errs[0], kind) {
		t.Errorf("errors reported: %q, want one naming %s", errs, kind)
	}
	crd := fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[2]s.%[3]s}
spec:
  group: %[3]s
  scope: Namespaced
  names: {kind: %[1]s, plural: %[2]s, singular: %[4]s, listKind: %[1]sList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {size: {type: integer}}}
`, kind, plural, group, strings.ToLower(kind))
	path := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(path, []byte(crd), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.c.InstallCRDs(t.Context(), path); err != nil {
		t.Fatal(err)
	}
	widgets := schema.GroupVersionResource{Group: group, Version: "v1", Resource: plural}
	e.apply(widgets, fmt.Sprintf("apiVersion: %s/v1\nkind: %s\nmetadata: {name: w1, namespace: %s}\nspec: {size: 3}\n", group, kind, ns))
	e.expect("Added 3")
	e.apply(widgets, fmt.Sprintf("apiVersion: %s/v1\nkind: %s\nmetadata: {name: w1, namespace: %s}\nspec: {size: 4}\n", group, kind, ns))
	e.expect("Modified 4")
	if got := results(m.Snapshot()); got != "4" {
		t.Errorf("snapshot %q, want 4", got)
	}
	if got := e.src.Stats().Waiting; len(got) != 0 {
		t.Errorf("Stats().Waiting = %q after the CRD was installed", got)
	}
}

// TestKeepFullObjectsInMemory: with false, neither the source nor the
// snapshot keeps the objects, only their filter results; with true, the
// source keeps each object once, shared by the bindings that ask the same.
func TestKeepFullObjectsInMemory(t *testing.T) {
	const n, size = 5, 200 << 10
	e := setup(t)
	ns := unique("kb-mem-")
	e.namespace(ns, "")
	big := strings.Repeat("x", size)
	for i := range n {
		e.apply(configMaps, cm(ns, fmt.Sprintf("big%d", i), "", big))
	}
	slim := fmt.Sprintf("configVersion: v1\nkubernetes:\n- name: b\n  kind: ConfigMap\n  keepFullObjectsInMemory: false\n  jqFilter: .metadata.name\n  namespace: {nameSelector: {matchNames: [%s]}}\n", ns)
	m, sync := e.start(slim)
	if want := `"big0" "big1" "big2" "big3" "big4"`; sync != want {
		t.Fatalf("Synchronization %s, want %s", sync, want)
	}
	for _, o := range m.Snapshot() {
		if o.Object != nil {
			t.Errorf("snapshot keeps the object %s", o.FilterResult)
		}
	}
	if st := e.src.Stats(); st.Watches != 1 || st.Objects != n || st.KeptObjects != 0 || st.KeptBytes != 0 {
		t.Errorf("Stats() = %+v, want 1 watch knowing %d objects and keeping none", st, n)
	}
	// Two more bindings keeping full objects, on the same query: one more
	// watch, whose objects both share.
	full := strings.Replace(slim, "keepFullObjectsInMemory: false", "keepFullObjectsInMemory: true", 1)
	m1, _ := e.start(full)
	m2, _ := e.start(full)
	st := e.src.Stats()
	if st.Watches != 2 || st.Objects != 2*n || st.KeptObjects != n || st.KeptBytes < n*size {
		t.Errorf("Stats() = %+v, want 2 watches, %d objects known, %d kept (at least %d bytes)", st, 2*n, n, n*size)
	}
	for _, mm := range []*kubebind.Monitor{m1, m2} {
		snap := mm.Snapshot()
		if len(snap) != n || len(snap[0].Object) < size {
			t.Errorf("a keepFullObjectsInMemory binding's snapshot has %d objects (first %d bytes), want %d whole", len(snap), len(snap[0].Object), n)
		}
	}
	// Changes reach all three.
	e.apply(configMaps, cm(ns, "new", "", "x"))
	got := []string{e.next(), e.next(), e.next()}
	for _, g := range got {
		if g != `Added "new"` {
			t.Errorf("events %q, want Added \"new\" for each binding", got)
		}
	}
}

// TestKindNames: as in shell-operator, kind may be the kind, the resource
// name or a short name, in any case, with or without apiVersion.
func TestKindNames(t *testing.T) {
	e := setup(t)
	ns := unique("kb-kind-")
	e.namespace(ns, "")
	e.apply(configMaps, cm(ns, "a", "", "1"))
	for _, k := range []string{"apiVersion: v1\n  kind: ConfigMap", "kind: configmaps", "kind: cm", "apiVersion: v1\n  kind: configmap", "kind: CONFIGMAP"} {
		t.Run(k, func(t *testing.T) {
			e.t = t
			_, sync := e.start(fmt.Sprintf("configVersion: v1\nkubernetes:\n- name: b\n  %s\n  jqFilter: %q\n  namespace: {nameSelector: {matchNames: [%s]}}\n", k, filter, ns))
			if want := res(ns, "a", "1"); sync != want {
				t.Errorf("Synchronization %s, want %s", sync, want)
			}
		})
	}
	if w := e.src.Waiting(); len(w) != 0 {
		t.Errorf("Waiting() = %q", w)
	}
}
