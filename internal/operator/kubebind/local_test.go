package kubebind_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/golden"
	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/kubebind"
)

// harness runs a LocalSource over a temporary directory. settle writes a
// marker object and waits for it: the source handles files in order, so
// every change made before it has been handled by then.
type harness struct {
	t       *testing.T
	dir     string
	src     *kubebind.LocalSource
	events  chan string
	markers chan string
	n       int

	mu   sync.Mutex
	errs []string
}

func newHarness(t *testing.T, files map[string]string) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), events: make(chan string, 1000), markers: make(chan string, 100)}
	for name, data := range files {
		h.write(name, data)
	}
	h.src = &kubebind.LocalSource{Dir: h.dir, Debounce: 20 * time.Millisecond, OnError: func(err error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.errs = append(h.errs, strings.ReplaceAll(err.Error(), h.dir, "DIR"))
	}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := h.src.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if _, err := h.src.Watch(ctx, "test/v1", "Marker", func(c kubebind.Change) { h.markers <- c.Object.Name }); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) write(name, data string) {
	h.t.Helper()
	p := filepath.Join(h.dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	// Written whole and renamed in, as editors do.
	tmp := filepath.Join(h.dir, ".tmp-"+filepath.Base(name))
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) remove(name string) {
	h.t.Helper()
	if err := os.RemoveAll(filepath.Join(h.dir, name)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) emit(ev kubebind.Event) {
	data, err := hook.EncodeContexts("v1", []hook.BindingContext{ev.Context})
	if err != nil {
		h.t.Error(err)
	}
	h.events <- string(data)
}

// settle waits until the source has handled every change made so far and
// returns the events and errors since the last settle.
//
// The marker is written twice: the first may share a batch of file
// events with the step's own files, the second comes in a batch of its
// own, after the first batch has been handled whole.
func (h *harness) settle() (events, errs []string) {
	h.t.Helper()
	for range 2 {
		h.n++
		name := fmt.Sprintf("m%d", h.n)
		h.write("zz-marker.yaml", "apiVersion: test/v1\nkind: Marker\nmetadata: {name: "+name+"}\n")
		deadline := time.After(30 * time.Second)
		for done := false; !done; {
			select {
			case got := <-h.markers:
				done = got == name
			case <-deadline:
				h.t.Fatalf("marker %s never came", name)
			}
		}
	}
	for {
		select {
		case e := <-h.events:
			events = append(events, e)
		default:
			h.mu.Lock()
			errs, h.errs = h.errs, nil
			h.mu.Unlock()
			return events, errs
		}
	}
}

const scenarioConfig = `configVersion: v1
beforeHelm: 1
kubernetes:
- name: pods
  apiVersion: v1
  kind: Pod
  namespace: {nameSelector: {matchNames: [default]}}
  jqFilter: '{name: .metadata.name, phase: .status.phase}'
- name: cms
  kind: ConfigMap
  nameSelector: {matchNames: [settings]}
  keepFullObjectsInMemory: false
  jqFilter: .data
- name: web-deleted
  kind: Pod
  labelSelector: {matchLabels: {app: web}}
  executeHookOnEvent: [Deleted]
- name: team-a-secrets
  kind: Secret
  namespace: {labelSelector: {matchLabels: {team: a}}}
  fieldSelector: {matchExpressions: [{field: type, operator: "!=", value: kubernetes.io/tls}]}
  group: secrets
`

func pod(name, ns, phase, labels, annotations string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: %s\n  labels: {%s}\n  annotations: {%s}\nstatus: {phase: %s}\n", name, ns, labels, annotations, phase)
}

func TestLocalSourceScenario(t *testing.T) {
	cfg, err := hook.ParseConfig([]byte(scenarioConfig), hook.Module, "watcher")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, map[string]string{
		"pods.yaml": pod("a", "default", "Running", "app: web", "") + "---\n" + pod("b", "other", "Pending", "app: web", ""),
		"config/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: default}\ndata: {mode: fast}\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: unrelated, namespace: default}\ndata: {x: y}\n",
		"ns.yaml": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: default, labels: {team: a}}\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: other}\n",
		"secrets.json": `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"default"},"type":"Opaque"}
{"apiVersion":"v1","kind":"Secret","metadata":{"name":"cert","namespace":"default"},"type":"kubernetes.io/tls"}`,
		".hidden/ignored.yaml": "not: [an object",
		"README.txt":           "not read",
	})
	set := kubebind.NewSet(cfg, h.src)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	syncs, err := set.Start(ctx, h.emit)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	line := func(format string, args ...any) { fmt.Fprintf(&out, format+"\n", args...) }
	enc := func(ctxs []hook.BindingContext) string {
		data, err := hook.EncodeContexts("v1", ctxs)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	line("## synchronization")
	for _, c := range set.Fill(syncs) {
		line("%s", enc([]hook.BindingContext{c}))
	}
	steps := []struct {
		what string
		do   func()
	}{
		{"annotation of pod a changed: filter result the same", func() {
			h.write("pods.yaml", pod("a", "default", "Running", "app: web", "x: y")+"---\n"+pod("b", "other", "Pending", "app: web", ""))
		}},
		{"pod a is Succeeded", func() {
			h.write("pods.yaml", pod("a", "default", "Succeeded", "app: web", "x: y")+"---\n"+pod("b", "other", "Pending", "app: web", ""))
		}},
		{"file with pod c added", func() { h.write("more/c.yaml", pod("c", "default", "Running", "app: web", "")) }},
		{"directory with pod c removed", func() { h.remove("more") }},
		{"namespace default no longer team a", func() {
			h.write("ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: default, labels: {team: b}}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n")
		}},
		{"pods.yaml half written", func() { h.write("pods.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: [\n") }},
		{"settings changed", func() {
			h.write("config/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: default}\ndata: {mode: slow}\n")
		}},
		{"pod a copied to a.yaml", func() { h.write("a.yaml", pod("a", "default", "Succeeded", "app: web", "x: y")) }},
		{"pod a removed from pods.yaml: a.yaml's copy comes in", func() { h.write("pods.yaml", pod("b", "other", "Pending", "app: web", "")) }},
		{"pods.yaml removed", func() { h.remove("pods.yaml") }},
		{"the same object in two files", func() { h.write("dup.yaml", pod("a", "default", "Failed", "", "")) }},
	}
	for _, s := range steps {
		s.do()
		events, errs := h.settle()
		line("## %s", s.what)
		for _, e := range events {
			line("event %s", e)
		}
		for _, e := range errs {
			line("error %s", e)
		}
		line("beforeHelm %s", enc(set.Fill([]hook.BindingContext{{BindingType: hook.BeforeHelm, Binding: "beforeHelm"}})))
	}
	golden.Check(t, "testdata/scenario.txtar", "transcript", out.String())
}

func TestLocalSourceStartErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"bad YAML", map[string]string{"a.yaml": "kind: [\n"}, "DIR/a.yaml:2:"},
		{"no apiVersion", map[string]string{"a.yaml": "kind: Pod\nmetadata: {name: a}\n"}, "DIR/a.yaml:1: document 1 has no apiVersion; write apiVersion: v1 (or the object's group/version)"},
		{"no name", map[string]string{"a.yaml": "apiVersion: v1\nkind: Pod\n---\n"}, "DIR/a.yaml:1: document 1 (Pod) has no metadata.name"},
		{"not an object", map[string]string{"a.yaml": "- 1\n"}, "DIR/a.yaml:1: document 1 is a list, not a Kubernetes object"},
		{"twice", map[string]string{"a.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n", "b.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n"},
			"DIR/b.yaml: Pod a is also in DIR/a.yaml; keep each object in one file"},
		{"list item", map[string]string{"a.yaml": "apiVersion: v1\nkind: List\nitems: [{kind: Pod}]\n"}, "DIR/a.yaml:1: document 1 items[0] has no apiVersion; write apiVersion: v1 (or the object's group/version)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			err := (&kubebind.LocalSource{Dir: dir}).Start(ctx)
			got := ""
			if err != nil {
				got = strings.ReplaceAll(err.Error(), dir, "DIR")
			}
			if err == nil || !(got == tc.want || strings.HasSuffix(tc.want, ":") && strings.HasPrefix(got, tc.want)) {
				t.Errorf("Start error = %q, want %q", got, tc.want)
			}
		})
	}
	if err := (&kubebind.LocalSource{Dir: filepath.Join(t.TempDir(), "missing")}).Start(context.Background()); err == nil {
		t.Error("Start of a missing directory succeeded")
	}
}

func TestMonitorFilterError(t *testing.T) {
	cfg, err := hook.ParseConfig([]byte("configVersion: v1\nkubernetes:\n- kind: Pod\n  jqFilter: '.spec.n + 1'\n"), hook.Global, "h")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, map[string]string{"p.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {n: 1}\n"})
	set := kubebind.NewSet(cfg, h.src)
	syncs, err := set.Start(context.Background(), h.emit)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(syncs[0].Objects[0].FilterResult); got != "2" {
		t.Errorf("filter result %s, want 2", got)
	}
	h.write("p.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {n: text}\n")
	events, _ := h.settle()
	if len(events) != 0 {
		t.Errorf("events %v after a failing filter", events)
	}
	if err := set.Monitor("kubernetes").Err(); err == nil || !strings.Contains(err.Error(), `binding kubernetes: jqFilter ".spec.n + 1" on Pod a: cannot add`) {
		t.Errorf("Err() = %v", err)
	}
	if got := string(set.Monitor("kubernetes").Snapshot()[0].FilterResult); got != "2" {
		t.Errorf("snapshot after a failing filter: %s, want the last good 2", got)
	}
	// At start, a failing filter fails Start.
	bad := kubebind.NewSet(cfg, h.src)
	if _, err := bad.Start(context.Background(), nil); err == nil {
		t.Error("Start succeeded with a failing filter")
	}
}

func TestFilterResults(t *testing.T) {
	tests := []struct{ filter, want string }{
		{".metadata.name", `"a"`},
		{"empty", `null`},
		{".spec.list[]", `[1,2.5,"x"]`},
		{".spec.big", `12345678901234567890`},
		{"{n: .metadata.name, l: (.metadata.labels // {})}", `{"l":{},"n":"a"}`},
		{"halt", `null`},
	}
	for _, tc := range tests {
		t.Run(tc.filter, func(t *testing.T) {
			cfg, err := hook.ParseConfig([]byte(fmt.Sprintf("configVersion: v1\nkubernetes:\n- kind: Pod\n  jqFilter: %q\n", tc.filter)), hook.Global, "h")
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, map[string]string{"p.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {list: [1, 2.5, x], big: 12345678901234567890}\n"})
			syncs, err := kubebind.NewSet(cfg, h.src).Start(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			_ = json.Compact(&got, syncs[0].Objects[0].FilterResult)
			if got.String() != tc.want {
				t.Errorf("filter %s = %s, want %s", tc.filter, got.String(), tc.want)
			}
		})
	}
}

func TestSetFill(t *testing.T) {
	cfg, err := hook.ParseConfig([]byte(`configVersion: v1
onStartup: 1
afterHelm: 1
kubernetes:
- {name: pods, kind: Pod, executeHookOnSynchronization: false}
- {name: cms, kind: ConfigMap, includeSnapshotsFrom: [pods]}
schedule:
- {crontab: "* * * * *", includeSnapshotsFrom: [cms]}
`), hook.Module, "h")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, map[string]string{"a.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"})
	set := kubebind.NewSet(cfg, h.src)
	// Before Start, the snapshots are empty.
	got := set.Fill([]hook.BindingContext{{BindingType: hook.AfterHelm, Binding: "afterHelm"}})
	if want := `[{"binding":"afterHelm","snapshots":{"cms":[],"pods":[]}}]`; encode(t, got) != want {
		t.Errorf("Fill before Start = %s, want %s", encode(t, got), want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := set.Start(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Start(ctx, nil); err == nil {
		t.Error("a second Start succeeded")
	}
	pod := `{"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}}`
	cm := `{"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}}`
	tests := []struct {
		in   hook.BindingContext
		want string
	}{
		{hook.BindingContext{BindingType: hook.OnStartup, Binding: "onStartup", Snapshots: map[string][]hook.ObjectResult{"x": nil}}, `[{"binding":"onStartup"}]`},
		{hook.BindingContext{BindingType: hook.AfterHelm, Binding: "afterHelm"}, `[{"binding":"afterHelm","snapshots":{"cms":[` + cm + `],"pods":[` + pod + `]}}]`},
		{hook.BindingContext{BindingType: hook.Schedule, Binding: "schedule", Type: hook.TypeSchedule}, `[{"binding":"schedule","snapshots":{"cms":[` + cm + `]},"type":"Schedule"}]`},
		{hook.BindingContext{BindingType: hook.Kubernetes, Binding: "cms", Type: hook.TypeSynchronization}, `[{"binding":"cms","objects":[` + cm + `],"snapshots":{"pods":[` + pod + `]},"type":"Synchronization"}]`},
		{hook.BindingContext{BindingType: hook.Kubernetes, Binding: "pods", Type: hook.TypeSynchronization}, `[{"binding":"pods","objects":[` + pod + `],"type":"Synchronization"}]`},
	}
	for _, tc := range tests {
		if got := encode(t, set.Fill([]hook.BindingContext{tc.in})); got != tc.want {
			t.Errorf("Fill(%s %s) =\n %s\nwant\n %s", tc.in.BindingType, tc.in.Binding, got, tc.want)
		}
	}
	// A hook without kubernetes bindings: lifecycle contexts get none.
	plain, err := hook.ParseConfig([]byte("configVersion: v1\nbeforeHelm: 1\n"), hook.Module, "p")
	if err != nil {
		t.Fatal(err)
	}
	if got := encode(t, kubebind.NewSet(plain, h.src).Fill([]hook.BindingContext{{BindingType: hook.BeforeHelm, Binding: "beforeHelm"}})); got != `[{"binding":"beforeHelm"}]` {
		t.Errorf("Fill without kubernetes bindings = %s", got)
	}
}

func encode(t *testing.T, ctxs []hook.BindingContext) string {
	t.Helper()
	data, err := hook.EncodeContexts("v1", ctxs)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestApplyFilterLimits(t *testing.T) {
	cfg, err := hook.ParseConfig([]byte("configVersion: v1\nkubernetes:\n- {kind: Pod, jqFilter: 'def f: f; f'}\n- {name: many, kind: Pod, jqFilter: 'range(20000)'}\n"), hook.Global, "h")
	if err != nil {
		t.Fatal(err)
	}
	obj := json.RawMessage(`{"kind":"Pod"}`)
	if _, err := kubebind.ApplyFilter(cfg.Kubernetes[0].Filter(), obj, 50*time.Millisecond); err == nil || err.Error() != "ran longer than 50ms" {
		t.Errorf("endless filter: %v", err)
	}
	if _, err := kubebind.ApplyFilter(cfg.Kubernetes[1].Filter(), obj, time.Minute); err == nil || err.Error() != "gave more than 10000 results" {
		t.Errorf("filter with many results: %v", err)
	}
}

// Several kubernetes bindings without names are all "kubernetes", as in
// shell-operator: each starts with its own objects, and a refresh of a
// shared name (its snapshot, a Synchronization's objects) reads the first
// binding of that name, as shell-operator's does.
func TestUnnamedBindings(t *testing.T) {
	cfg, err := hook.ParseConfig([]byte("configVersion: v1\nkubernetes:\n- kind: Pod\n- kind: ConfigMap\n"), hook.Global, "h")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, map[string]string{
		"p.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
		"c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
	})
	set := kubebind.NewSet(cfg, h.src)
	syncs, err := set.Start(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(syncs) != 2 || syncs[0].Binding != "kubernetes" || syncs[1].Binding != "kubernetes" {
		t.Fatalf("syncs %+v", syncs)
	}
	for i, want := range []string{`"Pod"`, `"ConfigMap"`} {
		if len(syncs[i].Objects) != 1 || !strings.Contains(string(syncs[i].Objects[0].Object), want) {
			t.Errorf("sync %d objects %s, want the %s", i, syncs[i].Objects, want)
		}
	}
	filled := set.Fill(syncs[1:])
	if len(filled[0].Objects) != 1 || !strings.Contains(string(filled[0].Objects[0].Object), `"Pod"`) {
		t.Errorf("refreshed objects %s, want the first binding's (the Pod)", filled[0].Objects)
	}
}
