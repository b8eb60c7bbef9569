package clustertest_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/strata-dev/strata/internal/cli"
	"github.com/strata-dev/strata/internal/kube"
	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/layers"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

const crds = "../../../deploy/crds"

func cluster(t *testing.T) (*kubetest.Cluster, *kube.Client) {
	t.Helper()
	c := kubetest.Shared(t)
	if err := c.InstallCRDs(t.Context(), crds); err != nil {
		t.Fatal(err)
	}
	cfg, err := kube.RESTConfig(kube.Options{Kubeconfig: c.Kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	kc, err := kube.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, kc
}

func createNamespace(t *testing.T, c *kubetest.Cluster, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := c.Client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createCustom(ctx context.Context, c *kubetest.Cluster, obj runtime.Object, kind string, namespace string) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind(kind)
	res := v1alpha1.AppResource
	if kind == "Catalog" {
		res = v1alpha1.CatalogResource
	}
	_, err = c.Dynamic.Resource(res).Namespace(namespace).Create(ctx, u, metav1.CreateOptions{})
	return err
}

// TestRenderFromCluster loads the shipped example into a real API server
// and renders it from there: the result must equal the render from the
// files, and the App must survive the CRD's schema.
func TestRenderFromCluster(t *testing.T) {
	c, kc := cluster(t)
	ctx := t.Context()
	files, err := layers.ReadDir(ctx, "../../../examples/layers", layers.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	apps, err := files.Apps()
	if err != nil || len(apps) != 1 {
		t.Fatalf("examples/layers Apps: %v, %v", apps, err)
	}
	app := apps[0].App
	want, err := (&layers.Renderer{Source: files, Namespaces: layers.Namespaces{Any: true}}).Render(ctx, app, nil)
	if err != nil {
		t.Fatal(err)
	}

	for _, ns := range []string{"giantswarm", "m2m01"} {
		createNamespace(t, c, ns)
	}
	for _, chain := range [][]layers.Ref{want.Plan.ConfigMaps, want.Plan.Secrets} {
		for _, r := range chain {
			var err error
			switch r.Kind {
			case layers.KindConfigMap:
				var cm *corev1.ConfigMap
				if cm, err = files.ConfigMap(ctx, r.Namespace, r.Name); err == nil {
					_, err = c.Client.CoreV1().ConfigMaps(r.Namespace).Create(ctx, cm, metav1.CreateOptions{})
				}
			case layers.KindSecret:
				var s *corev1.Secret
				if s, err = files.Secret(ctx, r.Namespace, r.Name); err == nil {
					_, err = c.Client.CoreV1().Secrets(r.Namespace).Create(ctx, s, metav1.CreateOptions{})
				}
			}
			if err != nil && !errors.Is(err, layers.ErrNotFound) {
				t.Fatalf("creating %s: %v", r, err)
			}
		}
	}
	cat, err := files.Catalog(ctx, "giantswarm", "giantswarm")
	if err != nil {
		t.Fatal(err)
	}
	if err := createCustom(ctx, c, cat, "Catalog", "giantswarm"); err != nil {
		t.Fatalf("creating the Catalog: %v", err)
	}
	if err := createCustom(ctx, c, app, "App", "m2m01"); err != nil {
		t.Fatalf("creating the App: %v", err)
	}

	src := layers.ClusterSource{Client: kc}
	stored, err := src.App(ctx, "m2m01", "ingress-nginx")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(app.Spec, stored.Spec); diff != "" {
		t.Errorf("App spec after a round trip through the API server (-sent +stored):\n%s", diff)
	}
	got, err := (&layers.Renderer{Source: src, Namespaces: layers.Namespaces{Any: true}}).Render(ctx, stored, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.Plan, got.Plan); diff != "" {
		t.Errorf("plan from the cluster (-files +cluster):\n%s", diff)
	}
	if diff := cmp.Diff(want.Values, got.Values); diff != "" {
		t.Errorf("values from the cluster (-files +cluster):\n%s", diff)
	}
	if diff := cmp.Diff(want.Missing, got.Missing); diff != "" {
		t.Errorf("missing layers from the cluster (-files +cluster):\n%s", diff)
	}

	// The command reads the same objects with --kubeconfig.
	args := []string{"layers", "render", "../../../examples/layers/app.yaml", "--values-only", "--show-secrets"}
	var fromFiles, fromCluster, stderr bytes.Buffer
	if code := cli.Main(ctx, args, nil, &fromFiles, &stderr); code != 0 {
		t.Fatalf("strata %v: exit %d: %s", args, code, stderr.String())
	}
	args = append(args, "--kubeconfig", c.Kubeconfig)
	if code := cli.Main(ctx, args, nil, &fromCluster, &stderr); code != 0 {
		t.Fatalf("strata %v: exit %d: %s", args, code, stderr.String())
	}
	if diff := cmp.Diff(fromFiles.String(), fromCluster.String()); diff != "" {
		t.Errorf("strata layers render --kubeconfig (-files +cluster):\n%s", diff)
	}

	// A missing object is ErrNotFound from the cluster too.
	if _, err := src.ConfigMap(ctx, "m2m01", "nope"); !errors.Is(err, layers.ErrNotFound) {
		t.Errorf("ConfigMap(nope) error = %v, want ErrNotFound", err)
	}
}

// TestCRDValidation checks that the API server enforces the CRD's rules for
// extraConfigs: the priority range and the kinds.
func TestCRDValidation(t *testing.T) {
	c, _ := cluster(t)
	ctx := t.Context()
	createNamespace(t, c, "crd-validation")
	tests := []struct {
		name  string
		extra v1alpha1.ExtraConfig
		want  string // in the error; "" to accept
	}{
		{"unset priority", v1alpha1.ExtraConfig{Name: "a", Namespace: "x"}, ""},
		{"priority 150", v1alpha1.ExtraConfig{Kind: "secret", Name: "a", Namespace: "x", Priority: 150}, ""},
		{"priority 151", v1alpha1.ExtraConfig{Name: "a", Namespace: "x", Priority: 151}, "spec.extraConfigs[0].priority"},
		{"priority -1", v1alpha1.ExtraConfig{Name: "a", Namespace: "x", Priority: -1}, "spec.extraConfigs[0].priority"},
		{"unknown kind", v1alpha1.ExtraConfig{Kind: "ConfigMap", Name: "a", Namespace: "x"}, "spec.extraConfigs[0].kind"},
		{"no namespace", v1alpha1.ExtraConfig{Name: "a"}, "spec.extraConfigs[0].namespace"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app := &v1alpha1.App{Spec: v1alpha1.AppSpec{Catalog: "c", Name: "n", Namespace: "x", Version: "1.0.0",
				ExtraConfigs: []v1alpha1.ExtraConfig{tc.extra}}}
			app.Name = "app-" + strings.Repeat("a", i+1)
			err := createCustom(ctx, c, app, "App", "crd-validation")
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("creating the App: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("creating the App: error %v, want one about %s", err, tc.want)
			}
		})
	}
}
