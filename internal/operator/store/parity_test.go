package store_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/store"
)

// jsonPatch makes a store.Patch of module foo's hook h from a JSON array
// of operations whose paths are relative to /foo.
func jsonPatch(t *testing.T, ops string) store.Patch {
	t.Helper()
	ops = strings.ReplaceAll(ops, `"path":"`, `"path":"/foo`)
	ops = strings.ReplaceAll(ops, `"from":"`, `"from":"/foo`)
	var list []any
	dec := json.NewDecoder(strings.NewReader(ops))
	dec.UseNumber()
	if err := dec.Decode(&list); err != nil {
		t.Fatalf("%s: %v", ops, err)
	}
	for i, o := range list {
		list[i] = fromJSON(o)
	}
	return store.Patch{Scope: "foo", Hook: "h", Ops: hookPatch(t, "h", list)}
}

func fromJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = fromJSON(e)
		}
	case []any:
		for i, e := range x {
			x[i] = fromJSON(e)
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

func jsonTree(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return fromJSON(m).(map[string]any)
}

// TestPatchSequencesParityAddonOperator runs the patch cases of
// addon-operator's values patch tests (utils/values_patch_test.go): hooks'
// patches applied one after another over a module's values give the
// values addon-operator's compacted patches give, and keep giving them
// when the config below changes.
func TestPatchSequencesParityAddonOperator(t *testing.T) {
	tests := []struct {
		name    string
		initial string // the module's values.yaml section, JSON
		patches []string
		want    string
	}{
		{"remove then add", `{"k":"old"}`, []string{`[{"op":"remove","path":"/k"}]`, `[{"op":"add","path":"/k","value":"new"}]`}, `{"k":"new"}`},
		{"add then remove", `{"k":"old"}`, []string{`[{"op":"add","path":"/k","value":"new"}]`, `[{"op":"remove","path":"/k"}]`}, `{}`},
		{"two adds", `{"k":"old"}`, []string{`[{"op":"add","path":"/k","value":"a"}]`, `[{"op":"add","path":"/k2","value":"b"}]`}, `{"k":"a","k2":"b"}`},
		{"two adds and a remove", `{"k":"old"}`, []string{`[{"op":"add","path":"/k","value":"a"}]`, `[{"op":"add","path":"/k2","value":"b"}]`, `[{"op":"remove","path":"/k"}]`}, `{"k2":"b"}`},
		{"children then the parent removed", `{"o":{}}`, []string{
			`[{"op":"add","path":"/o","value":{}}]`, `[{"op":"add","path":"/o/a","value":1}]`, `[{"op":"add","path":"/o/b","value":2}]`, `[{"op":"remove","path":"/o"}]`,
		}, `{}`},
		{"parent removed and made again", `{"o":{}}`, []string{
			`[{"op":"add","path":"/o","value":{}}]`, `[{"op":"add","path":"/o/a","value":1}]`, `[{"op":"remove","path":"/o"}]`,
			`[{"op":"add","path":"/o","value":{}}]`, `[{"op":"add","path":"/o/c","value":3}]`,
		}, `{"o":{"c":3}}`},
		{"parent made again as a list", `{"o":{}}`, []string{
			`[{"op":"add","path":"/o","value":{}}]`, `[{"op":"add","path":"/o/a","value":1}]`, `[{"op":"remove","path":"/o"}]`,
			`[{"op":"add","path":"/o","value":[]}]`, `[{"op":"add","path":"/o/0","value":"x"}]`,
		}, `{"o":["x"]}`},
		{"an object reset to empty", `{}`, []string{
			`[{"op":"add","path":"/o","value":{"p1":{"k":"v"},"p2":{"k":"v"}}}]`, `[{"op":"add","path":"/o/p1/k1","value":"a"}]`, `[{"op":"add","path":"/o/p2/k1","value":"b"}]`,
			`[{"op":"add","path":"/o","value":{}}]`,
		}, `{"o":{}}`},
		{"parents added in one patch", `{"b":"f"}`, []string{`[{"op":"add","path":"/l1","value":{}},{"op":"add","path":"/l1/l2","value":{}},{"op":"add","path":"/l1/l2/k","value":"q"}]`}, `{"b":"f","l1":{"l2":{"k":"q"}}}`},
		{"a number over a string", `{"k":""}`, []string{`[{"op":"add","path":"/k","value":123}]`}, `{"k":123}`},
		{"list built and cut", `{"r":{}}`, []string{
			`[{"op":"add","path":"/r/a","value":[]}]`,
			`[{"op":"add","path":"/r/a/-","value":"one"}]`,
			`[{"op":"add","path":"/r/a/-","value":"two"},{"op":"add","path":"/r/a/-","value":"three"},{"op":"add","path":"/r/a/-","value":"four"}]`,
			// Operations apply in turn: after removing item 1, item 2 is
			// the old item 3.
			`[{"op":"remove","path":"/r/a/1"},{"op":"remove","path":"/r/a/2"}]`,
		}, `{"r":{"a":["one","three"]}}`},
		{"an object and a list removed", `{"s":"x","o":{"c":"r"},"l":["a","b"]}`, []string{`[{"op":"remove","path":"/o"},{"op":"remove","path":"/l"}]`}, `{"s":"x"}`},
		// addon-operator refuses replace in a hook's patch ("unsupported
		// patch operation"); strata applies it as RFC 6902 does.
		{"replace", `{"a":"b"}`, []string{`[{"op":"add","path":"/o","value":{"k":0}},{"op":"replace","path":"/o/k","value":1},{"op":"replace","path":"/a","value":"c"}]`}, `{"a":"c","o":{"k":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			initial, err := json.Marshal(map[string]any{"foo": jsonTree(t, tt.initial)})
			if err != nil {
				t.Fatal(err)
			}
			st, _ := newStore(t, map[string]string{"modules/001-foo/values.yaml": string(initial)})
			for i, p := range tt.patches {
				if _, err := st.ApplyPatch(jsonPatch(t, p)); err != nil {
					t.Fatalf("patch %d: %v", i, err)
				}
			}
			want := jsonTree(t, tt.want)
			if d := cmp.Diff(want, st.Values("foo")); d != "" {
				t.Errorf("values (-want +got):\n%s", d)
			}
			// The stored patches applied again over a changed config
			// (one that adds an unrelated key) give the same values.
			if _, err := st.SetConfig(parseConfig(t, "foo: |\n  extra: 1\n")); err != nil {
				t.Fatalf("SetConfig: %v", err)
			}
			want["extra"] = int64(1)
			if d := cmp.Diff(want, st.Values("foo")); d != "" {
				t.Errorf("values over the new config (-want +got):\n%s", d)
			}
		})
	}
}

// TestPatchErrorsParityAddonOperator: what addon-operator's strict
// application refuses fails the hook, and stores nothing.
func TestPatchErrorsParityAddonOperator(t *testing.T) {
	for _, tt := range []struct {
		name, initial, patch string
	}{
		{"remove of a missing key", `{"a":"b"}`, `[{"op":"remove","path":"/k"}]`},
		{"remove below a missing parent", `{"a":"b"}`, `[{"op":"remove","path":"/p/q/k"}]`},
		{"add below a missing parent", `{"a":"b"}`, `[{"op":"add","path":"/l1/l2/k","value":"q"}]`},
		{"add a key to a string", `{"o":""}`, `[{"op":"add","path":"/o/k","value":"f"}]`},
		{"replace of a missing key", `{"a":"b"}`, `[{"op":"replace","path":"/k","value":1}]`},
		{"replace below a missing parent", `{"a":"b"}`, `[{"op":"replace","path":"/p/k","value":1}]`},
		{"replace past a list's end", `{"l":[1]}`, `[{"op":"replace","path":"/l/1","value":2}]`},
		{"add then remove of a missing key", `{}`, `[{"op":"add","path":"/k","value":"x"},{"op":"remove","path":"/k"},{"op":"add","path":"/k","value":"x"},{"op":"remove","path":"/p/none"},{"op":"add","path":"/k","value":"x"}]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			initial, _ := json.Marshal(map[string]any{"foo": jsonTree(t, tt.initial)})
			st, _ := newStore(t, map[string]string{"modules/001-foo/values.yaml": string(initial)})
			before := st.Values("foo")
			if _, err := st.ApplyPatch(jsonPatch(t, tt.patch)); err == nil {
				t.Fatalf("no error; values now %v", st.Values("foo"))
			}
			if d := cmp.Diff(before, st.Values("foo")); d != "" {
				t.Errorf("a refused patch changed the values (-before +after):\n%s", d)
			}
		})
	}
}

// TestGlobalLayersParityAddonOperator reproduces addon-operator's global
// values storage tests (models/modules/values_storage_test.go) on values
// of our own: static values, then the config schema's defaults, the
// config, the values schema's defaults (x-extend of the config schema,
// defaults inside defaults), then hooks' patches.
func TestGlobalLayersParityAddonOperator(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"modules/values.yaml": "global:\n  static: s\n",
		"global-hooks/openapi/config-values.yaml": `
type: object
default: {}
properties:
  static: {type: string}
  ha: {type: boolean}
  domains:
    type: object
    default: {}
    properties:
      template: {type: string, pattern: '^%s\.'}
      port: {type: integer, default: 443}
`,
		"global-hooks/openapi/values.yaml": `
x-extend: {schema: config-values.yaml}
type: object
default: {}
properties:
  internal:
    type: object
    default: {}
    properties:
      id: {type: string, default: gen}
      sizes:
        type: object
        default: {}
        properties:
          cpu: {type: string, default: 100m}
`,
	})
	set, err := module.Discover([]string{filepath.Join(root, "modules")}, filepath.Join(root, "global-hooks"), module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(set, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetConfig(parseConfig(t, "global: |\n  ha: true\n  domains: {template: '%s.example.org'}\n")); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"static":   "s",
		"ha":       true,
		"domains":  map[string]any{"template": "%s.example.org", "port": int64(443)},
		"internal": map[string]any{"id": "gen", "sizes": map[string]any{"cpu": "100m"}},
	}
	if d := cmp.Diff(want, st.Values(store.GlobalKey)); d != "" {
		t.Errorf("global values (-want +got):\n%s", d)
	}
	// A config the schema refuses is refused whole.
	if _, err := st.SetConfig(parseConfig(t, "global: |\n  domains: {template: 'example.org'}\n")); err == nil {
		t.Errorf("a template without the %%s placeholder was accepted")
	}
	// A hook's patch goes over the defaults.
	if _, err := st.ApplyPatch(globalPatch(t, `[{"op":"add","path":"/global/internal/sizes/cpu","value":"500m"}]`)); err != nil {
		t.Fatal(err)
	}
	want["internal"].(map[string]any)["sizes"] = map[string]any{"cpu": "500m"}
	if d := cmp.Diff(want, st.Values(store.GlobalKey)); d != "" {
		t.Errorf("global values after the patch (-want +got):\n%s", d)
	}
}

func globalPatch(t *testing.T, ops string) store.Patch {
	t.Helper()
	var list []any
	if err := json.Unmarshal([]byte(ops), &list); err != nil {
		t.Fatal(err)
	}
	return store.Patch{Scope: store.GlobalKey, Hook: "g", Ops: hookPatch(t, "g", list)}
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDisabledModuleConfigParityAddonOperator: as addon-operator, the
// config section of a disabled module, and an empty one, are kept without
// being checked; the section is checked when the module is enabled, and
// before Helm.
func TestDisabledModuleConfigParityAddonOperator(t *testing.T) {
	files := map[string]string{
		"modules/001-foo/openapi/config-values.yaml": "type: object\nrequired: [n]\nproperties:\n  n: {type: integer}\n",
	}
	st, _ := newStore(t, files)
	if _, err := st.SetConfig(parseConfig(t, "foo: |\n  n: x\n")); err != nil {
		t.Errorf("a disabled module's invalid section: %v", err)
	}
	if _, err := st.HelmValues("foo"); err == nil || !strings.Contains(err.Error(), "n: must be of type integer") {
		t.Errorf("HelmValues = %v, want the section refused", err)
	}
	if _, err := st.SetConfig(parseConfig(t, "foo: |\n  n: x\nfooEnabled: \"true\"\n")); err == nil {
		t.Error("enabling the module with an invalid section was accepted")
	}
	if _, err := st.SetConfig(parseConfig(t, "foo: \"{}\"\nfooEnabled: \"true\"\n")); err != nil {
		t.Errorf("an empty section of an enabled module: %v", err)
	}
	if _, err := st.SetConfig(parseConfig(t, "foo: |\n  n: 1\nfooEnabled: \"true\"\n")); err != nil {
		t.Errorf("a valid section: %v", err)
	}
}

// TestEnabledPrecedenceParityAddonOperator: addon-operator's extenders
// decide a module's flag in the order static (values.yaml files), dynamic
// (global hooks' patches), kube config (the config store): the last that
// sets it wins, so the config store beats a global hook.
func TestEnabledPrecedenceParityAddonOperator(t *testing.T) {
	for _, tc := range []struct {
		name   string
		static string // modules/values.yaml
		hook   string // a global hook's patch value for fooEnabled, "" for none
		config string
		want   bool
	}{
		{"static only", "fooEnabled: true\n", "", "", true},
		{"hook over static", "fooEnabled: false\n", "true", "", true},
		{"config over hook", "fooEnabled: true\n", "true", "fooEnabled: \"false\"\n", false},
		{"config over hook, enabling", "", "false", "fooEnabled: \"true\"\n", true},
		{"hook when the config is silent", "", "true", "foo: |\n  a: 1\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, set := newStore(t, map[string]string{"modules/values.yaml": tc.static, "modules/001-foo/values.yaml": ""})
			if tc.hook != "" {
				if _, err := st.ApplyPatch(globalPatch(t, `[{"op":"add","path":"/fooEnabled","value":`+tc.hook+`}]`)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.config != "" {
				if _, err := st.SetConfig(parseConfig(t, tc.config)); err != nil {
					t.Fatal(err)
				}
			}
			if got, from := st.EnabledFlag(set.Get("foo")); got != tc.want {
				t.Errorf("EnabledFlag = %v (from %s), want %v", got, from, tc.want)
			}
		})
	}
}
