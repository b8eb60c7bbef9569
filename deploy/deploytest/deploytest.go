// Package deploytest is test support for the manifests under deploy/:
// Argo CD's own install.yaml (vendored, testdata/), kustomize builds of
// install.yaml with strata's components, and strata's Helm chart rendered
// and linted with the Helm SDK. The unit tests (deploy/) and the cluster
// tests (deploy/clustertest) share it.
package deploytest

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/kustomize"
)

// ArgoCDVersion is the Argo CD release whose manifests/install.yaml is
// vendored in testdata (from the github.com/argoproj/argo-cd/v3 module zip
// of that version, gzipped).
const ArgoCDVersion = "v3.6.1"

// ArgoCDInstallURL is where users take that install.yaml from.
const ArgoCDInstallURL = "https://raw.githubusercontent.com/argoproj/argo-cd/" + ArgoCDVersion + "/manifests/install.yaml"

// Root returns the repository's root directory (the one with go.mod and
// deploy/).
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "deploy")); err == nil {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("deploytest: no repository root (go.mod beside deploy/) above the working directory")
		}
		dir = parent
	}
}

// Path returns the absolute path of a file or directory given relative to
// the repository root.
func Path(t testing.TB, rel string) string {
	t.Helper()
	return filepath.Join(Root(t), filepath.FromSlash(rel))
}

// ArgoCDInstall writes Argo CD's install.yaml into dir and returns its
// path. Without crds, its CustomResourceDefinitions are left out: they do
// not change with strata's components, are 95% of the file and take
// kustomize ten times as long to build (ArgoCDCRDs returns them).
func ArgoCDInstall(t testing.TB, dir string, crds bool) string {
	t.Helper()
	data := argoCDInstall(t)
	if !crds {
		var b bytes.Buffer
		for _, u := range Decode(t, data) {
			if u.GetKind() == "CustomResourceDefinition" {
				continue
			}
			y, err := yaml.Marshal(u.Object)
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString("---\n")
			b.Write(y)
		}
		data = b.Bytes()
	}
	p := filepath.Join(dir, "install.yaml")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ArgoCDCRDs returns the CustomResourceDefinitions of Argo CD's install.yaml.
func ArgoCDCRDs(t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	return OfKind(Decode(t, argoCDInstall(t)), "CustomResourceDefinition")
}

func argoCDInstall(t testing.TB) []byte {
	t.Helper()
	f, err := os.Open(Path(t, "deploy/testdata/argo-cd-"+ArgoCDVersion+"-install.yaml.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Compose builds "Argo CD's install.yaml + components" in namespace argocd,
// as a user's kustomization does, with the components given relative to
// the repository root (deploy/cmp, deploy/cmp/helm). install.yaml's CRDs
// are left out (ArgoCDInstall).
func Compose(t testing.TB, components ...string) []*unstructured.Unstructured {
	t.Helper()
	dir := t.TempDir()
	ArgoCDInstall(t, dir, false)
	var b strings.Builder
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: argocd\nresources: [install.yaml]\ncomponents:\n")
	for _, c := range components {
		// kustomize takes only relative paths for components.
		rel, err := filepath.Rel(dir, Path(t, c))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "  - %s\n", filepath.ToSlash(rel))
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return Build(t, dir)
}

// Build builds the kustomization in dir, as `kubectl apply -k` does.
func Build(t testing.TB, dir string) []*unstructured.Unstructured {
	t.Helper()
	out, err := (&kustomize.Build{}).Run(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return Decode(t, out)
}

// Decode reads a YAML stream into objects, leaving empty documents out.
func Decode(t testing.TB, stream []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out
}

// Find returns the object of kind and name among objs, or nil.
func Find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}

// OfKind returns the objects of kind among objs.
func OfKind(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range objs {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	return out
}

// Into converts u into a typed object, failing on fields the type lacks.
func Into(t testing.TB, u *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
}

// Deployment returns the Deployment name among objs, typed.
func Deployment(t testing.TB, objs []*unstructured.Unstructured, name string) *appsv1.Deployment {
	t.Helper()
	u := Find(objs, "Deployment", name)
	if u == nil {
		t.Fatalf("no Deployment %s", name)
	}
	var d appsv1.Deployment
	Into(t, u, &d)
	return &d
}

// KubeVersion is the Kubernetes version charts are rendered for.
const KubeVersion = "v1.37.1"

// ChartDir is strata's Helm chart, relative to the repository root.
const ChartDir = "deploy/chart/strata"

// LoadChart loads strata's chart.
func LoadChart(t testing.TB) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(Path(t, ChartDir))
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// ValuesFile reads a values file given relative to the repository root.
func ValuesFile(t testing.TB, rel string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return v
}

// Template renders the chart as `helm template NAME CHART --namespace NS
// --include-crds` does, with vals as the user's values (Helm merges them
// over values.yaml and checks values.schema.json). It returns Helm's error
// for values the chart or its schema rejects.
func Template(ch *chart.Chart, name, namespace string, vals map[string]any) ([]byte, error) {
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = name
	install.Namespace = namespace
	install.Replace = true
	install.IncludeCRDs = true
	// The test control plane's version (hack/testbin/kube-apiserver); as a
	// library Helm would otherwise report v1.20.
	kv, err := common.ParseKubeVersion(KubeVersion)
	if err != nil {
		return nil, err
	}
	install.KubeVersion = kv
	rel, err := install.RunWithContext(context.Background(), ch, vals)
	if err != nil {
		return nil, err
	}
	r, ok := rel.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("helm returned a %T, not a release", rel)
	}
	var b bytes.Buffer
	b.WriteString(r.Manifest)
	for _, h := range r.Hooks {
		fmt.Fprintf(&b, "\n---\n%s\n", h.Manifest)
	}
	return b.Bytes(), nil
}

// Render is Template that fails t on an error, decoded.
func Render(t testing.TB, ch *chart.Chart, name, namespace string, vals map[string]any) []*unstructured.Unstructured {
	t.Helper()
	out, err := Template(ch, name, namespace, vals)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	return Decode(t, out)
}
