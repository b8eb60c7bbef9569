package layers_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	chartcommon "helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	corev1 "k8s.io/api/core/v1"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/layers"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
	"github.com/strata-dev/strata/internal/values"
)

// The benchmarks render an App with 100 extraConfigs, each a ConfigMap of
// 1,000 keys (10 groups x 100 keys, every layer overriding every key of the
// one below: the worst case for provenance), from YAML text, as a
// controller or `strata layers render` does. The peers merge the same
// documents the way users do without strata: Helm's parser and
// loader.MergeMaps chain (what `helm template -f ... -f ...` does), and a
// yq (jq) reduce over 100 files. See docs/benchmarks.md.

const (
	benchExtras = 100
	benchGroups = 10
	benchKeys   = 100
)

func benchValues(b *testing.B, layer int) []byte {
	tree := make(map[string]any, benchGroups)
	for g := 0; g < benchGroups; g++ {
		grp := make(map[string]any, benchKeys)
		for k := 0; k < benchKeys; k++ {
			switch k % 3 {
			case 0:
				grp[fmt.Sprintf("key%03d", k)] = int64(layer*1000 + k)
			case 1:
				grp[fmt.Sprintf("key%03d", k)] = fmt.Sprintf("value-%d-%d", layer, k)
			default:
				grp[fmt.Sprintf("key%03d", k)] = layer%2 == 0
			}
		}
		tree[fmt.Sprintf("group%02d", g)] = grp
	}
	data, err := document.MarshalYAML(tree)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// memSource serves ConfigMaps from memory.
type memSource map[string]*corev1.ConfigMap

func (s memSource) ConfigMap(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	cm, ok := s[ns+"/"+name]
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s/%s: %w", ns, name, layers.ErrNotFound)
	}
	return cm, nil
}

func (s memSource) Secret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	return nil, fmt.Errorf("Secret %s/%s: %w", ns, name, layers.ErrNotFound)
}

func (s memSource) Catalog(_ context.Context, ns, name string) (*v1alpha1.Catalog, error) {
	return nil, fmt.Errorf("Catalog %s/%s: %w", ns, name, layers.ErrNotFound)
}

func benchApp(b *testing.B) (*v1alpha1.App, memSource, [][]byte) {
	src := memSource{}
	app := &v1alpha1.App{}
	app.Name, app.Namespace = "bench", "ns"
	var docs [][]byte
	for i := 0; i < benchExtras; i++ {
		name := fmt.Sprintf("extra%03d", i)
		data := benchValues(b, i)
		docs = append(docs, data)
		src["ns/"+name] = &corev1.ConfigMap{Data: map[string]string{"values": string(data)}}
		// Priorities spread over all three buckets, in list order.
		app.Spec.ExtraConfigs = append(app.Spec.ExtraConfigs, v1alpha1.ExtraConfig{Name: name, Namespace: "ns", Priority: 1 + i*149/(benchExtras-1)})
	}
	return app, src, docs
}

// BenchmarkRender is strata's render: plan, fetch, parse, merge both
// chains; with explain, parse with positions, merge with provenance and
// explain every key.
func BenchmarkRender(b *testing.B) {
	app, src, _ := benchApp(b)
	for _, explain := range []bool{false, true} {
		b.Run(fmt.Sprintf("explain=%t", explain), func(b *testing.B) {
			r := layers.Renderer{Source: src, SkipCatalog: true, Provenance: explain, Namespaces: layers.Namespaces{Any: true}}
			b.ReportAllocs()
			for b.Loop() {
				res, err := r.Render(context.Background(), app, nil)
				if err != nil {
					b.Fatal(err)
				}
				if explain {
					exps, err := res.Explain(nil, values.ExplainOptions{})
					if err != nil {
						b.Fatal(err)
					}
					if len(exps) != benchGroups*benchKeys {
						b.Fatalf("%d explanations, want %d", len(exps), benchGroups*benchKeys)
					}
				}
			}
		})
	}
}

// BenchmarkHelmMergeChain parses the same 100 documents with Helm's
// values parser and merges them with loader.MergeMaps, later winning.
func BenchmarkHelmMergeChain(b *testing.B) {
	_, _, docs := benchApp(b)
	b.ReportAllocs()
	for b.Loop() {
		out := map[string]any{}
		for _, d := range docs {
			v, err := chartcommon.ReadValues(d)
			if err != nil {
				b.Fatal(err)
			}
			out = loader.MergeMaps(out, v)
		}
	}
}

// BenchmarkYqReduce merges the same 100 documents, written to files, with
// one yq (jq) deep-merge reduce, as a shell script would. It needs yq (the
// Debian package) on PATH.
func BenchmarkYqReduce(b *testing.B) {
	yq, err := exec.LookPath("yq")
	if err != nil {
		b.Skip("yq is not installed (apt-get install yq): no peer figure")
	}
	_, _, docs := benchApp(b)
	dir := b.TempDir()
	args := []string{"-y", "-s", "reduce .[] as $x ({}; . * $x)"}
	for i, d := range docs {
		f := filepath.Join(dir, fmt.Sprintf("v%03d.yaml", i))
		if err := os.WriteFile(f, d, 0o600); err != nil {
			b.Fatal(err)
		}
		args = append(args, f)
	}
	for b.Loop() {
		out, err := exec.Command(yq, args...).Output()
		if err != nil || len(out) == 0 {
			b.Fatalf("yq: %v", err)
		}
	}
}
