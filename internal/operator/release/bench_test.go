package release_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/release"
	"github.com/strata-dev/strata/internal/operator/store"
)

// benchTree writes the bench's modules: n modules, each a chart with one
// ConfigMap, a values.yaml and an OpenAPI schema.
func benchTree(b *testing.B, n int) string {
	dir := b.TempDir()
	for i := range n {
		m := filepath.Join(dir, "modules", fmt.Sprintf("%03d-mod%d", i, i))
		key := fmt.Sprintf("mod%d", i)
		files := map[string]string{
			"Chart.yaml":          fmt.Sprintf("apiVersion: v2\nname: mod%d\nversion: 0.0.1\n", i),
			"values.yaml":         fmt.Sprintf("%s:\n  replicas: 1\n%sEnabled: true\n", key, key),
			"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  replicas: {{ .Values." + key + ".replicas | quote }}\n  patched: {{ .Values." + key + ".patched | quote }}\n",
			"openapi/values.yaml": "type: object\nproperties:\n  replicas: {type: integer}\n  patched: {type: string}\n",
		}
		for name, content := range files {
			p := filepath.Join(m, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return dir
}

// BenchmarkConverge50 is this package's and its neighbours' share of a
// cold converge of 50 modules: discovery, the values store, one values
// patch per module (the bench's beforeHelm hook), the render, the dedup
// check and the release store write. Hook processes are not included.
func BenchmarkConverge50(b *testing.B) {
	dir := benchTree(b, 50)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		set, err := module.Discover([]string{filepath.Join(dir, "modules")}, "", module.Options{})
		if err != nil {
			b.Fatal(err)
		}
		st, err := store.New(set, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		r := &release.Renderer{Namespace: "ops"}
		rs := &release.Local{Dir: b.TempDir()}
		for _, m := range set.Modules {
			p := hook.Patch{{Op: "add", Path: "/" + m.Key + "/patched", Value: "yes"}}
			if _, err := st.ApplyPatch(store.Patch{Scope: m.Key, Hook: "hooks/before", Ops: p}); err != nil {
				b.Fatal(err)
			}
			vals, err := st.HelmValues(m.Key)
			if err != nil {
				b.Fatal(err)
			}
			out, err := r.Render(ctx, m, vals)
			if err != nil {
				b.Fatal(err)
			}
			if up, _ := release.NeedsUpgrade(nil, out); up {
				if err := rs.Put(ctx, out.Release(release.StatusDeployed, "")); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}
