package store_test

import (
	"reflect"
	"testing"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/store"
)

// FuzzApplyPatch applies any patch a hook could write, to a module and to
// the global section: a patch is stored whole or not at all, and what is
// stored matches the schema.
func FuzzApplyPatch(f *testing.F) {
	for _, s := range []string{
		`[{"op":"add","path":"/foo/a","value":1}]`,
		`[{"op":"remove","path":"/foo/n"}]`,
		`[{"op":"add","path":"/global/g","value":1},{"op":"add","path":"/fooEnabled","value":true}]`,
		`[{"op":"add","path":"/fooEnabled","value":true},{"op":"add","path":"/global/g","value":"x"}]`,
		`[{"op":"move","from":"/foo/n","path":"/foo/m"}]`,
		`[{"op":"add","path":"/foo/l/-","value":1}]`,
		`[{"op":"replace","path":"/foo","value":{}}]`,
		`[{"op":"test","path":"/foo/n","value":1}]`,
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, data string, global bool) {
		p, err := hook.ParsePatch([]byte(data), "patch.json")
		if err != nil {
			return
		}
		st, _ := newStore(t, map[string]string{
			"modules/001-foo/values.yaml":         "foo:\n  n: 1\n  l: []\n",
			"modules/001-foo/openapi/values.yaml": "type: object\nproperties:\n  n: {type: integer}\n  m: {type: integer}\n  a: {type: integer}\n  l: {type: array, items: {type: integer}}\n",
		})
		scope := "foo"
		if global {
			scope = store.GlobalKey
		}
		beforeVals, beforeFoo := st.Values(scope), st.Values("foo")
		res, err := st.ApplyPatch(store.Patch{Scope: scope, Hook: "fuzz", Ops: p})
		if err != nil {
			if !reflect.DeepEqual(st.Values(scope), beforeVals) || !reflect.DeepEqual(st.Values("foo"), beforeFoo) || len(st.Patches(scope)) != 0 {
				t.Fatalf("a rejected patch changed the store: %v", err)
			}
			return
		}
		if !global {
			if _, herr := st.HelmValues("foo"); herr != nil {
				t.Fatalf("a stored patch left values the schema refuses: %v", herr)
			}
		}
		if res.Changed == reflect.DeepEqual(st.Values(scope), beforeVals) {
			t.Fatalf("Result.Changed = %v but the values changed: %v", res.Changed, !res.Changed)
		}
	})
}
