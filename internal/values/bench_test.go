package values_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	helmvalues "helm.sh/helm/v4/pkg/cli/values"
	"helm.sh/helm/v4/pkg/getter"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/values"
)

// The benchmarks merge 10 layers of 10,000 leaves each (100 services x 10
// groups x 10 keys), every layer overriding every leaf of the one below:
// the worst case for provenance. Helm's own merging is measured beside
// strata's in the same run (see docs/benchmarks.md).

const benchLayers = 10

func benchTree(layer int) map[string]any {
	root := make(map[string]any, 100)
	for s := 0; s < 100; s++ {
		svc := make(map[string]any, 10)
		for g := 0; g < 10; g++ {
			grp := make(map[string]any, 10)
			for k := 0; k < 10; k++ {
				switch k % 3 {
				case 0:
					grp[fmt.Sprintf("k%02d", k)] = int64(layer*1000 + k)
				case 1:
					grp[fmt.Sprintf("k%02d", k)] = fmt.Sprintf("value-%d-%d", layer, k)
				default:
					grp[fmt.Sprintf("k%02d", k)] = layer%2 == 0
				}
			}
			svc[fmt.Sprintf("group%02d", g)] = grp
		}
		root[fmt.Sprintf("service%03d", s)] = svc
	}
	return root
}

func benchLayerStack() ([]*values.Layer, []map[string]any) {
	var ls []*values.Layer
	var maps []map[string]any
	for i := 0; i < benchLayers; i++ {
		t := benchTree(i)
		ls = append(ls, &values.Layer{Name: fmt.Sprintf("layer%d", i), Values: t})
		maps = append(maps, t)
	}
	return ls, maps
}

// BenchmarkMerge is strata's merge of parsed layers.
func BenchmarkMerge(b *testing.B) {
	ls, _ := benchLayerStack()
	for _, prov := range []bool{false, true} {
		b.Run(fmt.Sprintf("provenance=%t", prov), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := values.Merge(ls, values.MergeOptions{Provenance: prov}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHelmMergeMaps is Helm's merge of -f files (loader.MergeMaps, as
// helm's values.Options.MergeValues calls it) on the same layers.
func BenchmarkHelmMergeMaps(b *testing.B) {
	_, maps := benchLayerStack()
	b.ReportAllocs()
	for b.Loop() {
		out := map[string]any{}
		for _, m := range maps {
			out = loader.MergeMaps(out, m)
		}
	}
}

func writeBenchFiles(b *testing.B) []string {
	b.Helper()
	dir := b.TempDir()
	var files []string
	for i := 0; i < benchLayers; i++ {
		data, err := document.MarshalYAML(benchTree(i))
		if err != nil {
			b.Fatal(err)
		}
		f := filepath.Join(dir, fmt.Sprintf("values%d.yaml", i))
		if err := os.WriteFile(f, data, 0o600); err != nil {
			b.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// BenchmarkMergeFiles is strata's whole path from files: read, parse
// (with positions when provenance is on), merge.
func BenchmarkMergeFiles(b *testing.B) {
	files := writeBenchFiles(b)
	for _, prov := range []bool{false, true} {
		b.Run(fmt.Sprintf("provenance=%t", prov), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ls, err := values.Inputs{Files: files}.Layers(document.Loader{Positions: prov})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := values.Merge(ls, values.MergeOptions{Provenance: prov}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHelmMergeFiles is helm's values.Options.MergeValues on the same
// files: what `helm template -f ... -f ...` does before rendering.
func BenchmarkHelmMergeFiles(b *testing.B) {
	files := writeBenchFiles(b)
	opts := helmvalues.Options{ValueFiles: files}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := opts.MergeValues(getter.Providers{}); err != nil {
			b.Fatal(err)
		}
	}
}
