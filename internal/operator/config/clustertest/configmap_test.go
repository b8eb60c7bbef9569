// Package clustertest tests the ConfigMap config store against a real
// kube-apiserver (internal/kube/kubetest).
package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/operator/config"
	"github.com/strata-dev/strata/internal/values"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// wait bounds how long a test waits for an event that must come: only a
// broken store takes it.
const wait = 2 * time.Minute

const cmName = "addon-operator"

type env struct {
	t     *testing.T
	ctx   context.Context
	ns    string
	cs    kubernetes.Interface
	store *config.ConfigMap
}

func setup(t *testing.T) *env {
	t.Helper()
	c := kubetest.Shared(t)
	ns := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(ns) > 50 {
		ns = ns[:50]
	}
	ns = fmt.Sprintf("%s-%d", strings.Trim(ns, "-"), time.Now().UnixNano()%100000)
	ctx := t.Context()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, ns: ns, cs: c.Client, store: config.NewConfigMap(c.Client, ns, cmName)}
}

func (e *env) create(data map[string]string) *corev1.ConfigMap {
	e.t.Helper()
	cm, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(e.ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: cmName}, Data: data,
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return cm
}

// edit changes the ConfigMap as `kubectl edit` does: read, change, write
// with the resourceVersion read.
func (e *env) edit(change func(cm *corev1.ConfigMap)) {
	e.t.Helper()
	if err := editConfigMap(e.ctx, e.cs, e.ns, change); err != nil {
		e.t.Fatal(err)
	}
}

func editConfigMap(ctx context.Context, cs kubernetes.Interface, ns string, change func(cm *corev1.ConfigMap)) error {
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, cmName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	change(cm)
	_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

func (e *env) data() map[string]string {
	e.t.Helper()
	cm, err := e.cs.CoreV1().ConfigMaps(e.ns).Get(e.ctx, cmName, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return cm.Data
}

// next returns the next event of the watch.
func next(t *testing.T, ch <-chan config.Event) config.Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the watch ended")
		}
		return ev
	case <-time.After(wait):
		t.Fatalf("no config event after %v", wait)
	}
	return config.Event{}
}

func patch(t *testing.T, ops string) *values.JSONPatch {
	t.Helper()
	p, err := values.ParseJSONPatch([]byte(ops), "hook patch")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEditsAreClassified(t *testing.T) {
	e := setup(t)
	e.create(map[string]string{
		"global":             "a: 1\n",
		"certManager":        "x: 1\n",
		"certManagerEnabled": "true",
	})
	c, err := e.store.Load(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := c.EnabledFlag("certManager"); !v || c.Section("global")["a"] != int64(1) || c.Section("certManager")["x"] != int64(1) {
		t.Fatalf("Load = %+v", c.Tree())
	}
	ch, err := e.store.Watch(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		change func(cm *corev1.ConfigMap)
		want   config.Change
	}{
		{"global", func(cm *corev1.ConfigMap) { cm.Data["global"] = "a: 2\n" }, config.Change{Global: true}},
		{"module key", func(cm *corev1.ConfigMap) { cm.Data["certManager"] = "x: 2\n" }, config.Change{Modules: []string{"certManager"}}},
		{"enabled flag", func(cm *corev1.ConfigMap) { cm.Data["certManagerEnabled"] = "false" }, config.Change{Enabled: []string{"certManager"}}},
		{"new module key", func(cm *corev1.ConfigMap) { cm.Data["nginx"] = "replicas: 3\n" }, config.Change{Modules: []string{"nginx"}}},
		// A change the config does not see (a label) gives no event: the
		// next one is the edit after it.
		{"label, then a new flag", func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"touched": "yes"} }, config.Change{Enabled: []string{"nginx"}}},
	}
	for _, s := range steps {
		e.edit(s.change)
		if s.name == "label, then a new flag" {
			e.edit(func(cm *corev1.ConfigMap) { cm.Data["nginxEnabled"] = "true" })
		}
		ev := next(t, ch)
		if ev.Err != nil {
			t.Fatalf("%s: %v", s.name, ev.Err)
		}
		if d := cmp.Diff(s.want, ev.Change); d != "" {
			t.Errorf("%s: change (-want +got):\n%s", s.name, d)
		}
	}
	// Deleted: the empty config.
	if err := e.cs.CoreV1().ConfigMaps(e.ns).Delete(e.ctx, cmName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := next(t, ch)
	want := config.Change{Global: true, Enabled: []string{"certManager", "nginx"}, Modules: []string{"certManager", "nginx"}}
	if d := cmp.Diff(want, ev.Change); ev.Err != nil || d != "" {
		t.Errorf("deleted: change (-want +got):\n%s (err %v)", d, ev.Err)
	}
}

func TestPatchLandsAndIsNotReported(t *testing.T) {
	e := setup(t)
	// No ConfigMap: an empty config, created by the first patch.
	c, err := e.store.Load(e.ctx)
	if err != nil || len(c.Tree()) != 0 {
		t.Fatalf("Load of a missing ConfigMap = %v, %v", c, err)
	}
	ch, err := e.store.Watch(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.store.Patch(e.ctx, patch(t, `[{"op":"add","path":"/global/x","value":1}]`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Section("global")["x"] != int64(1) {
		t.Errorf("Patch returned %v", got.Tree())
	}
	if d := cmp.Diff(map[string]string{"global": "x: 1\n"}, e.data()); d != "" {
		t.Errorf("created ConfigMap data (-want +got):\n%s", d)
	}
	e.edit(func(cm *corev1.ConfigMap) { cm.Data["nginx"] = "# the team's comment\nreplicas: 1\n" })
	if _, err := e.store.Patch(e.ctx, patch(t, `[{"op":"add","path":"/global/name","value":"two"},{"op":"add","path":"/certManagerEnabled","value":false}]`), nil); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"global":             "name: two\nx: 1\n",
		"nginx":              "# the team's comment\nreplicas: 1\n", // not rewritten: its comment stays
		"certManagerEnabled": "false",
	}
	if d := cmp.Diff(want, e.data()); d != "" {
		t.Errorf("patched ConfigMap data (-want +got):\n%s", d)
	}
	// The watch reports the team's edit, never the store's own writes.
	ev := next(t, ch)
	if d := cmp.Diff(config.Change{Modules: []string{"nginx"}}, ev.Change); ev.Err != nil || d != "" {
		t.Fatalf("first event: change (-want +got):\n%s (err %v)", d, ev.Err)
	}
	e.edit(func(cm *corev1.ConfigMap) { cm.Data["nginx"] = "replicas: 2\n" })
	ev = next(t, ch)
	if d := cmp.Diff(config.Change{Modules: []string{"nginx"}}, ev.Change); ev.Err != nil || d != "" {
		t.Fatalf("second event: change (-want +got):\n%s (err %v)", d, ev.Err)
	}
	if ev.Config.Section("global")["name"] != "two" {
		t.Errorf("the watched config lost the patch: %v", ev.Config.Tree())
	}
}

func TestPatchKeepsConcurrentEdit(t *testing.T) {
	e := setup(t)
	e.create(map[string]string{"global": "a: 1\n"})
	if _, err := e.store.Load(e.ctx); err != nil {
		t.Fatal(err)
	}
	ch, err := e.store.Watch(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var checks atomic.Int32
	// The first check runs between the store's read and its write: an
	// edit made there is what `kubectl edit` racing the hook does.
	check := func(c *config.Config) error {
		if checks.Add(1) == 1 {
			return editConfigMap(e.ctx, e.cs, e.ns, func(cm *corev1.ConfigMap) {
				cm.Data["global"] = "a: 5\n"
				cm.Data["certManager"] = "y: 1\n"
			})
		}
		return nil
	}
	got, err := e.store.Patch(e.ctx, patch(t, `[{"op":"add","path":"/global/b","value":2}]`), check)
	if err != nil {
		t.Fatal(err)
	}
	if n := checks.Load(); n != 2 {
		t.Errorf("check ran %d times; want 2 (the conflict makes the store read again)", n)
	}
	want := map[string]string{"global": "a: 5\nb: 2\n", "certManager": "y: 1\n"}
	if d := cmp.Diff(want, e.data()); d != "" {
		t.Errorf("ConfigMap data (-want +got):\n%s", d)
	}
	if got.Section("global")["a"] != int64(5) || got.Section("certManager")["y"] != int64(1) {
		t.Errorf("Patch returned %v", got.Tree())
	}
	// The edit is reported once (by the watch, or by Patch when the watch
	// had not seen it yet), so that the engine reacts to it; the patch is not.
	ev := next(t, ch)
	if d := cmp.Diff(config.Change{Global: true, Modules: []string{"certManager"}}, ev.Change); ev.Err != nil || d != "" {
		t.Fatalf("the concurrent edit's event: change (-want +got):\n%s (err %v)", d, ev.Err)
	}
	e.edit(func(cm *corev1.ConfigMap) { cm.Data["certManager"] = "y: 2\n" })
	ev = next(t, ch)
	if d := cmp.Diff(config.Change{Modules: []string{"certManager"}}, ev.Change); ev.Err != nil || d != "" {
		t.Fatalf("the next edit's event: change (-want +got):\n%s (err %v)", d, ev.Err)
	}
	want["certManager"] = "y: 2\n"
	// A check that refuses stores nothing.
	_, err = e.store.Patch(e.ctx, patch(t, `[{"op":"add","path":"/global/c","value":3}]`), func(*config.Config) error { return errors.New("schema says no") })
	if err == nil || !strings.Contains(err.Error(), "schema says no") {
		t.Errorf("Patch with a refusing check: %v", err)
	}
	if d := cmp.Diff(want, e.data()); d != "" {
		t.Errorf("ConfigMap data after a refused patch (-want +got):\n%s", d)
	}
}

func TestBadEditKeepsLastGood(t *testing.T) {
	e := setup(t)
	e.create(map[string]string{"global": "a: 1\n", "certManager": "x: 1\n"})
	if _, err := e.store.Load(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.store.SetCheck(func(c *config.Config) error {
		for k := range c.Modules {
			if k != "certManager" && k != "nginx" {
				return fmt.Errorf("key %s: no module has this values key", k)
			}
		}
		return nil
	})
	ch, err := e.store.Watch(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name   string
		change func(cm *corev1.ConfigMap)
		want   string
	}{
		{"bad YAML", func(cm *corev1.ConfigMap) { cm.Data["global"] = "a: 1\nb: [\n" }, "in section global:"},
		{"false section", func(cm *corev1.ConfigMap) { cm.Data["global"] = "a: 2\n"; cm.Data["certManager"] = "false" }, `certManager: a module section holds the module's values; to enable or disable the module write certManagerEnabled: "false" instead`},
		{"bad key", func(cm *corev1.ConfigMap) { cm.Data["certManager"] = "x: 1\n"; cm.Data["cert-manager"] = "x: 1\n" }, "cert-manager: not a module's values key"},
		{"no module", func(cm *corev1.ConfigMap) { delete(cm.Data, "cert-manager"); cm.Data["prometheus"] = "x: 1\n" }, "key prometheus: no module has this values key"},
	}
	for i, b := range bad {
		e.edit(b.change)
		ev := next(t, ch)
		if ev.Err == nil || !strings.Contains(ev.Err.Error(), b.want) || !strings.Contains(ev.Err.Error(), "ConfigMap "+e.ns+"/"+cmName) {
			t.Fatalf("%s: event %+v; want an error containing %q", b.name, ev, b.want)
		}
		// Recorded on the ConfigMap too, before the event was sent.
		evs, err := e.cs.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.kind": "ConfigMap", "involvedObject.name": cmName, "reason": config.InvalidConfigReason,
		}.String()})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs.Items) != i+1 {
			t.Fatalf("%s: %d InvalidConfig Events; want %d", b.name, len(evs.Items), i+1)
		}
		found := false
		for _, k := range evs.Items {
			found = found || (k.Type == corev1.EventTypeWarning && strings.Contains(k.Message, b.want))
		}
		if !found {
			t.Errorf("%s: no Warning Event says %q: %+v", b.name, b.want, evs.Items)
		}
		if i == 0 {
			// A hook's patch cannot be applied to content that does not parse.
			before := e.data()
			_, err := e.store.Patch(e.ctx, patch(t, `[{"op":"add","path":"/global/z","value":1}]`), nil)
			if err == nil || !strings.Contains(err.Error(), "cannot apply the config patch") {
				t.Errorf("Patch of an unreadable ConfigMap: %v", err)
			}
			if d := cmp.Diff(before, e.data()); d != "" {
				t.Errorf("the refused patch changed the ConfigMap (-before +after):\n%s", d)
			}
		}
	}
	// Fixed: the change is told against the last good config (global a: 1,
	// certManager x: 1), not against the refused ones.
	e.edit(func(cm *corev1.ConfigMap) {
		cm.Data = map[string]string{"global": "a: 1\nz: 1\n", "certManager": "x: 1\n", "nginx": "r: 1\n"}
	})
	ev := next(t, ch)
	if ev.Err != nil {
		t.Fatal(ev.Err)
	}
	if d := cmp.Diff(config.Change{Global: true, Modules: []string{"nginx"}}, ev.Change); d != "" {
		t.Errorf("change after the fix (-want +got):\n%s", d)
	}
}
