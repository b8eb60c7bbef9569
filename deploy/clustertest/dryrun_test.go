// Package clustertest_test applies what deploy/ installs to a real API
// server (internal/kube/kubetest) with a server-side dry run, as
// `kubectl apply --server-side --dry-run=server` does: Argo CD's
// install.yaml with strata's components, each kustomization, and strata's
// Helm chart with several value sets. The API server validates every
// object (schemas, names, RBAC references, admission) without keeping it.
// It is an integration package: `make unit` skips it.
package clustertest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/deploy/deploytest"
	"github.com/strata-dev/strata/internal/kube/kubetest"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

func TestDryRun(t *testing.T) {
	c := kubetest.Shared(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	if err := c.InstallCRDs(ctx, "testdata/monitoring-crds.yaml"); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"argocd", "strata-system", "strata-addons", "monitoring", "strata", "team-a"} {
		_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	ch := deploytest.LoadChart(t)
	values := func(s string) map[string]any {
		v := map[string]any{}
		if err := yaml.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name string
		objs func(t *testing.T) []*unstructured.Unstructured
	}{
		{"install.yaml+cmp+helm", func(t *testing.T) []*unstructured.Unstructured {
			// Compose leaves install.yaml's CRDs out; they go in as they are.
			return append(deploytest.ArgoCDCRDs(t), deploytest.Compose(t, "deploy/cmp", "deploy/cmp/helm")...)
		}},
		{"generator", kustomization("deploy/generator")},
		{"layers-controller", kustomization("deploy/layers-controller")},
		{"operator", kustomization("deploy/operator")},
		{"observability", kustomization("deploy/observability")},
		{"chart/defaults", func(t *testing.T) []*unstructured.Unstructured {
			return deploytest.Render(t, ch, "strata", "strata-system", nil)
		}},
		{"chart/everything", func(t *testing.T) []*unstructured.Unstructured {
			return deploytest.Render(t, ch, "strata", "strata-system", values(`
operator: {enabled: true, image: {repository: registry.example.com/platform/modules, tag: "1.4.2"}}
metrics: {serviceMonitor: {enabled: true}, podMonitor: {enabled: true}, prometheusRule: {enabled: true}, dashboards: {enabled: true, namespace: monitoring}}
`))
		}},
		{"chart/narrow", func(t *testing.T) []*unstructured.Unstructured {
			return deploytest.Render(t, ch, "narrow", "strata", values(`
generator: {replicas: 1, namespace: "", token: {existingSecret: my-token}}
layersController: {replicas: 1, watchNamespace: team-a, crds: {install: false}}
operator:
  enabled: true
  replicas: 1
  image: {repository: registry.example.com/platform/modules}
  rbac: {clusterAdmin: false, rules: [{apiGroups: [apps], resources: [deployments], verbs: [get, list, watch, create, update, patch, delete]}]}
`))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := tc.objs(t)
			if len(objs) == 0 {
				t.Fatal("nothing to apply")
			}
			dryRun(ctx, t, c, objs)
		})
	}
}

func kustomization(dir string) func(t *testing.T) []*unstructured.Unstructured {
	return func(t *testing.T) []*unstructured.Unstructured {
		return deploytest.Build(t, deploytest.Path(t, filepath.FromSlash(dir)))
	}
}

// dryRun applies objs server-side with a dry run, each on its own.
func dryRun(ctx context.Context, t *testing.T, c *kubetest.Cluster, objs []*unstructured.Unstructured) {
	t.Helper()
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery()))
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Errorf("%s %s: %v", gvk, u.GetName(), err)
			continue
		}
		var ri interface {
			Apply(context.Context, string, *unstructured.Unstructured, metav1.ApplyOptions, ...string) (*unstructured.Unstructured, error)
		} = c.Dynamic.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := u.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			ri = c.Dynamic.Resource(mapping.Resource).Namespace(ns)
		}
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = ri.Apply(actx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "strata-deploy-test", Force: true, DryRun: []string{metav1.DryRunAll}})
		cancel()
		if err != nil {
			t.Errorf("%s %s/%s: %v", gvk.Kind, u.GetNamespace(), u.GetName(), err)
		}
	}
}
