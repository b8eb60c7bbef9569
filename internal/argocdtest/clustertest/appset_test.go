//go:build linux

package clustertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/eventually"
)

// appSets are the ApplicationSets of TestPluginGenerator: a plugin
// generator served by strata, and a matrix of it with a list generator.
func (e *env) appSets() []map[string]any {
	template := func(name string, labels map[string]any, ns string) map[string]any {
		return map[string]any{
			"metadata": map[string]any{"name": name, "labels": labels},
			"spec": map[string]any{
				"project":     "default",
				"source":      map[string]any{"repoURL": e.repo.url, "targetRevision": "main", "path": "static"},
				"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns},
			},
		}
	}
	plugin := func(team string) map[string]any {
		return map[string]any{"plugin": map[string]any{
			"configMapRef":        map[string]any{"name": genConfigMap},
			"input":               map[string]any{"parameters": map[string]any{"team": team}},
			"requeueAfterSeconds": 5,
		}}
	}
	set := func(name string, generators []any, tmpl map[string]any) map[string]any {
		return map[string]any{
			"apiVersion": "argoproj.io/v1alpha1",
			"kind":       "ApplicationSet",
			"metadata":   map[string]any{"name": name, "namespace": argoNS},
			"spec": map[string]any{
				"goTemplate":        true,
				"goTemplateOptions": []any{"missingkey=error"},
				"generators":        generators,
				"template":          tmpl,
			},
		}
	}
	return []map[string]any{
		set("e2e-envs", []any{plugin("payments")},
			template("envs-{{.env}}", map[string]any{"env": "{{.env}}", "tier": "{{.tier}}"}, "e2e-envs-{{.env}}")),
		set("e2e-matrix", []any{map[string]any{"matrix": map[string]any{"generators": []any{
			plugin("search"),
			map[string]any{"list": map[string]any{"elements": []any{map[string]any{"region": "eu"}, map[string]any{"region": "us"}}}},
		}}}},
			template("matrix-{{.env}}-{{.region}}", map[string]any{"env": "{{.env}}", "region": "{{.region}}", "tier": "{{.tier}}"}, "e2e-matrix-{{.env}}-{{.region}}")),
	}
}

// generated lists the Applications the controller made for set, by name.
func (e *env) generated(t *testing.T, set string) (map[string]*unstructured.Unstructured, error) {
	list, err := e.apps().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		u := &list.Items[i]
		for _, o := range u.GetOwnerReferences() {
			if o.Kind == "ApplicationSet" && o.Name == set {
				out[u.GetName()] = u
			}
		}
	}
	return out, nil
}

// waitApps waits until set's Applications are exactly want (name → tier
// label).
func (e *env) waitApps(t *testing.T, set string, want map[string]string) {
	t.Helper()
	eventually.Within(t, syncWait, fmt.Sprintf("ApplicationSet %s's Applications %v", set, want), func() (bool, string) {
		apps, err := e.generated(t, set)
		if err != nil {
			return false, err.Error()
		}
		got := map[string]string{}
		for name, u := range apps {
			got[name] = u.GetLabels()["tier"]
		}
		return reflect.DeepEqual(got, want), fmt.Sprintf("%v", got)
	})
}

// writeSets sets the generator backend's answer.
func (e *env) writeSets(t *testing.T, sets string) {
	t.Helper()
	tmp := e.genSets() + ".tmp"
	if err := os.WriteFile(tmp, []byte(sets), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, e.genSets()); err != nil {
		t.Fatal(err)
	}
}

// TestPluginGenerator drives the ApplicationSet controller's plugin
// generator against `strata generator serve` (token from a Secret, the
// ConfigMap of docs/generator.md): Applications created, alone and in a
// matrix with a list; a changed answer updates them; a failing backend
// deletes none. Each time `strata appset render` of the same
// ApplicationSets gives exactly the Applications the controller made.
func TestPluginGenerator(t *testing.T) {
	// Not parallel with itself only: the backend's answer is shared.
	t.Parallel()
	e := setup(t)
	sets := e.appSets()
	file := filepath.Join(t.TempDir(), "appsets.yaml")
	var docs [][]byte
	for _, s := range sets {
		data, err := yaml.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, data)
	}
	if err := os.WriteFile(file, bytes.Join(docs, []byte("---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range sets {
			name := s["metadata"].(map[string]any)["name"].(string)
			_ = e.cluster.Dynamic.Resource(appSetGVR).Namespace(argoNS).Delete(t.Context(), name, metav1.DeleteOptions{})
		}
	})

	e.writeSets(t, `[{"env": "dev", "tier": "bronze"}, {"env": "prod", "tier": "gold"}]`)
	for _, s := range sets {
		e.apply(t, appSetGVR, s)
	}
	e.waitApps(t, "e2e-envs", map[string]string{"envs-dev": "bronze", "envs-prod": "gold"})
	e.waitApps(t, "e2e-matrix", map[string]string{
		"matrix-dev-eu": "bronze", "matrix-dev-us": "bronze", "matrix-prod-eu": "gold", "matrix-prod-us": "gold",
	})
	e.compareRender(t, file, []string{"e2e-envs", "e2e-matrix"})

	// A changed answer: one set changed, one added.
	e.writeSets(t, `[{"env": "dev", "tier": "silver"}, {"env": "prod", "tier": "gold"}, {"env": "qa", "tier": "bronze"}]`)
	e.waitApps(t, "e2e-envs", map[string]string{"envs-dev": "silver", "envs-prod": "gold", "envs-qa": "bronze"})
	e.waitApps(t, "e2e-matrix", map[string]string{
		"matrix-dev-eu": "silver", "matrix-dev-us": "silver", "matrix-prod-eu": "gold", "matrix-prod-us": "gold",
		"matrix-qa-eu": "bronze", "matrix-qa-us": "bronze",
	})
	e.compareRender(t, file, []string{"e2e-envs", "e2e-matrix"})

	// The backend fails (its command finds no file): the controller
	// reports the error and deletes nothing.
	if err := os.Remove(e.genSets()); err != nil {
		t.Fatal(err)
	}
	eventually.Within(t, syncWait, "ApplicationSet e2e-envs reporting the generator's error", func() (bool, string) {
		u, err := e.cluster.Dynamic.Resource(appSetGVR).Namespace(argoNS).Get(t.Context(), "e2e-envs", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		var seen []string
		for _, c := range conds {
			m, _ := c.(map[string]any)
			seen = append(seen, fmt.Sprintf("%v=%v: %v", m["type"], m["status"], m["message"]))
			if m["type"] == "ErrorOccurred" && m["status"] == "True" && strings.Contains(fmt.Sprint(m["message"]), "API error with status code 500") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %q", seen)
	})
	// A later reconcile of the failing set still deletes nothing.
	e.refreshAppSet(t, "e2e-envs")
	e.waitApps(t, "e2e-envs", map[string]string{"envs-dev": "silver", "envs-prod": "gold", "envs-qa": "bronze"})
	e.waitApps(t, "e2e-matrix", map[string]string{
		"matrix-dev-eu": "silver", "matrix-dev-us": "silver", "matrix-prod-eu": "gold", "matrix-prod-us": "gold",
		"matrix-qa-eu": "bronze", "matrix-qa-us": "bronze",
	})
}

// refreshAppSet asks the controller to reconcile set now, as Argo CD's
// webhooks do (the application-set-refresh annotation: after a generator
// error the controller would wait 3 minutes), and waits until it has
// asked strata's generator for set's parameters again, read from the
// generator's log (the status need not change: a reconcile that fails as
// the last one did writes nothing to the API server).
func (e *env) refreshAppSet(t *testing.T, set string) {
	t.Helper()
	var gen *proc
	for _, p := range e.procs {
		if p.name == "strata-generator" {
			gen = p
		}
	}
	if gen == nil {
		t.Fatal("no strata-generator process")
	}
	calls := func() int {
		data, err := os.ReadFile(gen.log)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(data, []byte("appset="+set+" "))
	}
	before := calls()
	patch := []byte(`{"metadata":{"annotations":{"argocd.argoproj.io/application-set-refresh":"true"}}}`)
	if _, err := e.cluster.Dynamic.Resource(appSetGVR).Namespace(argoNS).Patch(t.Context(), set, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotating ApplicationSet %s for a refresh: %v", set, err)
	}
	eventually.Within(t, syncWait, "ApplicationSet "+set+" reconciled again (the generator called again)", func() (bool, string) {
		now := calls()
		return now > before, fmt.Sprintf("%d calls logged for %s, as before", now, set)
	})
}

// compareRender runs `strata appset render` on file, with the plugin's
// ConfigMap and Secret as deployed, the generator server running and the
// extra flags, and compares its Applications with those the controller
// made for sets.
func (e *env) compareRender(t *testing.T, file string, sets []string, extra ...string) {
	t.Helper()
	minor := strings.Join(strings.Split(strings.TrimPrefix(e.version, "v"), ".")[:2], ".")
	args := append([]string{"appset", "render", file,
		"--plugin-config", filepath.Join(e.genDir, "plugin-cm.yaml"),
		"--secret", filepath.Join(e.genDir, "secret.yaml"),
		"--argocd-version", minor, "-o", "json"}, extra...)
	cmd := exec.CommandContext(t.Context(), e.strata, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("strata appset render: %v\n%s", err, stderr.String())
	}
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("strata appset render -o json printed %s: %v", out, err)
	}
	rendered := map[string]string{}
	for _, it := range list.Items {
		u := &unstructured.Unstructured{Object: it}
		rendered[u.GetName()] = comparable(u)
	}
	cluster := map[string]string{}
	for _, set := range sets {
		apps, err := e.generated(t, set)
		if err != nil {
			t.Fatal(err)
		}
		for name, u := range apps {
			cluster[name] = comparable(u)
		}
	}
	names := func(m map[string]string) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	if !slices.Equal(names(rendered), names(cluster)) {
		t.Fatalf("strata appset render made Applications %v, the controller %v", names(rendered), names(cluster))
	}
	for name, r := range rendered {
		if c := cluster[name]; r != c {
			t.Errorf("Application %s:\nstrata appset render: %s\nthe controller:       %s", name, r, c)
		}
	}
}

// comparable is what an ApplicationSet decides of an Application: its
// name, labels, annotations, finalizers and spec, as JSON with empty
// values left out (the controller writes Go types, which omit them).
func comparable(u *unstructured.Unstructured) string {
	v := map[string]any{
		"name":        u.GetName(),
		"namespace":   u.GetNamespace(),
		"labels":      u.GetLabels(),
		"annotations": u.GetAnnotations(),
		"finalizers":  u.GetFinalizers(),
		"spec":        u.Object["spec"],
	}
	data, _ := json.Marshal(prune(v))
	return string(data)
}

// prune drops nulls, empty strings, maps and lists, recursively.
func prune(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if x = prune(x); x != nil {
				out[k] = x
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case map[string]string:
		if len(v) == 0 {
			return nil
		}
		return v
	case []string:
		if len(v) == 0 {
			return nil
		}
		return v
	case []any:
		var out []any
		for _, x := range v {
			if x = prune(x); x != nil {
				out = append(out, x)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case string:
		if v == "" {
			return nil
		}
		return v
	default:
		return v
	}
}
