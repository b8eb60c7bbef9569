package layers_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/layers"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestReadDirLimits(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {values: 'x: 1'}\n"
	dir := writeFiles(t, map[string]string{"a.yaml": cm, "b.yml": cm + "---\n" + strings.Replace(cm, "name: a", "name: b", 1)})
	tests := []struct {
		name string
		lim  layers.Limits
		want string // in the error; "" for none
	}{
		{"defaults", layers.Limits{}, ""},
		{"files", layers.Limits{MaxFiles: 1}, "more than 1 YAML and JSON files"},
		{"file size", layers.Limits{MaxFileBytes: 100}, "larger than the limit of 100 bytes"},
		{"total size", layers.Limits{MaxTotalBytes: 200}, "more than 200 bytes"},
		{"objects", layers.Limits{MaxObjects: 2}, "more than 2 ConfigMaps"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := layers.ReadDir(context.Background(), dir, tc.lim)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("ReadDir: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("ReadDir error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestDirSource(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"cms.yaml": `# leading comment
---
apiVersion: v1
kind: ConfigMap
metadata: {name: first, namespace: ns}
data:
  values: |
    a: 1
---
---
apiVersion: v1
kind: ConfigMapList
items:
- metadata: {name: listed, namespace: ns}
  data: {values: "b: 2"}
`,
		"secret.json":         `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}, "data": {"values": "YTogMQ=="}, "stringData": {"secrets": "b: 2"}}`,
		"values.yaml":         "replicas: 3\n",
		"chart/templates.yml": "a: {{ .Values.x }}\n",
		".hidden/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: hidden, namespace: ns}\n",
		"notes.txt":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: txt, namespace: ns}\n",
	})
	ctx := context.Background()
	s, err := layers.ReadDir(ctx, dir, layers.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Skipped) != 1 || !strings.Contains(s.Skipped[0].Error(), "templates.yml") {
		t.Errorf("Skipped = %v, want the template", s.Skipped)
	}
	cm, err := s.ConfigMap(ctx, "ns", "first")
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["values"] != "a: 1\n" || cm.Namespace != "ns" {
		t.Errorf("ConfigMap ns/first = %+v", cm)
	}
	loc := s.Locate(layers.KindConfigMap, "ns", "first")
	if loc == nil || loc.Line(nil) != 3 || loc.Blocks["data.values"] != (layers.Block{Line: 7, Indent: 4}) {
		t.Errorf("Locate(ConfigMap ns/first) = %+v, want line 3 and a block after line 7 indented 4", loc)
	}
	if _, err := s.ConfigMap(ctx, "ns", "listed"); err != nil {
		t.Errorf("ConfigMap from a ConfigMapList: %v", err)
	}
	sec, err := s.Secret(ctx, "ns", "s")
	if err != nil {
		t.Fatal(err)
	}
	if string(sec.Data["values"]) != "a: 1" || string(sec.Data["secrets"]) != "b: 2" {
		t.Errorf("Secret data = %q", sec.Data)
	}
	for _, name := range []string{"hidden", "txt"} {
		if _, err := s.ConfigMap(ctx, "ns", name); !errors.Is(err, layers.ErrNotFound) {
			t.Errorf("ConfigMap ns/%s: error %v, want ErrNotFound", name, err)
		}
	}
	if _, err := s.Catalog(ctx, "default", "none"); !errors.Is(err, layers.ErrNotFound) {
		t.Errorf("Catalog: error %v, want ErrNotFound", err)
	}
}

func TestReadDirNotADirectory(t *testing.T) {
	dir := writeFiles(t, map[string]string{"a.yaml": "a: 1"})
	if _, err := layers.ReadDir(context.Background(), filepath.Join(dir, "a.yaml"), layers.Limits{}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("ReadDir(file) error = %v", err)
	}
	if _, err := layers.ReadDir(context.Background(), filepath.Join(dir, "nope"), layers.Limits{}); err == nil {
		t.Error("ReadDir(missing) succeeded")
	}
}

func TestReadApps(t *testing.T) {
	data := []byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: x}
---
apiVersion: application.giantswarm.io/v1alpha1
kind: App
metadata: {name: one, namespace: a}
spec: {catalog: c, name: one, namespace: a, version: 1.0.0}
---
apiVersion: application.giantswarm.io/v1alpha1
kind: App
metadata: {name: two}
spec: {catalog: c, name: two, namespace: b, version: 1.0.0, extraConfigs: [{name: e, namespace: b, priority: 7}]}
`)
	apps, err := layers.ReadApps(data, "apps.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(apps) != 2 {
		t.Fatalf("ReadApps found %d Apps, want 2", len(apps))
	}
	if got := layers.AppName(apps[1].App); got != "default/two" {
		t.Errorf("second App is %s, want default/two", got)
	}
	if apps[1].Location.Line(nil) != 10 || apps[1].App.Spec.ExtraConfigs[0].Priority != 7 {
		t.Errorf("second App at line %d, extraConfigs %+v", apps[1].Location.Line(nil), apps[1].App.Spec.ExtraConfigs)
	}
	if _, err := layers.ReadApps([]byte("apiVersion: application.giantswarm.io/v1alpha1\nkind: App\nmetadata: {namespace: x}\n"), "f.yaml"); err == nil || !strings.Contains(err.Error(), "f.yaml:1: an App without metadata.name") {
		t.Errorf("App without a name: error %v", err)
	}
	if _, err := layers.ReadApps([]byte("apiVersion: application.giantswarm.io/v1alpha1\nkind: App\nmetadata: {name: x}\nspec:\n  extraConfigs:\n  - priority: high\n"), "f.yaml"); err == nil || !strings.Contains(err.Error(), "f.yaml:6") {
		t.Errorf("priority as a string: error %v, want one at line 6", err)
	}
}
