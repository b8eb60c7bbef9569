// Package clustertest_test runs the operator's Helm release store
// (release.Helm) against a real kube-apiserver and etcd
// (internal/kube/kubetest): install, the no-op re-converge, upgrades,
// auto-healing, recovery of a release left pending, uninstall, CRDs and
// the history limit. It is a package of its own so that the unit tests of
// internal/operator/release need nothing installed.
package clustertest_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	rspb "helm.sh/helm/v4/pkg/release/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/release"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// env is one test's namespace, modules directory, store and renderer.
type env struct {
	t     testing.TB
	c     *kubetest.Cluster
	ns    string
	dir   string
	store *release.Helm
	rnd   *release.Renderer
}

var labels = map[string]string{"heritage": "addon-operator"}

// setup makes a namespace named after the test and a Helm store in it.
func setup(t testing.TB, o release.HelmOptions) *env {
	t.Helper()
	c := kubetest.Shared(t)
	ns := "rel-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(ns) > 50 {
		ns = ns[:50]
	}
	if _, ok := t.(*testing.B); ok {
		ns += fmt.Sprintf("-%d", time.Now().UnixNano()%1e6) // a benchmark runs again with -count
	}
	_, err := c.Client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	o.Namespace = ns
	o.ResourceLabels = labels
	o.Logger = slog.New(slog.DiscardHandler)
	st, err := release.NewHelm(t.Context(), c.Config, o)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, c: c, ns: ns, dir: t.TempDir(), store: st,
		rnd: &release.Renderer{Namespace: ns, Capabilities: st.Capabilities, ModuleChecksum: true, ResourceLabels: labels, CRDExtraLabels: labels}}
}

// module writes a module's files (paths under its directory) and
// discovers it.
func (e *env) module(name string, files map[string]string) *module.Module {
	e.t.Helper()
	for p, content := range files {
		p = filepath.Join(e.dir, name, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			e.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
	set, err := module.Discover([]string{e.dir}, "", module.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, m := range set.Modules {
		if m.Name == name {
			e.rnd.Forget(m.Path)
			return m
		}
	}
	e.t.Fatalf("module %s not discovered", name)
	return nil
}

// converge renders m with values and converges its release, as the
// operator's Helm step does.
func (e *env) converge(m *module.Module, vals map[string]any) release.Result {
	e.t.Helper()
	r, err := e.rnd.Render(e.t.Context(), m, vals)
	if err != nil {
		e.t.Fatal(err)
	}
	res, err := release.Converge(e.t.Context(), e.store, r)
	if err != nil {
		e.t.Fatalf("Converge(%s) = %v", m.Name, err)
	}
	return res
}

// revisions lists the stored revisions of a release (its Secrets).
func (e *env) revisions(name string) []string {
	e.t.Helper()
	list, err := e.c.Client.CoreV1().Secrets(e.ns).List(e.t.Context(), metav1.ListOptions{LabelSelector: "owner=helm,name=" + name})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, s := range list.Items {
		out = append(out, s.Labels["version"]+":"+s.Labels["status"])
	}
	slices.Sort(out)
	return out
}

func (e *env) configMap(name string) (*corev1.ConfigMap, error) {
	return e.c.Client.CoreV1().ConfigMaps(e.ns).Get(e.t.Context(), name, metav1.GetOptions{})
}

// helmConfig is a Helm action configuration of the test's own, to make
// releases as another Helm client (addon-operator) would.
func (e *env) helmConfig() *action.Configuration {
	e.t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &e.c.Kubeconfig, &e.ns
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(slog.DiscardHandler))
	if err := cfg.Init(flags, e.ns, "secret"); err != nil {
		e.t.Fatal(err)
	}
	return cfg
}

const cmTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  x: {{ .Values.app.x | quote }}
`

func appValues(x string) map[string]any {
	return map[string]any{"global": map[string]any{}, "app": map[string]any{"x": x}}
}

func TestInstallNoopUpgrade(t *testing.T) {
	e := setup(t, release.HelmOptions{})
	m := e.module("app", map[string]string{"templates/cm.yaml": cmTemplate})

	res := e.converge(m, appValues("1"))
	if !res.Upgraded || res.Release.Revision != 1 || res.Why != "not installed" {
		t.Fatalf("first Converge = %+v, want an install at revision 1", res)
	}
	cm, err := e.configMap("app")
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["x"] != "1" || cm.Labels["heritage"] != "addon-operator" {
		t.Errorf("ConfigMap app = data %v labels %v, want x=1 and heritage=addon-operator", cm.Data, cm.Labels)
	}
	got, err := e.store.Get(t.Context(), "app")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != release.StatusDeployed || got.Checksum != res.Release.Checksum || got.Namespace != e.ns {
		t.Errorf("Get(app) = %+v, want deployed in %s with checksum %s", got, e.ns, res.Release.Checksum)
	}
	sec, err := e.c.Client.CoreV1().Secrets(e.ns).Get(t.Context(), "sh.helm.release.v1.app.v1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sec.Labels[release.ModuleChecksumLabel] != res.Release.Checksum || sec.Labels[release.MaintenanceLabel] != "false" {
		t.Errorf("release Secret labels = %v, want moduleChecksum=%s and %s=false", sec.Labels, res.Release.Checksum, release.MaintenanceLabel)
	}

	// The same values again: no new revision.
	if res := e.converge(m, appValues("1")); res.Upgraded {
		t.Errorf("second Converge = %+v, want no upgrade", res)
	}
	if got, want := e.revisions("app"), []string{"1:deployed"}; !slices.Equal(got, want) {
		t.Errorf("revisions after the no-op = %v, want %v", got, want)
	}

	// A values change: revision 2.
	res = e.converge(m, appValues("2"))
	if !res.Upgraded || res.Release.Revision != 2 || res.Why != "rendered manifests changed" {
		t.Fatalf("Converge with new values = %+v, want an upgrade to revision 2", res)
	}
	if cm, err := e.configMap("app"); err != nil || cm.Data["x"] != "2" {
		t.Errorf("ConfigMap app after the upgrade = %v, %v; want x=2", cm, err)
	}
	if got, want := e.revisions("app"), []string{"1:superseded", "2:deployed"}; !slices.Equal(got, want) {
		t.Errorf("revisions after the upgrade = %v, want %v", got, want)
	}
	names, err := e.store.List(t.Context())
	if err != nil || !slices.Equal(names, []string{"app"}) {
		t.Errorf("List = %v, %v; want [app]", names, err)
	}
}

func TestAutoHeal(t *testing.T) {
	e := setup(t, release.HelmOptions{})
	m := e.module("app", map[string]string{
		"templates/cm.yaml": cmTemplate,
		"templates/sa.yaml": "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: app\n",
	})
	e.converge(m, appValues("1"))
	if absent, err := e.store.Absent(t.Context(), "app"); err != nil || len(absent) != 0 {
		t.Fatalf("Absent after install = %v, %v; want none", absent, err)
	}
	if err := e.c.Client.CoreV1().ConfigMaps(e.ns).Delete(t.Context(), "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{e.ns + "/ConfigMap/app"}
	for _, ctx := range []context.Context{t.Context(), release.WithSweep(t.Context())} {
		absent, err := e.store.Absent(ctx, "app")
		if err != nil || !slices.Equal(absent, want) {
			t.Fatalf("Absent after deleting the ConfigMap = %v, %v; want %v", absent, err, want)
		}
	}
	res := e.converge(m, appValues("1"))
	if !res.Upgraded || !strings.Contains(res.Why, "resources absent") || res.Release.Revision != 2 {
		t.Fatalf("Converge after the deletion = %+v, want an upgrade for absent resources", res)
	}
	if _, err := e.configMap("app"); err != nil {
		t.Errorf("ConfigMap app after auto-healing: %v", err)
	}
	if absent, err := e.store.Absent(t.Context(), "app"); err != nil || len(absent) != 0 {
		t.Errorf("Absent after auto-healing = %v, %v; want none", absent, err)
	}
	if _, err := e.store.Absent(t.Context(), "nothing"); err == nil {
		t.Errorf("Absent(nothing) = nil error, want ErrNotFound")
	}
}

// setPending stores a copy of the newest revision of a release as a new
// revision left in status, as a process killed mid-upgrade leaves it.
func (e *env) setPending(name string, status rcommon.Status) {
	e.t.Helper()
	cfg := e.helmConfig()
	last, err := cfg.Releases.Last(name)
	if err != nil {
		e.t.Fatal(err)
	}
	rel := *last.(*rspb.Release)
	info := *rel.Info
	rel.Info = &info
	rel.Version++
	rel.Info.Status = status
	rel.Info.Description = "cut off"
	if err := cfg.Releases.Create(&rel); err != nil {
		e.t.Fatal(err)
	}
}

func TestPendingRecovered(t *testing.T) {
	for _, status := range []rcommon.Status{rcommon.StatusPendingUpgrade, rcommon.StatusPendingRollback} {
		t.Run(string(status), func(t *testing.T) {
			e := setup(t, release.HelmOptions{})
			m := e.module("app", map[string]string{"templates/cm.yaml": cmTemplate})
			e.converge(m, appValues("1"))
			e.setPending("app", status)
			// Unchanged values: not deployed, so upgraded all the same.
			res := e.converge(m, appValues("1"))
			if !res.Upgraded || res.Release.Revision != 3 || !strings.Contains(res.Why, string(status)) {
				t.Fatalf("Converge of a release left %s = %+v, want an upgrade to revision 3", status, res)
			}
			if got, want := e.revisions("app"), []string{"1:superseded", "2:failed", "3:deployed"}; !slices.Equal(got, want) {
				t.Errorf("revisions = %v, want %v", got, want)
			}
		})
	}
	t.Run("pending-install", func(t *testing.T) {
		e := setup(t, release.HelmOptions{})
		m := e.module("app", map[string]string{"templates/cm.yaml": cmTemplate})
		cfg := e.helmConfig()
		rel := &rspb.Release{Name: "app", Namespace: e.ns, Version: 1, Manifest: "",
			Chart: &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "app", Version: "0.2.0"}},
			Info:  &rspb.Info{Status: rcommon.StatusPendingInstall, Description: "cut off"}}
		if err := cfg.Releases.Create(rel); err != nil {
			t.Fatal(err)
		}
		res := e.converge(m, appValues("1"))
		if !res.Upgraded || res.Release.Revision != 2 {
			t.Fatalf("Converge of a release left pending-install = %+v, want revision 2", res)
		}
		// The recovered revision 1 (marked failed) is what revision 2
		// upgraded: Helm supersedes it.
		if got, want := e.revisions("app"), []string{"1:superseded", "2:deployed"}; !slices.Equal(got, want) {
			t.Errorf("revisions = %v, want %v", got, want)
		}
		if _, err := e.configMap("app"); err != nil {
			t.Errorf("ConfigMap app: %v", err)
		}
	})
}

func TestUninstall(t *testing.T) {
	e := setup(t, release.HelmOptions{})
	a := e.module("a", map[string]string{"templates/cm.yaml": strings.ReplaceAll(cmTemplate, ".Values.app.x", ".Values.a.x")})
	b := e.module("b", map[string]string{"templates/cm.yaml": strings.ReplaceAll(cmTemplate, ".Values.app.x", ".Values.b.x")})
	e.converge(a, map[string]any{"a": map[string]any{"x": 1}})
	e.converge(b, map[string]any{"b": map[string]any{"x": 1}})
	if names, err := e.store.List(t.Context()); err != nil || !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("List = %v, %v; want [a b]", names, err)
	}
	if err := e.store.Delete(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	if names, err := e.store.List(t.Context()); err != nil || !slices.Equal(names, []string{"b"}) {
		t.Errorf("List after Delete(a) = %v, %v; want [b]", names, err)
	}
	if _, err := e.configMap("a"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap a after Delete(a): %v, want not found", err)
	}
	if got := e.revisions("a"); len(got) != 0 {
		t.Errorf("revisions of a after Delete(a) = %v, want none", got)
	}
	if _, err := e.configMap("b"); err != nil {
		t.Errorf("ConfigMap b after Delete(a): %v", err)
	}
	if err := e.store.Delete(t.Context(), "a"); err != nil {
		t.Errorf("Delete of a deleted release = %v, want nil", err)
	}
}

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

func TestCRDsBeforeChart(t *testing.T) {
	e := setup(t, release.HelmOptions{})
	m := e.module("widgets", map[string]string{
		"crds/widget.yaml":      widgetCRD,
		"templates/widget.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: {{ .Values.widgets.size }}\n",
		// Rendered with the capabilities the CRDs brought.
		"templates/cm.yaml": "{{ if .Capabilities.APIVersions.Has \"example.com/v1/Widget\" }}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: has-widgets\n{{ end }}",
	})
	res := e.converge(m, map[string]any{"widgets": map[string]any{"size": 3}})
	if !res.Upgraded || res.Release.Revision != 1 {
		t.Fatalf("Converge = %+v, want an install", res)
	}
	crd, err := e.c.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Get(t.Context(), "widgets.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if crd.GetLabels()["heritage"] != "addon-operator" {
		t.Errorf("CRD labels = %v, want heritage=addon-operator", crd.GetLabels())
	}
	managers := map[string]string{}
	for _, f := range crd.GetManagedFields() {
		managers[f.Manager] = string(f.Operation)
	}
	if managers[release.DefaultFieldManager] != "Apply" {
		t.Errorf("CRD managed fields = %v, want %s applying", managers, release.DefaultFieldManager)
	}
	w, err := e.c.Dynamic.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace(e.ns).
		Get(t.Context(), "w", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Widget w of the chart: %v", err)
	}
	if size, _, _ := unstructuredInt(w.Object, "spec", "size"); size != 3 {
		t.Errorf("Widget w spec.size = %d, want 3", size)
	}
	if _, err := e.configMap("has-widgets"); err != nil {
		t.Errorf("ConfigMap has-widgets (rendered when the API versions have example.com/v1/Widget): %v", err)
	}
	if res := e.converge(m, map[string]any{"widgets": map[string]any{"size": 3}}); res.Upgraded {
		t.Errorf("second Converge = %+v, want no upgrade", res)
	}
}

func unstructuredInt(obj map[string]any, path ...string) (int64, bool, error) {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return 0, false, nil
		}
		cur = m[p]
	}
	switch v := cur.(type) {
	case int64:
		return v, true, nil
	case float64:
		return int64(v), true, nil
	}
	return 0, false, fmt.Errorf("%v is %T", cur, cur)
}

func TestHistoryLimit(t *testing.T) {
	tests := []struct {
		name string
		opts release.HelmOptions
		want []string
	}{
		{"limit of 3", release.HelmOptions{MaxHistory: 3}, []string{"3:superseded", "4:superseded", "5:deployed"}},
		// HELM_HISTORY_MAX=0, as addon-operator reads it.
		{"no limit", release.HelmOptions{AllHistory: true}, []string{"1:superseded", "2:superseded", "3:superseded", "4:superseded", "5:deployed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t, tt.opts)
			m := e.module("app", map[string]string{"templates/cm.yaml": cmTemplate})
			for i := 1; i <= 5; i++ {
				if res := e.converge(m, appValues(fmt.Sprint(i))); !res.Upgraded || res.Release.Revision != i {
					t.Fatalf("Converge %d = %+v, want revision %d", i, res, i)
				}
			}
			if got := e.revisions("app"); !slices.Equal(got, tt.want) {
				t.Errorf("revisions = %v, want %v", got, tt.want)
			}
		})
	}
}

// A release addon-operator made, with its checksum in the values
// (_addonOperatorModuleChecksum, older releases) or the moduleChecksum
// label, is not upgraded when the module did not change.
func TestAddonOperatorRelease(t *testing.T) {
	for _, where := range []string{"label", "values"} {
		t.Run(where, func(t *testing.T) {
			e := setup(t, release.HelmOptions{})
			m := e.module("app", map[string]string{"Chart.yaml": "apiVersion: v2\nname: app\nversion: 0.1.0\n", "templates/cm.yaml": cmTemplate})
			vals := appValues("1")
			r, err := e.rnd.Render(t.Context(), m, vals)
			if err != nil {
				t.Fatal(err)
			}
			ch, err := loader.LoadDir(m.Path)
			if err != nil {
				t.Fatal(err)
			}
			in := action.NewInstall(e.helmConfig())
			in.ReleaseName, in.Namespace = "app", e.ns
			in.WaitStrategy = "hookOnly"
			v := appValues("1")
			if where == "label" {
				in.Labels = map[string]string{release.ModuleChecksumLabel: r.Checksum}
			} else {
				v[release.ModuleChecksumValue] = r.Checksum
			}
			if _, err := in.RunWithContext(context.Background(), ch, v); err != nil {
				t.Fatal(err)
			}
			if res := e.converge(m, vals); res.Upgraded {
				t.Errorf("Converge of an unchanged module released by addon-operator = %+v, want no upgrade", res)
			}
			if got, want := e.revisions("app"), []string{"1:deployed"}; !slices.Equal(got, want) {
				t.Errorf("revisions = %v, want %v", got, want)
			}
		})
	}
}

// Releases no module owns are purged (the operator's step 7), except
// HELM_IGNORE_RELEASE.
func TestPurge(t *testing.T) {
	e := setup(t, release.HelmOptions{})
	a := e.module("app", map[string]string{"templates/cm.yaml": cmTemplate})
	e.converge(a, appValues("1"))
	cfg := e.helmConfig()
	for _, name := range []string{"orphan", "keep"} {
		in := action.NewInstall(cfg)
		in.ReleaseName, in.Namespace, in.WaitStrategy = name, e.ns, "hookOnly"
		ch := &chart.Chart{
			Metadata:  &chart.Metadata{APIVersion: "v2", Name: name, Version: "0.1.0"},
			Templates: []*common.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n")}},
		}
		if _, err := in.RunWithContext(t.Context(), ch, nil); err != nil {
			t.Fatal(err)
		}
	}
	names, err := e.store.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	orphans := release.Orphans(names, func(n string) bool { return n == "app" }, "keep")
	if want := []string{"orphan"}; !slices.Equal(orphans, want) {
		t.Fatalf("Orphans(%v) = %v, want %v", names, orphans, want)
	}
	for _, o := range orphans {
		if err := e.store.Delete(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	if names, err := e.store.List(t.Context()); err != nil || !slices.Equal(names, []string{"app", "keep"}) {
		t.Errorf("List after the purge = %v, %v; want [app keep]", names, err)
	}
	if _, err := e.configMap("orphan"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap orphan after the purge: %v, want not found", err)
	}
	if _, err := e.configMap("keep"); err != nil {
		t.Errorf("ConfigMap keep after the purge: %v", err)
	}
}

// Modules of one order converge together (the engine runs them at once),
// one of them applying CRDs meanwhile.
func TestParallelModules(t *testing.T) {
	e := setup(t, release.HelmOptions{})
	mods := []*module.Module{e.module("gadgets", map[string]string{
		"crds/gadget.yaml":      strings.ReplaceAll(strings.ReplaceAll(widgetCRD, "widget", "gadget"), "Widget", "Gadget"),
		"templates/gadget.yaml": "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n",
	})}
	for i := range 4 {
		name := fmt.Sprintf("m%d", i)
		mods = append(mods, e.module(name, map[string]string{"templates/cm.yaml": strings.ReplaceAll(cmTemplate, ".Values.app.x", ".Values."+name+".x")}))
	}
	errs := make(chan error, len(mods))
	for _, m := range mods {
		go func() {
			r, err := e.rnd.Render(t.Context(), m, map[string]any{m.Key: map[string]any{"x": "1"}})
			if err == nil {
				_, err = release.Converge(t.Context(), e.store, r)
			}
			errs <- err
		}()
	}
	for range mods {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	names, err := e.store.List(t.Context())
	if want := []string{"gadgets", "m0", "m1", "m2", "m3"}; err != nil || !slices.Equal(names, want) {
		t.Errorf("List = %v, %v; want %v", names, err, want)
	}
}

// Objects with unknown fields are refused (by the API server: the store
// leaves validation to it), and the release is not deployed.
func TestInvalidObjectRefused(t *testing.T) {
	e := setup(t, release.HelmOptions{})
	m := e.module("bad", map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\nbogus: 1\n"})
	r, err := e.rnd.Render(t.Context(), m, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = release.Converge(t.Context(), e.store, r)
	if err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("Converge of a chart with an unknown field = %v, want an error naming the field", err)
	}
	if got, err := e.store.Get(t.Context(), "bad"); err != nil || got.Status != release.StatusFailed {
		t.Errorf("Get(bad) = %+v, %v; want a failed release", got, err)
	}
}

// A module without a chart has its CRDs applied all the same, and no
// release.
func TestCRDsWithoutChart(t *testing.T) {
	e := setup(t, release.HelmOptions{})
	crd := strings.ReplaceAll(strings.ReplaceAll(widgetCRD, "widget", "sprocket"), "Widget", "Sprocket")
	m := e.module("sprockets", map[string]string{"crds/sprocket.yaml": crd})
	res := e.converge(m, map[string]any{})
	if res.Upgraded || res.Why != "no chart" {
		t.Errorf("Converge = %+v, want no release (no chart)", res)
	}
	if _, err := e.c.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Get(t.Context(), "sprockets.example.com", metav1.GetOptions{}); err != nil {
		t.Errorf("CRD sprockets.example.com: %v", err)
	}
	if names, err := e.store.List(t.Context()); err != nil || len(names) != 0 {
		t.Errorf("List = %v, %v; want no release", names, err)
	}
}
