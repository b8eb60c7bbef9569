// Package clustertest tests the kubernetes patch applier against a real
// kube-apiserver (internal/kube/kubetest).
package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/kubepatch"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

var widgets = schema.GroupVersionResource{Group: "kubepatch.strata.test", Version: "v1", Resource: "widgets"}

type env struct {
	t   *testing.T
	ctx context.Context
	c   *kubetest.Cluster
	ns  string
	a   *kubepatch.Applier
}

func setup(t *testing.T) *env {
	t.Helper()
	c := kubetest.Shared(t)
	ctx := t.Context()
	if err := c.InstallCRDs(ctx, "testdata/widgets.yaml"); err != nil {
		t.Fatal(err)
	}
	ns := fmt.Sprintf("kp-%s-%d", strings.ToLower(t.Name()), time.Now().UnixNano()%100000)
	if len(ns) > 63 {
		ns = ns[len(ns)-63:]
	}
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a, err := kubepatch.New(c.Config, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, c: c, ns: ns, a: a}
}

// apply parses a patch file (the namespace written NS) and applies it.
func (e *env) apply(text string) error {
	e.t.Helper()
	ops, err := hook.ParseKubernetesPatch([]byte(strings.ReplaceAll(text, "NS", e.ns)), "$KUBERNETES_PATCH_PATH")
	if err != nil {
		e.t.Fatalf("parsing the patch: %v", err)
	}
	return e.a.Apply(e.ctx, "test-hook", ops)
}

func (e *env) mustApply(text string) {
	e.t.Helper()
	if err := e.apply(text); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) cm(name string) (*corev1.ConfigMap, error) {
	return e.c.Client.CoreV1().ConfigMaps(e.ns).Get(e.ctx, name, metav1.GetOptions{})
}

func (e *env) data(name string) map[string]string {
	e.t.Helper()
	cm, err := e.cm(name)
	if err != nil {
		e.t.Fatal(err)
	}
	return cm.Data
}

func (e *env) widget(name string) *unstructured.Unstructured {
	e.t.Helper()
	w, err := e.c.Dynamic.Resource(widgets).Namespace(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

func TestCreateOperations(t *testing.T) {
	e := setup(t)
	e.mustApply(`{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"NS"},"data":{"x":"1"}}}`)
	if d := cmp.Diff(map[string]string{"x": "1"}, e.data("a")); d != "" {
		t.Errorf("Create (-want +got):\n%s", d)
	}
	err := e.apply(`{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"NS"}}}`)
	if !apierrors.IsAlreadyExists(err) || !strings.Contains(err.Error(), "operation 0 (Create v1/ConfigMap "+e.ns+"/a, line 1): ") {
		t.Errorf("Create of an existing object: %v", err)
	}
	e.mustApply(`{"operation":"CreateIfNotExists","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"NS"},"data":{"x":"other"}}}`)
	if d := cmp.Diff(map[string]string{"x": "1"}, e.data("a")); d != "" {
		t.Errorf("CreateIfNotExists changed the existing object (-want +got):\n%s", d)
	}
	e.mustApply(`
operation: CreateOrUpdate
object:
  apiVersion: v1
  kind: ConfigMap
  metadata: {name: a, namespace: NS}
  data: {x: "2"}
---
operation: CreateOrUpdate
object: |
  apiVersion: v1
  kind: ConfigMap
  metadata: {name: b, namespace: NS}
  data: {y: "1"}
`)
	if d := cmp.Diff(map[string]string{"x": "2"}, e.data("a")); d != "" {
		t.Errorf("CreateOrUpdate of an existing object (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"y": "1"}, e.data("b")); d != "" {
		t.Errorf("CreateOrUpdate of a new object (-want +got):\n%s", d)
	}
	// Cluster-scoped, and a kind given by its lower-case name.
	e.mustApply(`{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"NS-extra","labels":{"made-by":"hook"}}}}`)
	n, err := e.c.Client.CoreV1().Namespaces().Get(e.ctx, e.ns+"-extra", metav1.GetOptions{})
	if err != nil || n.Labels["made-by"] != "hook" {
		t.Errorf("CreateOrUpdate of a Namespace: %v %v", n, err)
	}
}

func TestPatchOperations(t *testing.T) {
	e := setup(t)
	e.mustApply(`{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"NS"},"data":{"x":"1"}}}`)
	e.mustApply(`{"operation":"MergePatch","apiVersion":"v1","kind":"ConfigMap","namespace":"NS","name":"a","mergePatch":{"data":{"y":"merged"}}}
{"operation":"JSONPatch","kind":"ConfigMap","namespace":"NS","name":"a","jsonPatch":[{"op":"replace","path":"/data/x","value":"json"}]}
{"operation":"JQPatch","kind":"configmap","namespace":"NS","name":"a","jqFilter":".data.z = \"jq\" | .metadata.labels.n = (.data | length | tostring)"}
`)
	if d := cmp.Diff(map[string]string{"x": "json", "y": "merged", "z": "jq"}, e.data("a")); d != "" {
		t.Errorf("patches (-want +got):\n%s", d)
	}
	cm, _ := e.cm("a")
	if cm.Labels["n"] != "3" {
		t.Errorf("JQPatch's label = %q; want 3 (the keys of data after the program's first change)", cm.Labels["n"])
	}
	// A JQPatch that changes nothing writes nothing.
	rv := cm.ResourceVersion
	e.mustApply(`{"operation":"JQPatch","kind":"ConfigMap","namespace":"NS","name":"a","jqFilter":"."}`)
	if cm, _ := e.cm("a"); cm.ResourceVersion != rv {
		t.Errorf("a no-op JQPatch wrote the object (resourceVersion %s → %s)", rv, cm.ResourceVersion)
	}

	// ignoreMissingObject: a patch of a missing object is a success...
	e.mustApply(`{"operation":"MergePatch","kind":"ConfigMap","namespace":"NS","name":"missing","mergePatch":{"data":{"a":"b"}},"ignoreMissingObject":true}
{"operation":"JSONPatch","kind":"ConfigMap","namespace":"NS","name":"missing","jsonPatch":[{"op":"add","path":"/data","value":{}}],"ignoreMissingObject":true}
{"operation":"JQPatch","kind":"ConfigMap","namespace":"NS","name":"missing","jqFilter":".","ignoreMissingObject":true}
`)
	// ...and without it an error naming the operation; the others still apply.
	err := e.apply(`{"operation":"MergePatch","kind":"ConfigMap","namespace":"NS","name":"a","mergePatch":{"data":{"w":"1"}}}
{"operation":"MergePatch","kind":"ConfigMap","namespace":"NS","name":"missing","mergePatch":{"data":{"a":"b"}}}
{"operation":"JQPatch","kind":"ConfigMap","namespace":"NS","name":"missing","jqFilter":"."}
{"operation":"MergePatch","kind":"ConfigMap","namespace":"NS","name":"a","mergePatch":{"data":{"v":"1"}}}
`)
	for _, want := range []string{
		"operation 1 (MergePatch ConfigMap " + e.ns + "/missing, line 2): ",
		"operation 2 (JQPatch ConfigMap " + e.ns + "/missing, line 3): ",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("patches of a missing object: error %v; want it to contain %q", err, want)
		}
	}
	if !apierrors.IsNotFound(err) {
		t.Errorf("error %v is not NotFound", err)
	}
	if d := e.data("a"); d["w"] != "1" || d["v"] != "1" {
		t.Errorf("the good operations around the failed ones were not applied: %v", d)
	}
}

func TestSubresourceStatus(t *testing.T) {
	e := setup(t)
	e.mustApply(`{"operation":"Create","object":{"apiVersion":"kubepatch.strata.test/v1","kind":"Widget","metadata":{"name":"w","namespace":"NS"},"spec":{"size":1}}}`)
	// Through the main resource, status is not written...
	e.mustApply(`{"operation":"MergePatch","apiVersion":"kubepatch.strata.test/v1","kind":"Widget","namespace":"NS","name":"w","mergePatch":{"spec":{"size":2},"status":{"ready":"main"}}}`)
	w := e.widget("w")
	if size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size"); size != 2 {
		t.Errorf("spec.size = %d; want 2", size)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(w.Object, "status"); found {
		t.Errorf("status written through the main resource: %v", w.Object["status"])
	}
	// ...through subresource status it is, and spec is not.
	e.mustApply(`{"operation":"MergePatch","apiVersion":"kubepatch.strata.test/v1","kind":"Widget","namespace":"NS","name":"w","subresource":"status","mergePatch":{"spec":{"size":3},"status":{"ready":"yes"}}}
{"operation":"JQPatch","apiVersion":"kubepatch.strata.test/v1","kind":"Widget","namespace":"NS","name":"w","subresource":"/status","jqFilter":".status.phase = \"Running\""}
{"operation":"JSONPatch","apiVersion":"kubepatch.strata.test/v1","kind":"Widget","namespace":"NS","name":"w","subresource":"status","jsonPatch":[{"op":"add","path":"/status/count","value":7}]}
`)
	w = e.widget("w")
	want := map[string]any{"ready": "yes", "phase": "Running", "count": int64(7)}
	if d := cmp.Diff(want, w.Object["status"]); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	if size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size"); size != 2 {
		t.Errorf("spec.size = %d after the status patches; want 2", size)
	}
	// A subresource the resource does not have is refused before anything
	// is applied.
	err := e.apply(`{"operation":"MergePatch","kind":"ConfigMap","namespace":"NS","name":"x","subresource":"status","mergePatch":{"a":1}}`)
	if err == nil || !strings.Contains(err.Error(), `operation 0 (MergePatch ConfigMap `+e.ns+`/x subresource status, line 1): subresource: configmaps has no subresource "status"`) {
		t.Errorf("unknown subresource: %v", err)
	}
}

// finalizers reads a ConfigMap's finalizers and whether it is being
// deleted; gone when it does not exist.
func (e *env) finalizers(name string) (fin []string, deleting, gone bool) {
	cm, err := e.cm(name)
	if apierrors.IsNotFound(err) {
		return nil, false, true
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return cm.Finalizers, cm.DeletionTimestamp != nil, false
}

// release removes a ConfigMap's finalizers, as the garbage collector does
// once it has dealt with the dependents (kubetest runs no controllers).
func (e *env) release(name string) {
	e.t.Helper()
	_, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Patch(e.ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
}

func TestDeleteOperations(t *testing.T) {
	e := setup(t)
	for _, n := range []string{"fg", "bg", "orphan"} {
		e.mustApply(`{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + n + `","namespace":"NS"}}}`)
	}
	// DeleteInBackground: gone at once; its dependents are the garbage
	// collector's business.
	e.mustApply(`{"operation":"DeleteInBackground","kind":"ConfigMap","namespace":"NS","name":"bg"}`)
	if _, _, gone := e.finalizers("bg"); !gone {
		t.Error("DeleteInBackground: the object is still there")
	}
	// DeleteNonCascading: orphan propagation — the API server leaves the
	// object to the garbage collector with the orphan finalizer.
	e.mustApply(`{"operation":"DeleteNonCascading","kind":"ConfigMap","namespace":"NS","name":"orphan"}`)
	if fin, deleting, _ := e.finalizers("orphan"); !deleting || !slices.Equal(fin, []string{metav1.FinalizerOrphanDependents}) {
		t.Errorf("DeleteNonCascading: finalizers %v, deleting %v; want [orphan], true", fin, deleting)
	}
	e.release("orphan")
	// Delete: foreground propagation, and the operation waits until the
	// object is gone.
	done := make(chan error, 1)
	go func() { done <- e.apply(`{"operation":"Delete","kind":"ConfigMap","namespace":"NS","name":"fg"}`) }()
	eventually.True(t, "the object has the foregroundDeletion finalizer", func() (bool, string) {
		fin, deleting, gone := e.finalizers("fg")
		return deleting && slices.Equal(fin, []string{metav1.FinalizerDeleteDependents}), fmt.Sprintf("finalizers %v, deleting %v, gone %v", fin, deleting, gone)
	})
	select {
	case err := <-done:
		t.Fatalf("Delete returned (%v) while the object was still there", err)
	default:
	}
	e.release("fg")
	if err := <-done; err != nil {
		t.Errorf("Delete: %v", err)
	}
	if _, _, gone := e.finalizers("fg"); !gone {
		t.Error("Delete returned, but the object is still there")
	}
	// A missing object is deleted already.
	e.mustApply(`{"operation":"Delete","kind":"ConfigMap","namespace":"NS","name":"never"}
{"operation":"DeleteInBackground","apiVersion":"v1","kind":"ConfigMap","namespace":"NS","name":"never"}`)
}

// TestBadOperationAppliesNone: one operation that cannot be resolved (an
// unknown kind at index 2) and none of the file is applied.
func TestBadOperationAppliesNone(t *testing.T) {
	e := setup(t)
	e.mustApply(`{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep","namespace":"NS"},"data":{"x":"1"}}}`)
	tests := []struct{ name, file, want string }{
		{"unknown kind", `{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"new","namespace":"NS"}}}
{"operation":"MergePatch","kind":"ConfigMap","namespace":"NS","name":"keep","mergePatch":{"data":{"x":"2"}}}
{"operation":"Create","object":{"apiVersion":"kubepatch.strata.test/v1","kind":"Sprocket","metadata":{"name":"s","namespace":"NS"}}}
{"operation":"Delete","kind":"ConfigMap","namespace":"NS","name":"keep"}
`, "operation 2 (Create kubepatch.strata.test/v1/Sprocket NS/s, line 3): object.kind: the API server serves no kind Sprocket in kubepatch.strata.test/v1; install its CRD first, or fix apiVersion and kind; no operation was applied"},
		{"no namespace", `{"operation":"MergePatch","kind":"ConfigMap","namespace":"NS","name":"keep","mergePatch":{"data":{"x":"2"}}}
{"operation":"Delete","kind":"ConfigMap","name":"keep"}
`, "operation 1 (Delete ConfigMap keep, line 2): namespace: ConfigMap is namespaced: give the object's namespace; no operation was applied"},
		{"namespace on a cluster-scoped kind", `{"operation":"MergePatch","kind":"ConfigMap","namespace":"NS","name":"keep","mergePatch":{"data":{"x":"2"}}}
{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n","namespace":"NS"}}}
`, "operation 1 (CreateOrUpdate v1/Namespace NS/n, line 2): object.metadata.namespace: Namespace is not namespaced: drop the namespace \"NS\"; no operation was applied"},
		{"unknown apiVersion", `{"operation":"MergePatch","kind":"ConfigMap","namespace":"NS","name":"keep","mergePatch":{"data":{"x":"2"}}}
{"operation":"JQPatch","apiVersion":"v2","kind":"ConfigMap","namespace":"NS","name":"keep","jqFilter":"."}
`, "operation 1 (JQPatch v2/ConfigMap NS/keep, line 2): kind: the API server serves no kind ConfigMap in v2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := e.apply(tc.file)
			want := strings.ReplaceAll(tc.want, "NS", e.ns)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error:\n%v\nwant it to contain:\n%s", err, want)
			}
			var oe *kubepatch.OpError
			if !errors.As(err, &oe) {
				t.Errorf("error %T is not a *kubepatch.OpError", err)
			}
			if d := cmp.Diff(map[string]string{"x": "1"}, e.data("keep")); d != "" {
				t.Errorf("an operation was applied (-want +got):\n%s", d)
			}
			if _, err := e.cm("new"); !apierrors.IsNotFound(err) {
				t.Errorf("ConfigMap new was created: %v", err)
			}
		})
	}
}

// TestKindOfCRDInstalledLater: a kind unknown at first (its CRD is not
// installed) resolves once the CRD is there, with the same Applier.
func TestKindOfCRDInstalledLater(t *testing.T) {
	e := setup(t)
	file := `{"operation":"CreateOrUpdate","object":{"apiVersion":"kubepatch.strata.test/v1","kind":"Gadget","metadata":{"name":"NS-g"},"spec":{"on":true}}}`
	err := e.apply(file)
	if err == nil || !strings.Contains(err.Error(), "serves no kind Gadget") {
		t.Fatalf("before the CRD: %v", err)
	}
	if err := e.c.InstallCRDs(e.ctx, "testdata/later"); err != nil {
		t.Fatal(err)
	}
	e.mustApply(file)
	g, err := e.c.Dynamic.Resource(schema.GroupVersionResource{Group: "kubepatch.strata.test", Version: "v1", Resource: "gadgets"}).Get(e.ctx, e.ns+"-g", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if on, _, _ := unstructured.NestedBool(g.Object, "spec", "on"); !on {
		t.Errorf("gadget %v", g.Object)
	}
}

// A namespace beside a create's object (shell-operator's schema allows it)
// puts an object without one in that namespace.
func TestCreateNamespaceBesideObject(t *testing.T) {
	e := setup(t)
	e.mustApply(`{"operation":"CreateOrUpdate","namespace":"NS","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"beside"},"data":{"x":"1"}}}
{"operation":"CreateIfNotExists","namespace":"NS","object":"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"beside-text\"}}"}`)
	if d := cmp.Diff(map[string]string{"x": "1"}, e.data("beside")); d != "" {
		t.Errorf("data (-want +got):\n%s", d)
	}
	if _, err := e.cm("beside-text"); err != nil {
		t.Error(err)
	}
}
