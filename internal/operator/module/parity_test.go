package module_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/operator/module"
)

// TestDiscoverParityAddonOperator reproduces the module loading cases of
// addon-operator's own tests (loader/fs, the static extender,
// loadGlobalValues) on trees of our own.
func TestDiscoverParityAddonOperator(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		// The common values.yaml's section is overridden key by key by
		// the module's own values.yaml.
		"a/values.yaml":             "global:\n  g: {x: 1, l: [1, 2]}\nfooBar: {replicas: 2, hello: {world: a}, keep: k}\nfooBarEnabled: true\nzedEnabled: false\nlinkedEnabled: true\n",
		"a/001-foo-bar/values.yaml": "fooBar: {replicas: 3, hello: {world: b}}\n",
		"a/zed/":                    "",
		// A second path's flags apply to modules of the first, the
		// later path winning; its global section merges after the
		// first's.
		"b/values.yaml":      "global:\n  g: {l: [3]}\nzedEnabled: true\nl2BalancerEnabled: true\n",
		"b/100-l2-balancer/": "",
		"b/.hidden/":         "",
		"b/notes.txt":        "not a module",
		"shared/001-linked/": "",
	})
	// Symbolic links to module directories are followed; the order and
	// name come from the link's name.
	if err := os.Symlink(filepath.Join(root, "shared/001-linked"), filepath.Join(root, "b/050-linked")); err != nil {
		t.Fatal(err)
	}
	set, err := module.Discover([]string{filepath.Join(root, "a"), filepath.Join(root, "b")}, "", module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := set.Names(), []string{"foo-bar", "zed", "linked", "l2-balancer"}; !cmp.Equal(got, want) {
		t.Errorf("modules %v, want %v", got, want)
	}
	type flag struct {
		On   bool
		File string
	}
	flags := map[string]*flag{}
	for _, m := range set.Modules {
		if m.CommonEnabled != nil {
			rel, _ := filepath.Rel(root, m.CommonEnabledFile)
			flags[m.Name] = &flag{*m.CommonEnabled, rel}
		}
	}
	wantFlags := map[string]*flag{
		"foo-bar":     {true, "a/values.yaml"},
		"zed":         {true, "b/values.yaml"},
		"linked":      {true, "a/values.yaml"},
		"l2-balancer": {true, "b/values.yaml"},
	}
	if d := cmp.Diff(wantFlags, flags); d != "" {
		t.Errorf("enabled flags (-want +got):\n%s", d)
	}
	fb := set.Get("foo-bar")
	if fb.Key != "fooBar" || fb.Order != 1 {
		t.Errorf("foo-bar: key %q order %d", fb.Key, fb.Order)
	}
	if d := cmp.Diff(map[string]any{"replicas": int64(2), "hello": map[string]any{"world": "a"}, "keep": "k"}, fb.CommonValues); d != "" {
		t.Errorf("common values (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]any{"replicas": int64(3), "hello": map[string]any{"world": "b"}}, fb.StaticValues); d != "" {
		t.Errorf("static values (-want +got):\n%s", d)
	}
	if l := set.Get("linked"); l.Order != 50 || l.Path != filepath.Join(root, "shared/001-linked") {
		t.Errorf("linked: order %d path %s", l.Order, l.Path)
	}
	if set.Get("zed").Order != module.DefaultUnnumberedOrder {
		t.Errorf("zed order %d", set.Get("zed").Order)
	}
	if n := len(set.Global.Static); n != 2 {
		t.Errorf("%d global static layers, want 2", n)
	}
}

// TestDiscoverNameParityAddonOperator: a directory name must be kebab-case
// that survives the trip to camelCase and back, as addon-operator checks.
func TestDiscoverNameParityAddonOperator(t *testing.T) {
	for _, tc := range []struct {
		dir, name, key string
		bad            bool
	}{
		{dir: "001-cert-manager", name: "cert-manager", key: "certManager"},
		{dir: "node-local-dns", name: "node-local-dns", key: "nodeLocalDns"},
		{dir: "010-foo_bar", bad: true},
		{dir: "010-FooBar", bad: true},
		{dir: "010-foo--bar", bad: true},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, map[string]string{"m/" + tc.dir + "/": ""})
			set, err := module.Discover([]string{filepath.Join(root, "m")}, "", module.Options{})
			if tc.bad {
				if err == nil {
					t.Fatalf("no error for %s (modules %v)", tc.dir, set.Names())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m := set.Modules[0]; m.Name != tc.name || m.Key != tc.key {
				t.Errorf("%s: name %q key %q", tc.dir, m.Name, m.Key)
			}
		})
	}
}

// TestEnabledScriptsParityAddonOperator reproduces addon-operator's
// script_enabled extender test on modules of our own: an enabled file
// without an executable bit is not run (the flag decides), a module
// without one follows its flag, a script's false disables, and later
// scripts see the modules enabled before them.
func TestEnabledScriptsParityAddonOperator(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"modules/values.yaml":   "aEnabled: true\nbEnabled: true\ncEnabled: true\ndEnabled: true\n",
		"modules/010-a/enabled": "#!/bin/sh\necho false > $MODULE_ENABLED_RESULT\n",
		"modules/020-b/":        "",
		"modules/030-c/enabled": "#!/bin/sh\necho true > $MODULE_ENABLED_RESULT\n",
		"modules/040-d/enabled": "#!/bin/sh\nexit 1\n",
	})
	// d's enabled file loses its executable bit: it is never run.
	if err := os.Chmod(filepath.Join(root, "modules/040-d/enabled"), 0o644); err != nil {
		t.Fatal(err)
	}
	set, err := module.Discover([]string{filepath.Join(root, "modules")}, "", module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d := set.Get("d"); d.EnabledScript != "" || d.NonExecutableEnabledScript != filepath.Join(root, "modules/040-d/enabled") {
		t.Errorf("d: EnabledScript %q, NonExecutableEnabledScript %q", d.EnabledScript, d.NonExecutableEnabledScript)
	}
	ds, err := (&module.Resolver{Env: scriptEnv}).Resolve(context.Background(), set.Modules, flags{"a": true, "b": true, "c": true, "d": true})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]decision{{"a", false, true}, {"b", true, false}, {"c", true, true}, {"d", true, false}}, brief(ds)); d != "" {
		t.Errorf("decisions (-want +got):\n%s", d)
	}
}

// flags is an EnabledSource of fixed flags and no values.
type flags map[string]bool

func (f flags) EnabledFlag(m *module.Module) (bool, string) { return f[m.Name], "test" }

func (f flags) ScriptValues(m *module.Module, enabled []string) (map[string]any, map[string]any) {
	return map[string]any{"global": map[string]any{"enabledModules": enabled}}, map[string]any{}
}

// TestValuesKeyParityAddonOperator: module names and values keys convert
// as addon-operator's (utils: ModuleNameToValuesKey and back).
func TestValuesKeyParityAddonOperator(t *testing.T) {
	for _, tc := range []struct{ name, key string }{
		{"module1", "module1"},
		{"grafana", "grafana"},
		{"grafana-agent", "grafanaAgent"},
		{"one-two-three", "oneTwoThree"},
		{"dns-crd", "dnsCrd"},
		{"l7-router", "l7Router"},
		{"3-items-here", "3ItemsHere"},
		{"node-pool02", "nodePool02"},
	} {
		if got := module.ValuesKey(tc.name); got != tc.key {
			t.Errorf("ValuesKey(%q) = %q, want %q", tc.name, got, tc.key)
		}
		if got := module.NameFromKey(tc.key); got != tc.name {
			t.Errorf("NameFromKey(%q) = %q, want %q", tc.key, got, tc.name)
		}
		if err := module.CheckName(tc.name); err != nil {
			t.Errorf("CheckName(%q): %v", tc.name, err)
		}
	}
	// An underscore converts, but not back: not a module name.
	if err := module.CheckName("node_pool"); err == nil {
		t.Error("CheckName(node_pool) accepted it")
	}
}

// TestExtendWithoutConfigSchemaParityAddonOperator: openapi/values.yaml's
// x-extend extends nothing when the module has no config-values.yaml, as
// in addon-operator.
func TestExtendWithoutConfigSchemaParityAddonOperator(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"m/001-a/openapi/values.yaml": "x-extend: {schema: config-values.yaml}\ntype: object\nproperties:\n  x: {type: string}\n"})
	set, err := module.Discover([]string{filepath.Join(root, "m")}, "", module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := set.Get("a").ValuesSchema
	if err := s.Validate(map[string]any{"x": "v"}); err != nil {
		t.Errorf("x: %v", err)
	}
	if err := s.Validate(map[string]any{"y": "v"}); err == nil {
		t.Error("y accepted: the schema should stay closed")
	}
}

// TestYAML11BooleansParityAddonOperator: addon-operator reads values.yaml
// files as YAML 1.1 (sigs.k8s.io/yaml), where unquoted yes, no, on, off, y
// and n are booleans; quoted ones, block scalars and keys stay strings.
func TestYAML11BooleansParityAddonOperator(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"m/values.yaml": "fooEnabled: yes\nfoo:\n  fromCommon: on\n",
		"m/001-foo/values.yaml": `foo:
  a: yes
  b: "yes"
  c: 'no'
  d: [on, off, x, Y, n]
  e: {f: NO}
  g: |
    yes
  on: kept
  h: &flag Off
  i: *flag
  j: true
  k: yess
`,
	})
	set, err := module.Discover([]string{filepath.Join(root, "m")}, "", module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	foo := set.Get("foo")
	if foo.CommonEnabled == nil || !*foo.CommonEnabled {
		t.Errorf("fooEnabled: yes read as %v", foo.CommonEnabled)
	}
	if d := cmp.Diff(map[string]any{"fromCommon": true}, foo.CommonValues); d != "" {
		t.Errorf("common values (-want +got):\n%s", d)
	}
	want := map[string]any{
		"a": true, "b": "yes", "c": "no", "d": []any{true, false, "x", true, false},
		"e": map[string]any{"f": false}, "g": "yes\n", "on": "kept", "h": false, "i": false, "j": true, "k": "yess",
	}
	if d := cmp.Diff(want, foo.StaticValues); d != "" {
		t.Errorf("values (-want +got):\n%s", d)
	}
}

// TestCELRules: a module's x-deckhouse-validations are evaluated with its
// schemas, the rule's message reaching the user.
func TestCELRules(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"m/001-a/openapi/config-values.yaml": "type: object\nproperties:\n  r: {type: integer}\nx-deckhouse-validations:\n- {expression: 'self.r > 1', message: r must be above 1}\n",
	})
	set, err := module.Discover([]string{filepath.Join(root, "m")}, "", module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := set.Get("a")
	if err := a.ConfigSchema.Validate(map[string]any{"r": int64(1)}); err == nil || !strings.Contains(err.Error(), "r must be above 1") {
		t.Errorf("Validate(r: 1) = %v, want the rule's message", err)
	}
	if err := a.ConfigSchema.Validate(map[string]any{"r": int64(2)}); err != nil {
		t.Errorf("Validate(r: 2) = %v", err)
	}
}
