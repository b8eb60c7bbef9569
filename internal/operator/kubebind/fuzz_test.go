package kubebind_test

import (
	"encoding/json"
	"testing"

	"github.com/strata-dev/strata/internal/operator/kubebind"
)

func FuzzParseObjects(f *testing.F) {
	for _, s := range []string{
		"apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: b, labels: {x: y}}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n",
		"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {k: v}}\n",
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}} {"apiVersion":"v1","kind":"Secret","metadata":{"name":"t"}}`,
		"a: &x [1, *x]\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := kubebind.ParseObjects(data)
		if err != nil {
			return
		}
		for _, o := range objs {
			if o.APIVersion == "" || o.Kind == "" || o.Name == "" || !json.Valid(o.JSON) || o.Value == nil {
				t.Fatalf("object %+v", o)
			}
		}
	})
}
