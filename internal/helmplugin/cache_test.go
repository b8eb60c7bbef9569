package helmplugin_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/params"
)

// mutatingChart writes a chart whose rendering changes what it is given:
// templates set and unset keys of .Values (top level and nested, in the
// parent and in a subchart), the subchart can be disabled by a condition
// (Helm then drops it from the chart) and exports values the parent
// imports (Helm then writes them into the parent's values).
func mutatingChart(t *testing.T) (root string) {
	t.Helper()
	root = t.TempDir()
	app := filepath.Join(root, "app")
	write(t, filepath.Join(app, "Chart.yaml"), `apiVersion: v2
name: app
version: 1.0.0
dependencies:
  - name: sub
    version: 1.0.0
    condition: sub.enabled
    import-values:
      - child: exported
        parent: imported
`)
	write(t, filepath.Join(app, "values.yaml"), "config:\n  a: \"1\"\nlist: [x, y]\nsub:\n  enabled: true\n  color: blue\nimported:\n  own: parent\n")
	write(t, filepath.Join(app, "templates", "a.yaml"), `{{- $before := .Values | toJson }}
{{- $_ := set .Values.config "seen" "yes" }}
{{- $_ := set .Values "added" "yes" }}
{{- $_ := unset .Values "list" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
data:
  before: {{ $before | quote }}
  after: {{ .Values | toJson | quote }}
`)
	write(t, filepath.Join(app, "templates", "b.yaml"), `apiVersion: v1
kind: ConfigMap
metadata:
  name: b
data:
  values: {{ .Values | toJson | quote }}
`)
	sub := filepath.Join(app, "charts", "sub")
	write(t, filepath.Join(sub, "Chart.yaml"), "apiVersion: v2\nname: sub\nversion: 1.0.0\n")
	write(t, filepath.Join(sub, "values.yaml"), "color: red\nexported:\n  fromChild: \"yes\"\n")
	write(t, filepath.Join(sub, "templates", "s.yaml"), `{{- $before := .Values | toJson }}
{{- $_ := set .Values "color" "changed" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: sub
data:
  before: {{ $before | quote }}
`)
	return root
}

// TestChartCacheIsolation: a plugin serving a sequence of requests for the
// same chart (from its chart and document caches after the first) renders
// each exactly as a plugin with every cache off renders it alone, however
// the earlier renders changed the chart Helm was given.
func TestChartCacheIsolation(t *testing.T) {
	root := mutatingChart(t)
	ctx := context.Background()
	req := func(ps ...params.Parameter) *params.Request {
		return &params.Request{AppName: "demo", RepoRoot: root, AppPath: filepath.Join(root, "app"), Parameters: ps,
			Env: []string{"ARGOCD_APP_NAMESPACE=default"}}
	}
	set := func(kv ...string) params.Parameter {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return params.Parameter{Name: helmplugin.ParamHelmParameters, Map: m}
	}
	requests := []*params.Request{
		req(),
		req(set("sub.enabled", "false")),
		req(),
		req(set("config.b", "2", "sub.color", "green", "list[0]", "z")),
		req(),
		req(set("sub.enabled", "false", "imported.own", "other")),
		req(),
	}
	shared := helmplugin.New(helmplugin.Options{})
	var first []string
	for i, r := range requests {
		fresh := helmplugin.New(helmplugin.Options{ChartCacheEntries: -1, DocumentCacheBytes: -1, CacheEntries: -1})
		want, err := fresh.Generate(ctx, r)
		if err != nil {
			t.Fatalf("request %d, caches off: %v", i, err)
		}
		got, err := shared.Generate(ctx, r)
		if err != nil {
			t.Fatalf("request %d, shared plugin: %v", i, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("request %d renders differently from the cache (-alone +shared):\n%s", i, diff)
		}
		if i == 0 {
			first = got
		}
	}
	// The test means something only if rendering does change what Helm
	// is given, and the requests differ.
	a := docNamed(t, first, "a")
	if strings.Contains(a.Data["before"], "seen") || !strings.Contains(a.Data["after"], `"seen":"yes"`) || !strings.Contains(a.Data["after"], `"added":"yes"`) {
		t.Fatalf("the template's changes to .Values do not show: %+v", a.Data)
	}
	if len(first) != 3 {
		t.Fatalf("the chart renders %d documents, want 3 (with the subchart)", len(first))
	}
	if b := docNamed(t, first, "b"); !strings.Contains(b.Data["values"], `"fromChild":"yes"`) {
		t.Fatalf("the parent does not import the subchart's values: %+v", b.Data)
	}
	disabled, err := shared.Generate(ctx, requests[1])
	if err != nil || len(disabled) != 2 {
		t.Fatalf("with sub.enabled=false: %d documents (%v), want 2", len(disabled), err)
	}
}

type configMap struct {
	Metadata struct{ Name string }
	Data     map[string]string
}

func docNamed(t *testing.T, docs []string, name string) configMap {
	t.Helper()
	for _, d := range docs {
		var cm configMap
		if err := json.Unmarshal([]byte(d), &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Metadata.Name == name {
			return cm
		}
	}
	t.Fatalf("no document named %s in %q", name, docs)
	return configMap{}
}

// TestChartCacheSeesChanges: a change to any file of the chart (a
// template, values.yaml, a subchart's file, .helmignore, a symbolic link's
// target) is rendered, not taken from the cache.
func TestChartCacheSeesChanges(t *testing.T) {
	root := mutatingChart(t)
	app := filepath.Join(root, "app")
	p := helmplugin.New(helmplugin.Options{})
	ctx := context.Background()
	r := &params.Request{AppName: "demo", RepoRoot: root, AppPath: app}
	render := func() []string {
		t.Helper()
		out, err := p.Generate(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	write(t, filepath.Join(root, "shared", "one", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: linked-one\n")
	write(t, filepath.Join(root, "shared", "two", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: linked-two\n")
	if err := os.Symlink(filepath.Join("..", "..", "shared", "one"), filepath.Join(app, "templates", "linked")); err != nil {
		t.Fatal(err)
	}
	changes := []struct {
		name   string
		change func()
		want   string
	}{
		{"template", func() {
			write(t, filepath.Join(app, "templates", "b.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b-changed\n")
		}, `"name":"b-changed"`},
		{"values.yaml", func() {
			write(t, filepath.Join(app, "values.yaml"), "config:\n  a: \"9\"\nsub:\n  enabled: true\n")
		}, `\"a\":\"9\"`},
		{"subchart", func() {
			write(t, filepath.Join(app, "charts", "sub", "values.yaml"), "color: purple\n")
		}, `purple`},
		{"new file", func() {
			write(t, filepath.Join(app, "templates", "c.yaml"), "apiVersion: v1\nkind: Secret\nmetadata:\n  name: c\n")
		}, `"kind":"Secret"`},
		{"helmignore", func() {
			write(t, filepath.Join(app, ".helmignore"), "templates/c.yaml\n")
		}, `!"kind":"Secret"`},
		{"link target", func() {
			link := filepath.Join(app, "templates", "linked")
			if err := os.Remove(link); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join("..", "..", "shared", "two"), link); err != nil {
				t.Fatal(err)
			}
		}, `linked-two`},
	}
	render()
	for _, c := range changes {
		c.change()
		got := strings.Join(render(), "\n")
		want, absent := strings.CutPrefix(c.want, "!")
		if strings.Contains(got, want) == absent {
			t.Errorf("after changing the %s, the render does not show it (want %q):\n%s", c.name, c.want, got)
		}
	}
}
