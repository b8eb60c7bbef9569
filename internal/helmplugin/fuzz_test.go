package helmplugin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/params"
)

// FuzzParameters decodes ARGOCD_APP_PARAMETERS and serves it to the plugin
// on a small chart: nothing may panic, an announcement must be valid as
// the params package reads it, and when rendering succeeds, setting every
// announced value must render the same manifests.
func FuzzParameters(f *testing.F) {
	files, _ := filepath.Glob("testdata/parity/*.txtar")
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, fl := range ar.Files {
			if fl.Name == "parameters.json" {
				f.Add(fl.Data)
			}
		}
	}
	f.Add([]byte(`[{"name":"helm-parameters","map":{"list[2].x":"{a,b}","a\\.b":"null","n":"007"}}]`))
	f.Add([]byte(`[{"name":"values","string":"a: [1, 2]\nb: {c: d}\n"},{"name":"helm-string-parameters","map":{"a[0]":"true"}}]`))
	f.Add([]byte(`[{"name":"values-files","array":["values.yaml","values.yaml"]},{"name":"file-parameters","map":{"t":"values.yaml"}}]`))

	root := f.TempDir()
	app := filepath.Join(root, "app")
	for name, content := range map[string]string{
		"Chart.yaml":          "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"values.yaml":         "a: 1\nlist:\n  - x: y\ns: \"true\"\nf: 1e6\n",
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  values: {{ toJson .Values | quote }}\n  release: {{ .Release.Name }}.{{ .Release.Namespace }}\n  caps: {{ .Capabilities.KubeVersion.Version }}-{{ .Capabilities.APIVersions.Has \"x/v1\" }}\n",
		"crds/crd.yaml":       "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: x.example.com\n",
		"templates/test.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t\n  annotations:\n    helm.sh/hook: test\n",
	} {
		p := filepath.Join(app, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	p := helmplugin.New(helmplugin.Options{})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := params.ParseParameters(data, "fuzz")
		if err != nil {
			return
		}
		req := &params.Request{AppName: "fuzz", RepoRoot: root, AppPath: app, Env: []string{"ARGOCD_APP_NAME=fuzz"}, Parameters: ps}
		anns, err := p.Announce(ctx, req)
		if err != nil {
			return
		}
		js, err := json.Marshal(anns)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := params.ParseAnnouncements(js, "announcement"); err != nil {
			t.Fatalf("invalid announcement for %s: %v\n%s", data, err, js)
		}
		want, err := p.Generate(ctx, req)
		if err != nil {
			return
		}
		again := *req
		again.Parameters = fromAnnouncements(anns)
		got, err := p.Generate(ctx, &again)
		if err != nil {
			t.Fatalf("parameters %s render, but their announcement does not: %v", data, err)
		}
		if !slices.Equal(want, got) {
			t.Fatalf("parameters %s: setting the announced values changes the manifests:\n%v\n%v", data, want, got)
		}
	})
}
