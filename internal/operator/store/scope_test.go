package store_test

import (
	"errors"
	"testing"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/store"
)

// TestCheckScope: the one rule for the paths a hook's patch may touch, as
// a hook's run reports a refusal (file, line, operation, what it may
// change instead).
func TestCheckScope(t *testing.T) {
	tests := []struct {
		name  string
		kind  hook.Kind
		patch string
		want  string // "" for no error
	}{
		{"module own values", hook.Module, `[{"op":"add","path":"/certManager/a","value":1},{"op":"add","path":"/certManager","value":{}}]`, ""},
		{"module other module", hook.Module, "[{\"op\":\"add\",\"path\":\"/certManager/a\",\"value\":1},\n{\"op\":\"add\",\"path\":\"/other/a\",\"value\":1}]",
			"p line 2: operation 1 (add /other/a) is outside the module's values; a hook of module certManager may change only /certManager/..."},
		{"module global", hook.Module, `[{"op":"remove","path":"/global/a"}]`,
			"p line 1: operation 0 (remove /global/a) is outside the module's values; a hook of module certManager may change only /certManager/..."},
		{"module prefix is not the key", hook.Module, `[{"op":"add","path":"/certManagerX/a","value":1}]`,
			"p line 1: operation 0 (add /certManagerX/a) is outside the module's values; a hook of module certManager may change only /certManager/..."},
		{"module move from outside", hook.Module, `[{"op":"copy","from":"/global/a","path":"/certManager/a"}]`,
			"p line 1: operation 0 (copy /global/a) is outside the module's values; a hook of module certManager may change only /certManager/..."},
		{"global values and flags", hook.Global, `[{"op":"add","path":"/global/a","value":1},{"op":"add","path":"/certManagerEnabled","value":false}]`, ""},
		{"global module values", hook.Global, `[{"op":"add","path":"/certManager/a","value":1}]`,
			"p line 1: operation 0 (add /certManager/a) is outside the global values; a global hook may change only /global/... and the /<moduleKey>Enabled flags"},
		{"global under a flag", hook.Global, `[{"op":"add","path":"/xEnabled/a","value":1}]`,
			"p line 1: operation 0 (add /xEnabled/a) is outside the global values; a global hook may change only /global/... and the /<moduleKey>Enabled flags"},
		{"global bare Enabled", hook.Global, `[{"op":"add","path":"/Enabled","value":1}]`,
			"p line 1: operation 0 (add /Enabled) is outside the global values; a global hook may change only /global/... and the /<moduleKey>Enabled flags"},
		{"escaped key", hook.Module, `[{"op":"add","path":"/cert~1Manager/a","value":1}]`,
			"p line 1: operation 0 (add /cert~1Manager/a) is outside the module's values; a hook of module certManager may change only /certManager/..."},
		// addon-operator accepts every root key with the Enabled suffix
		// from a global hook: /globalEnabled too.
		{"global globalEnabled", hook.Global, `[{"op":"add","path":"/globalEnabled","value":true}]`, ""},
		{"module globalEnabled", hook.Module, `[{"op":"add","path":"/globalEnabled","value":true}]`,
			"p line 1: operation 0 (add /globalEnabled) is outside the module's values; a hook of module certManager may change only /certManager/..."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := hook.ParsePatch([]byte(tc.patch), "p")
			if err != nil {
				t.Fatal(err)
			}
			h := &hook.Hook{Name: "h.sh", Kind: tc.kind}
			if tc.kind == hook.Module {
				h.Module, h.ModuleKey = "cert-manager", "certManager"
			}
			err = store.CheckHookPatch(h, p, "p")
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckHookPatch: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("CheckHookPatch error = %v, want %s", err, tc.want)
			case tc.want != "" && !errors.Is(err, store.ErrScope):
				t.Errorf("CheckHookPatch error = %v, want it to wrap ErrScope", err)
			}
		})
	}
}

// TestGlobalEnabledFlag: the store takes /globalEnabled from a global
// hook as addon-operator does (a flag no module has: no module's enabled
// flag changes), with the rest of the patch; a module hook may not.
func TestGlobalEnabledFlag(t *testing.T) {
	st, set := newStore(t, map[string]string{
		"modules/001-foo/values.yaml": "foo:\n  a: 1\nfooEnabled: true\n",
	})
	res, err := st.ApplyPatch(patch(t, store.GlobalKey, "g", map[string]any{"op": "add", "path": "/globalEnabled", "value": true},
		map[string]any{"op": "add", "path": "/global/b", "value": 2}))
	if err != nil {
		t.Fatalf("ApplyPatch(/globalEnabled) = %v, want it stored", err)
	}
	if !res.Changed || len(res.Enabled) != 1 || res.Enabled[0] != "global" {
		t.Errorf("ApplyPatch(/globalEnabled) = %+v, want changed, enabled [global]", res)
	}
	if got := st.Values(store.GlobalKey)["b"]; got != int64(2) {
		t.Errorf("global.b = %v, want 2 (the rest of the patch stored)", got)
	}
	if on, from := st.EnabledFlag(set.Modules[0]); !on || from == "a global hook's patch" {
		t.Errorf("EnabledFlag(foo) = %v, %q: want foo's own flag, untouched", on, from)
	}
	_, err = st.ApplyPatch(patch(t, "foo", "h", map[string]any{"op": "add", "path": "/globalEnabled", "value": true}))
	if !errors.Is(err, store.ErrScope) {
		t.Errorf("module hook setting /globalEnabled: ApplyPatch = %v, want ErrScope", err)
	}
}
