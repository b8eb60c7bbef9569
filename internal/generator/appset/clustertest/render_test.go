// Package clustertest checks `strata appset render --kubeconfig` on a real
// kube-apiserver: cluster Secrets, a ConfigMap and duck-typed resources
// read from the API server give the same Applications as the same
// manifests given as files.
package clustertest_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/cli"
	"github.com/strata-dev/strata/internal/kube/kubetest"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

func strata(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.Main(context.Background(), args, nil, &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

// create creates every object of the manifests file in the cluster.
func create(t *testing.T, c *kubetest.Cluster, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: obj}
		gv, err := schema.ParseGroupVersion(u.GetAPIVersion())
		if err != nil {
			t.Fatal(err)
		}
		res := gv.WithResource(strings.ToLower(u.GetKind()) + "s")
		if _, err := c.Dynamic.Resource(res).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

func TestRenderFromCluster(t *testing.T) {
	c := kubetest.Shared(t)
	if err := c.InstallCRDs(t.Context(), "testdata/ducks-crd.yaml"); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gitops"}}
	if _, err := c.Client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create(t, c, "testdata/objects.yaml")

	fromFiles, stderr, code := strata(t, "appset", "render", "testdata/appset.yaml", "--objects", "testdata/objects.yaml", "--argocd-namespace", "gitops")
	if code != 0 {
		t.Fatalf("render from files: exit %d\n%s", code, stderr)
	}
	fromCluster, stderr, code := strata(t, "appset", "render", "testdata/appset.yaml", "--kubeconfig", c.Kubeconfig, "--argocd-namespace", "gitops")
	if code != 0 {
		t.Fatalf("render from the cluster: exit %d\n%s", code, stderr)
	}
	if diff := cmp.Diff(fromFiles, fromCluster); diff != "" {
		t.Errorf("files and cluster differ (-files +cluster):\n%s", diff)
	}
	var names []string
	for _, l := range strings.Split(fromCluster, "\n") {
		if strings.HasPrefix(l, "  name: ") {
			names = append(names, strings.TrimPrefix(l, "  name: "))
		}
	}
	want := []string{"all-dev", "all-prod-eu", "all-staging", "all-in-cluster", "sel-prod-eu", "web-prod-eu-picked", "web-in-cluster-local", "web-staging-picked", "api-dev"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("Applications (-want +got):\n%s", diff)
	}

	// Nothing in another namespace: the clusters generator finds no
	// Secret, only in-cluster; the decisions' ConfigMap is missing.
	_, stderr, code = strata(t, "appset", "render", "testdata/appset.yaml", "--kubeconfig", c.Kubeconfig, "--argocd-namespace", "default")
	if code == 0 || !strings.Contains(stderr, `ConfigMap "placement" not found in namespace default`) {
		t.Errorf("other namespace: exit %d, stderr %s", code, stderr)
	}
}
