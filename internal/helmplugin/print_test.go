package helmplugin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/helmplugin/paritytest"
	"github.com/strata-dev/strata/internal/params"
)

// TestPrintedAsHelmTemplate checks, without the helm CLI, the values
// Argo CD reads from helm template's output for block scalars where a
// document ends: helm prints each document followed by a line break, trims
// the end of the CRDs and manifests, and Argo CD drops the last line break
// of the output and ends every line with one (see printedText). The helm
// CLI parity cases blocks*.txtar hold the same chart to helm itself.
func TestPrintedAsHelmTemplate(t *testing.T) {
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: blocks\nversion: 0.1.0\n",
		"values.yaml": "manifests: true\nhook: true\n",
		"crds/crd.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: crd-1\ndata:\n  v: |+\n    a\n\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: crd-2\ndata:\n  v: |\n    b",
		"templates/a.yaml": "{{- if .Values.manifests }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: clip\ndata:\n  v: |\n    {}\n{{- end -}}\n",
		"templates/b.yaml": "{{- if .Values.manifests }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\ndata:\n  v: |+\n    c\n\n\n{{ end }}",
		"templates/c.yaml": "{{- if .Values.hook }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hook\n  annotations:\n    helm.sh/hook: pre-install\ndata:\n  v: |+\n    d\n\n{{ end }}",
		"templates/0.yaml": "{{- if .Values.manifests }}\napiVersion: v1\r\nkind: ConfigMap\r\nmetadata:\r\n  name: crlf\r\ndata:\r\n  v: |\r\n    e\r\n{{ end }}",
	}
	root := t.TempDir()
	app := filepath.Join(root, "blocks")
	for name, content := range files {
		p := filepath.Join(app, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		set  map[string]string
		want map[string]string // ConfigMap name: data.v
	}{{
		name: "a hook ends the output",
		want: map[string]string{
			"crd-1": "a\n\n", "crd-2": "b\n", // the CRD file gains a line break
			"clip": "{}\n",  // a template without a final line break
			"crlf": "e\n",   // "\r\n" read as "\n"
			"keep": "c\n",   // the last manifest: trimmed
			"hook": "d\n\n", // the last hook: as rendered
		},
	}, {
		name: "the manifests end the output",
		set:  map[string]string{"hook": "false"},
		want: map[string]string{"crd-1": "a\n\n", "crd-2": "b\n", "clip": "{}\n", "crlf": "e\n", "keep": "c\n"},
	}, {
		name: "the CRDs end the output",
		set:  map[string]string{"hook": "false", "manifests": "false"},
		want: map[string]string{"crd-1": "a\n\n", "crd-2": "b\n"},
	}, {
		name: "a hook follows the manifests, the last is in the middle",
		set:  map[string]string{"manifests": "false"},
		want: map[string]string{"crd-1": "a\n\n", "crd-2": "b\n", "hook": "d\n\n"},
	}} {
		for _, codecs := range []document.Codecs{document.FastCodecs, document.ReferenceCodecs} {
			reference := !codecs.Fast()
			t.Run(tc.name, func(t *testing.T) {
				p := helmplugin.New(helmplugin.Options{Codecs: codecs})
				req := &params.Request{AppName: "blocks", RepoRoot: root, AppPath: app, Env: []string{"ARGOCD_APP_NAME=blocks"}}
				if tc.set != nil {
					req.Parameters = []params.Parameter{{Name: helmplugin.ParamHelmParameters, Map: tc.set}}
				}
				out, err := p.Generate(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]string{}
				for _, m := range out {
					var obj struct {
						Metadata struct{ Name string }
						Data     struct{ V string }
					}
					if err := json.Unmarshal([]byte(m), &obj); err != nil {
						t.Fatal(err)
					}
					got[obj.Metadata.Name] = obj.Data.V
				}
				for _, k := range slices.Sorted(mapKeys(tc.want)) {
					if got[k] != tc.want[k] {
						t.Errorf("reference=%v: %s: data.v = %q, want %q", reference, k, got[k], tc.want[k])
					}
				}
				if len(got) != len(tc.want) {
					t.Errorf("reference=%v: rendered %v, want %v", reference, got, tc.want)
				}
			})
		}
	}
}

// TestReferenceYAML: with the fast YAML path off, every parity case
// renders and announces the same as with it on.
func TestReferenceYAML(t *testing.T) {
	files, err := filepath.Glob("testdata/parity/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	fast := helmplugin.New(helmplugin.Options{})
	ref := helmplugin.New(helmplugin.Options{Codecs: document.ReferenceCodecs})
	ctx := context.Background()
	for _, file := range files {
		c := paritytest.Load(t, file)
		req := c.Request(t)
		want, wantErr := ref.Generate(ctx, req)
		got, gotErr := fast.Generate(ctx, req)
		if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
			t.Errorf("%s: error %v with the fast path, %v without", file, gotErr, wantErr)
		}
		if !slices.Equal(want, got) {
			t.Errorf("%s: the fast path renders\n%s\nwithout it\n%s", file, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		wantAnn, wantErr := ref.Announce(ctx, req)
		gotAnn, gotErr := fast.Announce(ctx, req)
		wj, _ := json.Marshal(wantAnn)
		gj, _ := json.Marshal(gotAnn)
		if (wantErr == nil) != (gotErr == nil) || string(wj) != string(gj) {
			t.Errorf("%s: the fast path announces %s (%v), without it %s (%v)", file, gj, gotErr, wj, wantErr)
		}
	}
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
