package appset_test

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/generator/appset"
	"github.com/strata-dev/strata/internal/golden"
)

// TestRender runs each testdata/render/*.txtar: it renders appset.yaml,
// answering plugin generators from plugins.yaml (plugin name -> list of
// {input, output} or {input, error}; an entry without input answers any
// call), and compares the Applications (or "error: ..."), the plugin calls
// made and the warnings with the want, calls and warnings sections.
//
// It renders as the newest Argo CD (the default), and as each Argo CD
// version listed one per line in the case's versions section, whose
// sections are named with @VERSION: want@3.3, calls@3.3, warnings@3.3.
func TestRender(t *testing.T) {
	golden.Run(t, "testdata/render/*.txtar", func(t *testing.T, c golden.Case) {
		in := map[string][]byte{}
		for _, f := range c.Archive.Files {
			in[f.Name] = f.Data
		}
		versions := []string{""}
		for _, line := range strings.Split(string(in["versions"]), "\n") {
			if v := strings.TrimSpace(line); v != "" {
				versions = append(versions, v)
			}
		}
		for _, v := range versions {
			suffix := ""
			var version appset.Version
			if v != "" {
				suffix = "@" + v
				var err error
				if version, _, err = appset.ParseVersion(v); err != nil {
					t.Fatal(err)
				}
			}
			got := renderCase(t, in, version)
			for _, name := range []string{"want", "calls", "warnings"} {
				golden.Check(t, c.Path, name+suffix, got[name])
			}
		}
	})
}

// renderCase renders one case as Argo CD version v and returns its want,
// calls and warnings sections.
func renderCase(t *testing.T, in map[string][]byte, v appset.Version) map[string]string {
	t.Helper()
	fake := &fakePlugins{}
	if data, ok := in["plugins.yaml"]; ok {
		tree, err := document.Parse(data, "plugins.yaml")
		if err != nil {
			t.Fatal(err)
		}
		fake.canned = tree
	}
	out := map[string]string{"want": "", "calls": "", "warnings": ""}
	a, err := appset.Parse(in["appset.yaml"], "appset.yaml")
	if err == nil {
		r := appset.Renderer{Plugins: fake.resolve, Version: v}
		var res *appset.Result
		res, err = r.Render(context.Background(), a)
		if err == nil {
			var b bytes.Buffer
			for i, app := range res.Applications {
				if i > 0 {
					b.WriteString("---\n")
				}
				if err := document.Encode(&b, app, document.YAML); err != nil {
					t.Fatal(err)
				}
			}
			out["want"] = b.String()
			if len(res.Warnings) > 0 {
				out["warnings"] = strings.Join(res.Warnings, "\n") + "\n"
			}
		}
	}
	if err != nil {
		out["want"] = "error: " + err.Error() + "\n"
	}
	if len(fake.calls) > 0 {
		var b bytes.Buffer
		if err := document.Encode(&b, fake.calls, document.YAML); err != nil {
			t.Fatal(err)
		}
		out["calls"] = b.String()
	}
	return out
}

// fakePlugins answers plugin calls from canned responses and records them.
type fakePlugins struct {
	canned map[string]any
	mu     sync.Mutex
	calls  []any
}

func (f *fakePlugins) resolve(_ context.Context, name string) (appset.ParamsGetter, error) {
	if _, ok := f.canned[name]; !ok {
		return nil, fmt.Errorf("no plugin ConfigMap named %q in this test", name)
	}
	return &fakeGetter{f: f, name: name}, nil
}

type fakeGetter struct {
	f    *fakePlugins
	name string
}

func (g *fakeGetter) GetParams(_ context.Context, appSetName string, input map[string]any) ([]map[string]any, error) {
	g.f.mu.Lock()
	defer g.f.mu.Unlock()
	call := map[string]any{"plugin": g.name, "applicationSetName": appSetName}
	if len(input) > 0 {
		call["input"] = input
	}
	g.f.calls = append(g.f.calls, call)
	entries, _ := g.f.canned[g.name].([]any)
	for _, e := range entries {
		m, _ := e.(map[string]any)
		want, has := m["input"]
		if has && !reflect.DeepEqual(document.FromJSON(jsonRoundTrip(want)), document.FromJSON(jsonRoundTrip(input))) {
			continue
		}
		if msg, ok := m["error"].(string); ok {
			return nil, fmt.Errorf("%s", msg)
		}
		list, _ := m["output"].([]any)
		var sets []map[string]any
		for _, s := range list {
			sets = append(sets, s.(map[string]any))
		}
		return sets, nil
	}
	return nil, fmt.Errorf("no canned answer for input %v", input)
}

// jsonRoundTrip normalizes numbers so canned inputs compare with real ones.
func jsonRoundTrip(v any) any {
	var b bytes.Buffer
	if err := document.EncodeJSONValue(&b, v); err != nil {
		return v
	}
	out, _, err := document.Loader{JSON: true}.ParseAny(b.Bytes(), "json")
	if err != nil {
		return v
	}
	return out
}
