//go:build linux

package clustertest

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/strata-dev/strata/internal/eventually"
)

// syncWait bounds a first sync: the repo-server clones the repository,
// the controller builds its cluster cache, on a loaded machine.
const syncWait = 3 * time.Minute

// application is an Application of the shared repository, synced
// automatically (with pruning) into namespace ns.
func (e *env) application(name, path, ns string, source map[string]any) map[string]any {
	src := map[string]any{"repoURL": e.repo.url, "targetRevision": "main", "path": path}
	maps.Copy(src, source)
	return map[string]any{
		"apiVersion": "argoproj.io/v1alpha1",
		"kind":       "Application",
		"metadata": map[string]any{
			"name":       name,
			"finalizers": []any{"resources-finalizer.argocd.argoproj.io"},
		},
		"spec": map[string]any{
			"project":     "default",
			"source":      src,
			"destination": map[string]any{"server": "https://kubernetes.default.svc", "namespace": ns},
			"syncPolicy":  map[string]any{"automated": map[string]any{"prune": true, "selfHeal": true}},
		},
	}
}

// waitSynced waits until Application name is Synced at the repository's
// head with its last sync succeeded, and returns the revision.
func (e *env) waitSynced(t *testing.T, name string) string {
	t.Helper()
	var rev string
	eventually.Within(t, syncWait, "Application "+name+" Synced, its sync Succeeded", func() (bool, string) {
		u, err := e.app(t, name)
		if err != nil {
			return false, err.Error()
		}
		sync, revision, phase, conds := appState(u)
		rev = revision
		return sync == "Synced" && phase == "Succeeded" && len(conds) == 0,
			fmt.Sprintf("sync %q at %q, operation %q, conditions %q", sync, revision, phase, conds)
	})
	return rev
}

// waitConfigMap waits until ConfigMap ns/name holds want, but for the
// keys in ignore (any value), and returns it.
func (e *env) waitConfigMap(t *testing.T, ns, name string, want map[string]string, ignore ...string) *corev1.ConfigMap {
	t.Helper()
	var got *corev1.ConfigMap
	eventually.Within(t, syncWait, fmt.Sprintf("ConfigMap %s/%s holding %v", ns, name, want), func() (bool, string) {
		cm, err := e.cluster.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = cm
		data := maps.Clone(cm.Data)
		for _, k := range ignore {
			delete(data, k)
		}
		return maps.Equal(data, want), fmt.Sprintf("data %v", cm.Data)
	})
	return got
}

// waitReconciled waits until the controller has compared Application
// name again since the call (status.reconciledAt moved on).
func (e *env) waitReconciled(t *testing.T, name string) {
	t.Helper()
	u, err := e.app(t, name)
	if err != nil {
		t.Fatal(err)
	}
	before, _, _ := unstructured.NestedString(u.Object, "status", "reconciledAt")
	eventually.Within(t, syncWait, "Application "+name+" compared again", func() (bool, string) {
		u, err := e.app(t, name)
		if err != nil {
			return false, err.Error()
		}
		at, _, _ := unstructured.NestedString(u.Object, "status", "reconciledAt")
		return at != before, "reconciledAt " + at
	})
}

// TestNamedPlugin is an Application naming strata's sidecar plugin, with
// plugin parameters (string, array, map) and env: synced, the objects
// carry the values; a changed parameter re-renders and syncs; a plugin
// error shows in the Application's conditions and nothing is pruned.
func TestNamedPlugin(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const name, ns = "cmp-named", "e2e-cmp-named"
	e.namespace(t, ns)
	t.Cleanup(func() { e.deleteApp(t, name) })

	params := []any{
		map[string]any{"name": "greeting", "string": "hi"},
		map[string]any{"name": "region", "string": "us-east-2"},
		map[string]any{"name": "zones", "array": []any{"z1", "z2"}},
		map[string]any{"name": "labels", "map": map[string]any{"tier": "silver"}},
	}
	plugin := map[string]any{
		"name":       e2ePlugin,
		"env":        []any{map[string]any{"name": "COLOR", "value": "blue"}},
		"parameters": params,
	}
	e.apply(t, appGVR, e.application(name, "cmp", ns, map[string]any{"plugin": plugin}))
	rev := e.waitSynced(t, name)
	want := map[string]string{
		"greeting": "hi", "replicas": "unset", "region": "us-east-2", "zones": "z1,z2", "tier": "silver",
		"color": "blue", "namespace": ns, "revision": rev,
	}
	e.waitConfigMap(t, ns, name+"-out", want)

	// A parameter changed in the Application: rendered again and synced.
	params[0] = map[string]any{"name": "greeting", "string": "bonjour"}
	params = append(params, map[string]any{"name": "replicas", "string": "3"})
	plugin["parameters"] = params
	e.apply(t, appGVR, e.application(name, "cmp", ns, map[string]any{"plugin": plugin}))
	want["greeting"], want["replicas"] = "bonjour", "3"
	e.waitConfigMap(t, ns, name+"-out", want)
	e.waitSynced(t, name)

	// The plugin fails: the error is in the Application's conditions, and
	// what it deployed stays.
	plugin["parameters"] = append(params, map[string]any{"name": "fail", "string": "true"})
	e.apply(t, appGVR, e.application(name, "cmp", ns, map[string]any{"plugin": plugin}))
	eventually.Within(t, syncWait, "the plugin's error in the Application's conditions", func() (bool, string) {
		u, err := e.app(t, name)
		if err != nil {
			return false, err.Error()
		}
		_, _, _, conds := appState(u)
		for _, c := range conds {
			if strings.HasPrefix(c, "ComparisonError: ") && strings.Contains(c, "strata-e2e: the fail parameter is true") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %q", conds)
	})
	// Let the controller compare the failing source once more: nothing is
	// pruned (it never syncs an app whose manifests failed).
	e.waitReconciled(t, name)
	cm, err := e.cluster.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), name+"-out", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap %s/%s-out was pruned after the plugin failed", ns, name)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(cm.Data, want) {
		t.Errorf("after the plugin failed, ConfigMap data = %v, want it unchanged: %v", cm.Data, want)
	}
}

// TestDiscoveredPlugin is an Application with plugin parameters and env
// but no plugin name: the repo-server asks every sidecar, strata's test
// plugin claims the directory (discover.fileName), and renders it.
func TestDiscoveredPlugin(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const name, ns = "cmp-discovered", "e2e-cmp-discovered"
	e.namespace(t, ns)
	t.Cleanup(func() { e.deleteApp(t, name) })

	plugin := map[string]any{
		"env":        []any{map[string]any{"name": "COLOR", "value": "green"}},
		"parameters": []any{map[string]any{"name": "greeting", "string": "found"}},
	}
	e.apply(t, appGVR, e.application(name, "cmp", ns, map[string]any{"plugin": plugin}))
	rev := e.waitSynced(t, name)
	e.waitConfigMap(t, ns, name+"-out", map[string]string{
		"greeting": "found", "replicas": "unset", "region": "unset", "zones": "unset,unset", "tier": "unset",
		"color": "green", "namespace": ns, "revision": rev,
	})
}

// TestDeploySidecar is the sidecar exactly as deploy/cmp configures it:
// its plugin.yaml (discovered by its rule), its arguments, its socket.
func TestDeploySidecar(t *testing.T) {
	t.Parallel()
	e := setup(t)
	const name, ns = "cmp-deploy", "e2e-cmp-deploy"
	e.namespace(t, ns)
	t.Cleanup(func() { e.deleteApp(t, name) })

	e.apply(t, appGVR, e.application(name, "static", ns, map[string]any{"plugin": map[string]any{}}))
	e.waitSynced(t, name)
	e.waitConfigMap(t, ns, "static-settings", map[string]string{"source": "deploy/cmp's static-manifests plugin"})
}
