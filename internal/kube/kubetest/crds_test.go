package kubetest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/kube/kubetest"
)

const crdDoc = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s
`

func crd(name string) string { return strings.Replace(crdDoc, "%s", name, 1) }

func TestParseCRDs(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string // name@line
		wantErr string
	}{
		{name: "one", in: crd("a.x.io"), want: []string{"a.x.io@1"}},
		{name: "leading separator", in: "---\n" + crd("a.x.io"), want: []string{"a.x.io@2"}},
		{name: "two with comments", in: "# head\n" + crd("a.x.io") + "---\n# b\n" + crd("b.x.io"), want: []string{"a.x.io@2", "b.x.io@8"}},
		{name: "empty documents skipped", in: "---\n---\n\n---\n" + crd("a.x.io") + "---\n", want: []string{"a.x.io@5"}},
		{name: "content after separator", in: "--- " + strings.ReplaceAll(strings.TrimSpace(crd("a.x.io")), "\n", "\n  "), wantErr: "in.yaml:1"},
		{name: "flow mapping after separator", in: `--- {apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition, metadata: {name: a.x.io}}`, want: []string{"a.x.io@1"}},
		{name: "crlf", in: strings.ReplaceAll(crd("a.x.io")+"---\n"+crd("b.x.io"), "\n", "\r\n"), want: []string{"a.x.io@1", "b.x.io@6"}},
		{name: "json", in: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"j.x.io"}}`, want: []string{"j.x.io@1"}},
		{name: "other kind", in: crd("a.x.io") + "---\napiVersion: v1\nkind: ConfigMap\n", wantErr: `in.yaml:6: apiVersion "v1" kind "ConfigMap": want apiextensions.k8s.io/v1 CustomResourceDefinition`},
		{name: "old version", in: strings.Replace(crd("a.x.io"), "/v1", "/v1beta1", 1), wantErr: `in.yaml:1: apiVersion "apiextensions.k8s.io/v1beta1"`},
		{name: "no name", in: "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n", wantErr: "in.yaml:1: CustomResourceDefinition without metadata.name"},
		{name: "not a mapping", in: "---\n- a\n- b\n", wantErr: "in.yaml:2: want a YAML mapping"},
		{name: "bad yaml", in: crd("a.x.io") + "---\nkind: [\n", wantErr: "in.yaml:6: parsing YAML"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kubetest.ParseCRDs("in.yaml", []byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseCRDs(%q) error = %v, want %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseCRDs(%q): %v", tc.in, err)
			}
			var names []string
			for _, c := range got {
				names = append(names, fmt.Sprintf("%s@%d", c.Object.GetName(), c.Line))
			}
			if strings.Join(names, " ") != strings.Join(tc.want, " ") {
				t.Errorf("ParseCRDs(%q) = %v, want %v", tc.in, names, tc.want)
			}
		})
	}
}

func TestReadCRDs(t *testing.T) {
	got, err := kubetest.ReadCRDs("testdata/crds")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Object.GetName() != "widgets.kubetest.strata.dev" || got[0].Line != 2 || got[1].Line != 27 ||
		got[1].File != filepath.Join("testdata", "crds", "widgets.yaml") {
		t.Errorf("ReadCRDs(testdata/crds) = %+v, want widgets@2 and gadgets@27 of testdata/crds/widgets.yaml", got)
	}

	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "notes.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{empty, "no .yaml, .yml or .json file in " + empty},
		{"testdata/missing", "testdata/missing: no such file"},
	} {
		if _, err := kubetest.ReadCRDs(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadCRDs(%s) error = %v, want %q", tc.path, err, tc.want)
		}
	}
}

func FuzzParseCRDs(f *testing.F) {
	f.Add([]byte(crd("a.x.io") + "---\n" + crd("b.x.io")))
	f.Add([]byte("--- {kind: CustomResourceDefinition}\n---\n- 1\n"))
	f.Add([]byte("---\r\n---\t# c\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		crds, err := kubetest.ParseCRDs("f.yaml", data)
		if err != nil {
			return
		}
		lines := strings.Count(string(data), "\n") + 1
		for _, c := range crds {
			if c.Object.GetName() == "" || c.Object.GetKind() != "CustomResourceDefinition" {
				t.Errorf("ParseCRDs accepted %v", c.Object)
			}
			if c.Line < 1 || c.Line > lines {
				t.Errorf("ParseCRDs: line %d outside 1..%d", c.Line, lines)
			}
		}
	})
}
