package kubebind

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/strata-dev/strata/internal/operator/hook"
)

func TestSelectionOf(t *testing.T) {
	tests := []struct {
		name   string
		config string // the binding's selectors, YAML under the binding
		want   selection
		fields []string // fieldsFor each of want.names (or "")
	}{
		{name: "none", config: "", want: selection{}, fields: []string{""}},
		{
			name:   "labels",
			config: "  labelSelector: {matchLabels: {app: web}, matchExpressions: [{key: tier, operator: NotIn, values: [a, b]}, {key: x, operator: Exists}]}\n",
			want:   selection{labels: "app=web,tier notin (a,b),x"},
			fields: []string{""},
		},
		{
			name:   "fields and names",
			config: "  fieldSelector: {matchExpressions: [{field: status.phase, operator: NotEquals, value: 'a,b'}]}\n  nameSelector: {matchNames: [two, one, two]}\n",
			want:   selection{fields: `status.phase!=a\,b`, names: []string{"one", "two"}},
			fields: []string{`status.phase!=a\,b,metadata.name=one`, `status.phase!=a\,b,metadata.name=two`},
		},
		{
			name:   "namespace names",
			config: "  namespace: {nameSelector: {matchNames: [b, a]}}\n",
			want:   selection{nsNames: []string{"a", "b"}},
			fields: []string{""},
		},
		{
			name:   "namespace labels",
			config: "  namespace: {labelSelector: {matchLabels: {team: x}}}\n",
			want:   selection{nsDynamic: true, nsLabels: "team=x"},
			fields: []string{""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := hook.ParseConfig([]byte("configVersion: v1\nkubernetes:\n- kind: Pod\n"+tc.config), hook.Global, "h")
			if err != nil {
				t.Fatal(err)
			}
			got, err := selectionOf(cfg.Kubernetes[0])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(selection{})); diff != "" {
				t.Errorf("selectionOf (-want +got):\n%s", diff)
			}
			names := got.names
			if names == nil {
				names = []string{""}
			}
			var fs []string
			for _, n := range names {
				fs = append(fs, got.fieldsFor(n))
			}
			if diff := cmp.Diff(tc.fields, fs); diff != "" {
				t.Errorf("fieldsFor (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelectionOfErrors(t *testing.T) {
	tests := []struct {
		b    hook.KubernetesBinding
		want string
	}{
		{hook.KubernetesBinding{Name: "b", FieldSelector: []hook.FieldRequirement{{Field: "a", Operator: "In", Value: "x"}}}, `binding b: fieldSelector.matchExpressions[0]: operator "In"`},
		{hook.KubernetesBinding{Name: "b", LabelSelector: &hook.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}}, "binding b: labelSelector:"},
		{hook.KubernetesBinding{Name: "b", Namespace: &hook.NamespaceSelector{LabelSelector: &hook.LabelSelector{MatchExpressions: []hook.LabelRequirement{{Key: "k", Operator: "Near"}}}}}, "binding b: namespace.labelSelector:"},
	}
	for _, tc := range tests {
		_, err := selectionOf(&tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("selectionOf(%+v) = %v, want an error containing %q", tc.b, err, tc.want)
		}
	}
	b := hook.KubernetesBinding{Name: "b", NameSelector: []string{}}
	if sel, err := selectionOf(&b); err != nil || !sel.none {
		t.Errorf("selectionOf(empty nameSelector) = %+v, %v; want none", sel, err)
	}
}

// storeHarness drives a watch's store as the reflector does, with one
// subscriber.
type storeHarness struct {
	t   *testing.T
	w   *sharedWatch
	sub *subscription
}

func newStoreHarness(t *testing.T, keep bool) *storeHarness {
	w := &sharedWatch{key: watchKey{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}}, gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
		keep: keep, items: map[string]*storedItem{}, subs: map[*subscription]struct{}{}}
	bw := &bindingWatch{q: changeQueue{wake: make(chan struct{}, 1)}}
	sub := &subscription{w: w, bw: bw, ready: make(chan struct{}), errc: make(chan error, 1)}
	w.subs[sub] = struct{}{}
	return &storeHarness{t: t, w: w, sub: sub}
}

func cmObj(name, rv, v string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": "ns", "resourceVersion": rv}, "data": map[string]any{"v": v}}}
}

func list(objs ...*unstructured.Unstructured) []any {
	out := make([]any, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}

// changes drains what the subscriber was sent: "Event ns/name v".
func (h *storeHarness) changes() []string {
	out := []string{}
	for {
		h.sub.bw.q.mu.Lock()
		n := len(h.sub.bw.q.items)
		h.sub.bw.q.mu.Unlock()
		if n == 0 {
			return out
		}
		it, _ := h.sub.bw.q.pop(context.Background())
		o := it.change.Object
		data, _ := o.Value["data"].(map[string]any)
		out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %v", it.change.Event, o.ID(), orEmpty(data["v"]))))
	}
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}

func (h *storeHarness) check(what string, want ...string) {
	h.t.Helper()
	if want == nil {
		want = []string{}
	}
	if diff := cmp.Diff(want, h.changes()); diff != "" {
		h.t.Errorf("%s: changes (-want +got):\n%s", what, diff)
	}
}

// TestWatchStore: the first list gives the subscriber its objects; watch
// events pass on; a relist (after a broken watch, an API server restart)
// reports only what changed, so that it runs no hook twice.
func TestWatchStore(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("keep=%v", keep), func(t *testing.T) {
			h := newStoreHarness(t, keep)
			if err := h.w.Replace(list(cmObj("a", "1", "a1"), cmObj("b", "2", "b1"), cmObj("c", "3", "c1")), "3"); err != nil {
				t.Fatal(err)
			}
			objs, err := h.sub.wait(context.Background())
			if err != nil || len(objs) != 3 || objs[0].Name != "a" || objs[2].Name != "c" {
				t.Fatalf("initial objects %v, %v; want a, b, c", objs, err)
			}
			h.check("first list")
			_ = h.w.Update(cmObj("a", "4", "a2"))
			_ = h.w.Add(cmObj("d", "5", "d1"))
			_ = h.w.Update(cmObj("d", "5", "d1")) // the same version again
			_ = h.w.Delete(cmObj("c", "6", "c1"))
			h.check("watch events", "Modified ns/a a2", "Added ns/d d1", "Deleted ns/c c1")
			// A relist with nothing changed: nothing, and the bytes the
			// bindings hold stay the ones kept.
			before := h.w.items["ns/a"]
			_ = h.w.Replace(list(cmObj("a", "4", "a2"), cmObj("b", "2", "b1"), cmObj("d", "5", "d1")), "6")
			h.check("relist, nothing changed")
			if h.w.items["ns/a"] != before {
				t.Errorf("a relist replaced the item of an unchanged object")
			}
			// Changes missed while the watch was down.
			_ = h.w.Replace(list(cmObj("a", "4", "a2"), cmObj("b", "7", "b2"), cmObj("e", "8", "e1")), "8")
			if keep {
				h.check("relist", "Deleted ns/d d1", "Modified ns/b b2", "Added ns/e e1")
			} else {
				// A watch that keeps no objects knows a deleted one by its
				// identity alone.
				h.check("relist", "Deleted ns/d", "Modified ns/b b2", "Added ns/e e1")
			}
			for id, it := range h.w.items {
				if keep != (it.json != nil) {
					t.Errorf("item %s keeps %d bytes of JSON with keep=%v", id, len(it.json), keep)
				}
			}
		})
	}
}

// TestWatchStoreJoin: a binding that joins a shared watch after its first
// list gets the objects it keeps, then the changes.
func TestWatchStoreJoin(t *testing.T) {
	h := newStoreHarness(t, true)
	_ = h.w.Replace(list(cmObj("a", "1", "a1")), "1")
	late := &subscription{w: h.w, bw: &bindingWatch{q: changeQueue{wake: make(chan struct{}, 1)}}, ready: make(chan struct{}), errc: make(chan error, 1)}
	h.w.mu.Lock()
	h.w.subs[late] = struct{}{}
	late.initial, late.live = h.w.objectsLocked(), true
	close(late.ready)
	h.w.mu.Unlock()
	objs, _ := late.wait(context.Background())
	if len(objs) != 1 || string(objs[0].JSON) != `{"apiVersion":"v1","data":{"v":"a1"},"kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","resourceVersion":"1"}}` {
		t.Fatalf("objects of a late subscriber: %d, first %s", len(objs), objs[0].JSON)
	}
	_ = h.w.Update(cmObj("a", "2", "a2"))
	h.check("first subscriber", "Modified ns/a a2")
	if n := len(late.bw.q.items); n != 1 {
		t.Errorf("late subscriber got %d changes, want 1", n)
	}
}

// staticSource is a BindingSource that hands out fixed objects and keeps
// each binding's fn, to send changes by hand.
type staticSource struct {
	objs []*Object
	fn   func(Change)
}

func (s *staticSource) Watch(context.Context, string, string, func(Change)) ([]*Object, error) {
	panic("a monitor over a BindingSource must call WatchBinding")
}

func (s *staticSource) WatchBinding(_ context.Context, _ *hook.KubernetesBinding, fn func(Change)) ([]*Object, error) {
	s.fn = fn
	return s.objs, nil
}

// TestMonitorOverBindingSource: the monitor trusts the source's selection
// and keeps no copy of the objects, only its snapshot (filter results,
// with keepFullObjectsInMemory: false).
func TestMonitorOverBindingSource(t *testing.T) {
	cfg, err := hook.ParseConfig([]byte("configVersion: v1\nkubernetes:\n- kind: ConfigMap\n  keepFullObjectsInMemory: false\n  labelSelector: {matchLabels: {app: x}}\n  namespace: {labelSelector: {matchLabels: {team: a}}}\n  jqFilter: .data.v\n"), hook.Global, "h")
	if err != nil {
		t.Fatal(err)
	}
	obj := func(name, v string) *Object {
		o, err := decodeObject(fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"ns"},"data":{"v":%q}}`, name, v))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	src := &staticSource{objs: []*Object{obj("a", "1")}}
	m := NewMonitor(cfg.Kubernetes[0], src)
	var events []string
	sync, err := m.Start(context.Background(), func(e Event) {
		events = append(events, fmt.Sprintf("%s %s", e.Context.WatchEvent, e.Context.Objects[0].FilterResult))
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sync.Objects) != 1 || string(sync.Objects[0].FilterResult) != `"1"` || sync.Objects[0].Object != nil {
		t.Fatalf("Synchronization %+v: want a's filter result alone (no labels, no namespace labels needed)", sync.Objects)
	}
	src.fn(Change{Event: hook.Added, Object: obj("b", "2")})
	src.fn(Change{Event: hook.Modified, Object: obj("b", "2")}) // the same filter result
	src.fn(Change{Event: hook.Deleted, Object: identityObject(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "ns", "a")})
	if diff := cmp.Diff([]string{`Added "2"`, `Deleted "1"`}, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if n := len(m.state.all); n != 0 {
		t.Errorf("the monitor keeps %d objects besides its snapshot", n)
	}
}

// FuzzSelection: the selectors sent to the API server select what the
// binding asks, whatever the names and values (escaping), for any UTF-8.
func FuzzSelection(f *testing.F) {
	f.Add("app", "web", "status.phase", "Running", "a")
	f.Add("example.com/key", "v-1", "spec.x", `a,b=c\d`, "name.with.dots")
	f.Add("k", "", "f", "", "")
	f.Fuzz(func(t *testing.T, key, value, field, fieldValue, name string) {
		if !utf8.ValidString(field + fieldValue + name) {
			return // names and values are JSON strings on the API server
		}
		b := &hook.KubernetesBinding{Name: "b",
			LabelSelector: &hook.LabelSelector{MatchLabels: map[string]string{key: value}},
			FieldSelector: []hook.FieldRequirement{{Field: field, Operator: "Equals", Value: fieldValue}}}
		if name != "" {
			b.NameSelector = []string{name}
		}
		sel, err := selectionOf(b)
		if err != nil {
			return // an invalid label key or value, or an empty field
		}
		ls, err := labels.Parse(sel.labels)
		if err != nil {
			t.Fatalf("label selector %q does not parse: %v", sel.labels, err)
		}
		if !ls.Matches(labels.Set{key: value}) || (value != "x" && ls.Matches(labels.Set{key: "x"})) {
			t.Errorf("label selector %q for %s=%s", sel.labels, key, value)
		}
		fs, err := fields.ParseSelector(sel.fieldsFor(name))
		if err != nil {
			t.Fatalf("field selector %q does not parse: %v", sel.fieldsFor(name), err)
		}
		set := fields.Set{field: fieldValue}
		if name != "" {
			set["metadata.name"] = name
		}
		if !fs.Matches(set) {
			t.Errorf("field selector %q does not match %v", sel.fieldsFor(name), set)
		}
	})
}
