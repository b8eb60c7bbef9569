package module_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/hookexec"
	"github.com/strata-dev/strata/internal/operator/config"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/store"
)

var scriptEnv = []string{"PATH=/usr/bin:/bin"}

// resolve discovers the modules of files, loads cfg (ConfigMap data
// shape) into a values store and resolves which modules are enabled.
func resolve(t *testing.T, files map[string]string, cfg string) ([]module.Decision, error) {
	t.Helper()
	root := t.TempDir()
	writeTree(t, root, files)
	set, err := module.Discover([]string{filepath.Join(root, "modules")}, "", module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(set, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg != "" {
		c, err := config.Parse([]byte(cfg), "config.yaml", config.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.SetConfig(c); err != nil {
			t.Fatal(err)
		}
	}
	r := &module.Resolver{Env: scriptEnv, Timeout: time.Minute}
	return r.Resolve(context.Background(), set.Modules, st)
}

type decision struct {
	Module    string
	Enabled   bool
	ScriptRan bool
}

func brief(ds []module.Decision) []decision {
	var out []decision
	for _, d := range ds {
		out = append(out, decision{d.Module.Name, d.Enabled, d.ScriptRan})
	}
	return out
}

// The seed's first example: nginxIngressEnabled true in modules/values.yaml,
// false in the module's own values.yaml: disabled.
func TestSeedExampleValuesFiles(t *testing.T) {
	ds, err := resolve(t, map[string]string{
		"modules/values.yaml":                   "nginxIngressEnabled: true\n",
		"modules/001-nginx-ingress/values.yaml": "nginxIngressEnabled: false\n",
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]decision{{"nginx-ingress", false, false}}, brief(ds)); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
	if !strings.Contains(ds[0].Reason, "001-nginx-ingress/values.yaml") {
		t.Errorf("reason %q does not name the module's values.yaml", ds[0].Reason)
	}
}

// The seed's second example: disabled in modules/values.yaml, enabled in
// the ConfigMap, the enabled script returns false: disabled.
func TestSeedExampleConfigMapAndScript(t *testing.T) {
	root := t.TempDir()
	seen := filepath.Join(root, "seen")
	ds, err := resolve(t, map[string]string{
		"modules/values.yaml":                 "global:\n  param1: 100\nsomeModuleEnabled: false\n",
		"modules/001-some-module/values.yaml": "someModule:\n  param1: \"String\"\n",
		"modules/001-some-module/enabled": "#!/bin/sh\ncat \"$VALUES_PATH\" > " + seen + ".values\ncat \"$CONFIG_VALUES_PATH\" > " + seen + ".config\n" +
			"echo false > $MODULE_ENABLED_RESULT\n",
	}, "global: |\n  param1: 200\nsomeModule: |\n  param1: \"Long string\"\n  param2: \"FOO\"\nsomeModuleEnabled: \"true\"\n")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]decision{{"some-module", false, true}}, brief(ds)); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
	// The script saw the merged values with global.enabledModules, and the
	// config values.
	for _, tc := range []struct {
		file string
		want map[string]any
	}{
		{seen + ".values", map[string]any{
			"global":     map[string]any{"param1": 200.0, "enabledModules": []any{}},
			"someModule": map[string]any{"param1": "Long string", "param2": "FOO"},
		}},
		{seen + ".config", map[string]any{
			"global":     map[string]any{"param1": 200.0},
			"someModule": map[string]any{"param1": "Long string", "param2": "FOO"},
		}},
	} {
		data, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", filepath.Base(tc.file), diff)
		}
	}
}

// Each script sees the modules enabled before it, in module order.
func TestScriptsSeeModulesEnabledBefore(t *testing.T) {
	root := t.TempDir()
	dump := func(name, result string) string {
		return "#!/bin/sh\ncat \"$VALUES_PATH\" > " + filepath.Join(root, name) + "\necho " + result + " > \"$MODULE_ENABLED_RESULT\"\necho 'not today' > \"$MODULE_ENABLED_REASON\"\n"
	}
	ds, err := resolve(t, map[string]string{
		"modules/values.yaml":   "aEnabled: true\nbEnabled: true\ncEnabled: true\ndEnabled: true\n",
		"modules/001-a/":        "",
		"modules/002-b/enabled": dump("b", "false"),
		"modules/003-c/enabled": dump("c", "true"),
		"modules/004-d/enabled": dump("d", "true"),
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]decision{{"a", true, false}, {"b", false, true}, {"c", true, true}, {"d", true, true}}, brief(ds)); diff != "" {
		t.Errorf("decisions (-want +got):\n%s", diff)
	}
	if ds[1].Reason != "the enabled script returned false: not today" {
		t.Errorf("b's reason = %q, want the script's MODULE_ENABLED_REASON", ds[1].Reason)
	}
	for name, want := range map[string][]any{"b": {"a"}, "c": {"a"}, "d": {"a", "c"}} {
		data, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Global struct {
				EnabledModules []any `json:"enabledModules"`
			} `json:"global"`
		}
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(v.Global.EnabledModules, want) {
			t.Errorf("%s's script saw enabledModules %v, want %v", name, v.Global.EnabledModules, want)
		}
	}
}

func TestEnabledScriptErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		want   []string
		is     error
	}{
		{"exit 1", "#!/bin/sh\necho broken >&2\nexit 1\n", []string{"module m", "enabled script", "exit status 1", "broken"}, nil},
		{"bad result", "#!/bin/sh\necho maybe > $MODULE_ENABLED_RESULT\n", []string{`wrote "maybe"`, "write true or false"}, nil},
		{"no result", "#!/bin/sh\ntrue\n", []string{"wrote nothing"}, nil},
		{"result is a link", "#!/bin/sh\nrm $MODULE_ENABLED_RESULT; ln -s /etc/passwd $MODULE_ENABLED_RESULT\n", []string{"symbolic link"}, nil},
		{"flood", "#!/bin/sh\nyes\n", []string{"wrote more than 4096 bytes"}, hookexec.ErrOutputTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, map[string]string{"modules/001-m/enabled": tc.script, "modules/values.yaml": "mEnabled: true\n"})
			set, err := module.Discover([]string{filepath.Join(root, "modules")}, "", module.Options{})
			if err != nil {
				t.Fatal(err)
			}
			st, err := store.New(set, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r := &module.Resolver{Env: scriptEnv, Timeout: time.Minute, MaxOutput: 4096}
			_, err = r.Resolve(context.Background(), set.Modules, st)
			var se *module.ScriptError
			if !errors.As(err, &se) {
				t.Fatalf("Resolve = %v, want a *ScriptError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v does not match %v", err, tc.is)
			}
		})
	}
}

func TestEnabledScriptTimeout(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"modules/001-m/enabled": "#!/bin/sh\nsleep 60\n", "modules/values.yaml": "mEnabled: true\n"})
	set, err := module.Discover([]string{filepath.Join(root, "modules")}, "", module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(set, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &module.Resolver{Env: scriptEnv, Timeout: 200 * time.Millisecond, Grace: -1}
	_, err = r.Resolve(context.Background(), set.Modules, st)
	if !errors.Is(err, hookexec.ErrTimeout) {
		t.Errorf("Resolve = %v, want ErrTimeout", err)
	}
}
