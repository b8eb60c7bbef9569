package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/operator/config"
	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/store"
	"github.com/strata-dev/strata/internal/schema"
	"github.com/strata-dev/strata/internal/values"
)

func newStore(t *testing.T, files map[string]string) (*store.Store, *module.Set) {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := module.Discover([]string{filepath.Join(root, "modules")}, "", module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(set, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st, set
}

func patch(t *testing.T, scope, hook string, ops ...map[string]any) store.Patch {
	t.Helper()
	list := make([]any, len(ops))
	for i, o := range ops {
		list[i] = o
	}
	return store.Patch{Scope: scope, Hook: hook, Ops: hookPatch(t, hook, list)}
}

// hookPatch is ops as a hook's patch file gives them (hook.ParsePatch).
func hookPatch(t testing.TB, source string, ops []any) hook.Patch {
	t.Helper()
	data, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	p, err := hook.ParsePatch(data, source)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func parseConfig(t *testing.T, text string) *config.Config {
	t.Helper()
	c, err := config.Parse([]byte(text), "config.yaml", config.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Hook patches stay applied over a new config: the config changes the
// layer below them.
func TestPatchesSurviveConfigChange(t *testing.T) {
	st, _ := newStore(t, map[string]string{"modules/001-foo/values.yaml": "foo:\n  a: 1\n  b: 1\n"})
	if _, err := st.ApplyPatch(patch(t, "foo", "h", map[string]any{"op": "add", "path": "/foo/b", "value": int64(2)},
		map[string]any{"op": "remove", "path": "/foo/a"})); err != nil {
		t.Fatal(err)
	}
	changed, err := st.SetConfig(parseConfig(t, "foo: |\n  c: 3\n  b: 9\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(changed, []string{"foo"}) {
		t.Errorf("SetConfig changed %v, want [foo]", changed)
	}
	want := map[string]any{"b": int64(2), "c": int64(3)}
	if diff := cmp.Diff(want, st.Values("foo")); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	// The config no longer holds a: the stored remove is no error now.
	if _, err := st.SetConfig(parseConfig(t, "")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"b": int64(2)}, st.Values("foo")); diff != "" {
		t.Errorf("values after the config emptied (-want +got):\n%s", diff)
	}
}

func TestHookValues(t *testing.T) {
	st, _ := newStore(t, map[string]string{
		"modules/values.yaml":         "global:\n  g: 1\n",
		"modules/001-foo/values.yaml": "foo:\n  a: 1\n",
	})
	st.SetConfig(parseConfig(t, "global: |\n  c: 1\nfoo: |\n  x: 2\n"))
	got := st.HookValues("foo", []string{"foo"})
	want := map[string]any{
		"global": map[string]any{"g": int64(1), "c": int64(1), "enabledModules": []any{"foo"}},
		"foo":    map[string]any{"a": int64(1), "x": int64(2)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("HookValues (-want +got):\n%s", diff)
	}
	if _, ok := st.Values("global")["enabledModules"]; ok {
		t.Error("HookValues changed the stored global values")
	}
	if diff := cmp.Diff(map[string]any{"global": map[string]any{"g": int64(1), "c": int64(1)}}, st.HookValues("global", nil)); diff != "" {
		t.Errorf("HookValues(global) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"global": map[string]any{"c": int64(1)}, "foo": map[string]any{"x": int64(2)}}, st.ConfigValues("foo")); diff != "" {
		t.Errorf("ConfigValues (-want +got):\n%s", diff)
	}
	helm, err := st.HelmValues("foo")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := helm["global"].(map[string]any)["enabledModules"]; ok {
		t.Error("HelmValues has global.enabledModules")
	}
}

func TestPatchErrors(t *testing.T) {
	st, _ := newStore(t, map[string]string{
		"modules/001-foo/values.yaml":         "foo:\n  a: 1\n",
		"modules/001-foo/openapi/values.yaml": "type: object\nproperties:\n  a: {type: integer}\n",
	})
	var se *store.SectionError
	_, err := st.ApplyPatch(patch(t, "foo", "h", map[string]any{"op": "add", "path": "/foo/b", "value": 1}))
	var ve *schema.ValidationError
	if !errors.As(err, &se) || se.Section != "foo" || !errors.As(err, &ve) || ve.Errors[0].Rule != "additionalProperties" {
		t.Errorf("unknown key: ApplyPatch = %v, want a SectionError for foo wrapping an additionalProperties ValidationError", err)
	}
	_, err = st.ApplyPatch(patch(t, "foo", "h", map[string]any{"op": "remove", "path": "/foo/zz"}))
	if !errors.Is(err, values.ErrPatch) {
		t.Errorf("remove of a missing key: ApplyPatch = %v, want ErrPatch", err)
	}
	_, err = st.ApplyPatch(patch(t, "foo", "h", map[string]any{"op": "add", "path": "/fooEnabled", "value": true}))
	if !errors.Is(err, store.ErrScope) {
		t.Errorf("module hook setting its enabled flag: ApplyPatch = %v, want ErrScope", err)
	}
	_, err = st.ApplyPatch(patch(t, "foo", "h", map[string]any{"op": "add", "path": "/foo", "value": "x"}))
	if err == nil {
		t.Error("replacing the section by a string succeeded")
	}
	if got := st.Patches("foo"); len(got) != 0 {
		t.Errorf("after failed patches, %d stored, want 0", len(got))
	}
	if diff := cmp.Diff(map[string]any{"a": int64(1)}, st.Values("foo")); diff != "" {
		t.Errorf("values after failed patches (-want +got):\n%s", diff)
	}
}

func TestMaxPatchOps(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "modules/001-foo"), 0o755)
	set, err := module.Discover([]string{filepath.Join(root, "modules")}, "", module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(set, store.Options{MaxPatchOps: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyPatch(patch(t, "foo", "h", map[string]any{"op": "add", "path": "/foo/l", "value": []any{}})); err != nil {
		t.Fatal(err)
	}
	var last error
	for i := range 4 {
		_, last = st.ApplyPatch(patch(t, "foo", "h", map[string]any{"op": "add", "path": "/foo/l/-", "value": i}))
	}
	if last == nil {
		t.Error("the fourth list append succeeded over a limit of 3 operations")
	}
	// Setting the same key again and again stays within the limit.
	for i := range 10 {
		if _, err := st.ApplyPatch(patch(t, "foo", "h", map[string]any{"op": "add", "path": "/foo/l", "value": []any{i}})); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	files := map[string]string{}
	for i := range 8 {
		files[fmt.Sprintf("modules/%03d-m%d/values.yaml", i, i)] = fmt.Sprintf("m%d:\n  n: 0\n", i)
	}
	st, set := newStore(t, files)
	var wg sync.WaitGroup
	for _, m := range set.Modules {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				if _, err := st.ApplyPatch(patch(t, m.Key, "h", map[string]any{"op": "add", "path": "/" + m.Key + "/n", "value": i})); err != nil {
					t.Error(err)
				}
				_ = st.HookValues(m.Key, []string{m.Name})
				if _, err := st.HelmValues(m.Key); err != nil {
					t.Error(err)
				}
				st.EnabledFlag(m)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 20 {
			if _, err := st.SetConfig(parseConfig(t, fmt.Sprintf("global: |\n  i: %d\n", i))); err != nil {
				t.Error(err)
			}
		}
	}()
	wg.Wait()
	for _, m := range set.Modules {
		if got := st.Values(m.Key)["n"]; got != int64(19) {
			t.Errorf("%s.n = %v, want 19", m.Key, got)
		}
		if n := len(st.Patches(m.Key)); n != 1 {
			t.Errorf("%s keeps %d patches, want 1 (compacted)", m.Key, n)
		}
	}
}

// ValidateConfig refuses what SetConfig refuses, and changes nothing.
func TestValidateConfigMatchesSetConfig(t *testing.T) {
	st, _ := newStore(t, map[string]string{
		"modules/values.yaml":                        "fooEnabled: true\n",
		"modules/001-foo/openapi/config-values.yaml": "type: object\nproperties:\n  n: {type: integer}\n",
		"modules/001-foo/openapi/values.yaml":        "x-extend: {schema: config-values.yaml}\ntype: object\nrequired: [n, m]\nproperties:\n  m: {type: integer, default: 1}\n",
	})
	for _, tc := range []struct {
		config string
		ok     bool
	}{
		{"foo: |\n  n: 1\n", true},
		{"foo: |\n  n: x\n", false},     // config-values.yaml
		{"foo: |\n  other: 1\n", false}, // config-values.yaml: additionalProperties
		// values.yaml's required n is not checked against the config (a
		// hook may fill it), as addon-operator: before Helm it is.
		{"foo: \"{}\"\n", true},
	} {
		cfg := parseConfig(t, tc.config)
		verr := st.ValidateConfig(cfg)
		if (verr == nil) != tc.ok {
			t.Errorf("ValidateConfig(%q) = %v, want ok %v", tc.config, verr, tc.ok)
		}
		if st.Values("foo")["n"] != nil {
			t.Errorf("ValidateConfig(%q) changed the values", tc.config)
		}
		st2, _ := newStore(t, map[string]string{
			"modules/values.yaml":                        "fooEnabled: true\n",
			"modules/001-foo/openapi/config-values.yaml": "type: object\nproperties:\n  n: {type: integer}\n",
			"modules/001-foo/openapi/values.yaml":        "x-extend: {schema: config-values.yaml}\ntype: object\nrequired: [n, m]\nproperties:\n  m: {type: integer, default: 1}\n",
		})
		if _, serr := st2.SetConfig(cfg); (serr == nil) != (verr == nil) {
			t.Errorf("config %q: SetConfig = %v but ValidateConfig = %v", tc.config, serr, verr)
		}
	}
}

// Copies of a key into itself double the values each time: the store
// refuses a patch that grows them past its limit.
func TestPatchCopyBomb(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "modules/001-foo"), 0o755)
	os.WriteFile(filepath.Join(root, "modules/001-foo/values.yaml"), []byte("foo:\n  a: {x: 1}\n"), 0o644)
	set, err := module.Discover([]string{filepath.Join(root, "modules")}, "", module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(set, store.Options{MaxValuesBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	ops := []map[string]any{}
	for i := range 40 {
		ops = append(ops, map[string]any{"op": "copy", "from": "/foo/a", "path": fmt.Sprintf("/foo/a/k%d", i)})
	}
	_, err = st.ApplyPatch(patch(t, "foo", "bomb", ops...))
	if !errors.Is(err, values.ErrPatch) {
		t.Errorf("ApplyPatch of 40 self-copies = %v, want an error matching ErrPatch", err)
	}
	if len(st.Patches("foo")) != 0 {
		t.Error("the refused patch was stored")
	}
}

// A patch that sets a key to the value it has is no change, even when the
// JSON round trip of a patch turns the static 1.0 into 1.
func TestPatchSameValueIsNoChange(t *testing.T) {
	st, _ := newStore(t, map[string]string{"modules/001-foo/values.yaml": "foo:\n  ratio: 1.0\n  n: 2\n"})
	for i := range 3 {
		res, err := st.ApplyPatch(patch(t, "foo", "h", map[string]any{"op": "add", "path": "/foo/n", "value": int64(2)}))
		if err != nil {
			t.Fatal(err)
		}
		if res.Changed {
			t.Errorf("run %d: setting n to its value changed the values", i)
		}
	}
	if changed, err := st.SetConfig(parseConfig(t, "")); err != nil || len(changed) != 0 {
		t.Errorf("SetConfig of the same (empty) config = %v, %v; want no change", changed, err)
	}
}

// CONFIG_VALUES_PATH as addon-operator fills it: no global key gives
// global: null; a module the config does not mention gives null, one it
// mentions only by a flag or maintenance state {}.
func TestConfigValuesAbsentSections(t *testing.T) {
	st, _ := newStore(t, map[string]string{
		"modules/001-foo/values.yaml": "foo:\n  a: 1\n",
		"modules/002-bar/values.yaml": "bar:\n  a: 1\n",
		"modules/003-baz/values.yaml": "baz:\n  a: 1\n",
	})
	for _, tc := range []struct {
		name, config, key string
		want              map[string]any
	}{
		{"nothing", "", "foo", map[string]any{"global": nil, "foo": nil}},
		{"global hook, nothing", "", "global", map[string]any{"global": nil}},
		{"empty global text", "global: ''\n", "global", map[string]any{"global": map[string]any{}}},
		{"flag only", "fooEnabled: \"true\"\n", "foo", map[string]any{"global": nil, "foo": map[string]any{}}},
		{"maintenance only", "barMaintenance: NoResourceReconciliation\n", "bar", map[string]any{"global": nil, "bar": map[string]any{}}},
		{"empty section", "baz: ''\nglobal: |\n  g: 1\n", "baz", map[string]any{"global": map[string]any{"g": int64(1)}, "baz": map[string]any{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := st.SetConfig(parseConfig(t, tc.config)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, st.ConfigValues(tc.key)); diff != "" {
				t.Errorf("ConfigValues(%s) (-want +got):\n%s", tc.key, diff)
			}
		})
	}
}

// A config store key of a module that does not exist is refused, naming
// the module meant when it is a typo (docs/operator.md).
func TestUnknownModuleKeys(t *testing.T) {
	st, _ := newStore(t, map[string]string{
		"modules/001-nginx/values.yaml":        "nginx:\n  replicas: 1\n",
		"modules/002-cert-manager/values.yaml": "certManager: {}\n",
	})
	for _, tc := range []struct {
		name, config, want string
	}{
		{"known", "nginx: |\n  replicas: 2\nnginxEnabled: \"true\"\ncertManagerMaintenance: \"\"\n", ""},
		{"section typo", "ngnix: |\n  replicas: 2\n", `unknown module: config store config.yaml:1: ngnix: no module has the values key "ngnix"; did you mean nginx? (remove the key, or add the module)`},
		{"flag typo", "ngnixEnabled: \"false\"\n", `unknown module: config store config.yaml: ngnixEnabled: no module has the values key "ngnix"; did you mean nginxEnabled? (remove the key, or add the module)`},
		{"maintenance typo", "certmanagerMaintenance: NoResourceReconciliation\n", `unknown module: config store config.yaml: certmanagerMaintenance: no module has the values key "certmanager"; did you mean certManagerMaintenance? (remove the key, or add the module)`},
		{"nothing close", "dashboard: |\n  a: 1\n", `unknown module: config store config.yaml:1: dashboard: no module has the values key "dashboard"; the modules' keys are certManager, nginx (remove the key, or add the module)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := st.ValidateConfig(parseConfig(t, tc.config))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("ValidateConfig: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.want {
				t.Fatalf("ValidateConfig error:\n got %v\nwant %s", err, tc.want)
			}
			if !errors.Is(err, store.ErrUnknownModule) {
				t.Errorf("error %v does not wrap ErrUnknownModule", err)
			}
			if _, serr := st.SetConfig(parseConfig(t, tc.config)); serr == nil {
				t.Error("SetConfig accepted what ValidateConfig refused")
			}
		})
	}
}

// TestCELTransitionRules: x-deckhouse-validations rules see the values a
// patch replaces, and the config section a new config replaces, as
// oldSelf (addon-operator's immutability rules); plain rules see self.
func TestCELTransitionRules(t *testing.T) {
	immutable := "x-deckhouse-validations:\n- {expression: 'self.mode == oldSelf.mode', message: mode is immutable}\n- {expression: 'self.mode != \"bad\"', message: mode must not be bad}\n"
	st, _ := newStore(t, map[string]string{
		"modules/001-foo/values.yaml":                "foo:\n  mode: a\n",
		"modules/001-foo/openapi/values.yaml":        "type: object\nproperties:\n  mode: {type: string}\n" + immutable,
		"modules/002-bar/openapi/config-values.yaml": "type: object\nproperties:\n  mode: {type: string}\n" + immutable,
	})
	_, err := st.ApplyPatch(patch(t, "foo", "h", map[string]any{"op": "replace", "path": "/foo/mode", "value": "b"}))
	if err == nil || !containsAll(err.Error(), "mode is immutable") {
		t.Errorf("patch changing mode: ApplyPatch = %v, want the transition rule's message", err)
	}
	if _, err := st.ApplyPatch(patch(t, "foo", "h", map[string]any{"op": "replace", "path": "/foo/mode", "value": "a"})); err != nil {
		t.Errorf("patch keeping mode: ApplyPatch = %v", err)
	}

	// The first config has no old section: only the plain rule applies.
	if _, err := st.SetConfig(parseConfig(t, "barEnabled: \"true\"\nbar: {mode: x}\n")); err != nil {
		t.Fatalf("first config: %v", err)
	}
	err = st.ValidateConfig(parseConfig(t, "barEnabled: \"true\"\nbar: {mode: y}\n"))
	if err == nil || !containsAll(err.Error(), "bar", "mode is immutable") {
		t.Errorf("config changing bar.mode: ValidateConfig = %v, want the transition rule's message", err)
	}
	err = st.ValidateConfig(parseConfig(t, "barEnabled: \"true\"\nbar: {mode: bad}\n"))
	if err == nil || !containsAll(err.Error(), "mode must not be bad", "mode is immutable") {
		t.Errorf("config: ValidateConfig = %v, want both rules' messages", err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
