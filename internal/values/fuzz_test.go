package values_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/document/documenttest"
	"github.com/strata-dev/strata/internal/values"
)

var (
	fuzzDocs = documenttest.FuzzDocs
	canon    = documenttest.Canon
)

// FuzzMerge: merging never fails on parsed layers, gives the same values with
// and without provenance, and explains every leaf exactly once.
func FuzzMerge(f *testing.F) {
	for i := range fuzzDocs {
		f.Add([]byte(fuzzDocs[i]), []byte(fuzzDocs[(i+1)%len(fuzzDocs)]), "a.b=1")
	}
	f.Fuzz(func(t *testing.T, a, b []byte, set string) {
		var ls []*values.Layer
		for _, d := range [][]byte{a, b} {
			m, pos, err := document.Loader{Positions: true}.Parse(d, "f")
			if err != nil {
				return
			}
			ls = append(ls, &values.Layer{Name: "f", Values: m, Pos: pos})
		}
		if _, err := values.ParseSet(values.SetValue, set, nil); err == nil {
			ls = append(ls, values.Assignment{Kind: values.SetValue, Arg: set}.Layer())
		}
		plain, err := values.Merge(ls, values.MergeOptions{})
		if err != nil {
			return // an assignment may clash with the merged tree (a[0] on a map)
		}
		res, err := values.Merge(ls, values.MergeOptions{Provenance: true})
		if err != nil {
			t.Fatalf("Merge with provenance failed where plain succeeded: %v", err)
		}
		if diff := cmp.Diff(canon(plain.Values), canon(res.Values)); diff != "" {
			t.Fatalf("provenance changes the result (-plain +prov):\n%s", diff)
		}
		exps, err := res.Explain(nil, values.ExplainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, e := range exps {
			k := e.Path.String()
			if seen[k] && !e.Deleted {
				t.Fatalf("path %q explained twice", k)
			}
			seen[k] = true
		}
		for _, l := range values.Flatten(res.Values) {
			p := l.Path
			// Explanations stop at lists, which are replaced whole.
			for i, s := range p {
				if s.IsIndex {
					p = p[:i]
					break
				}
			}
			if !seen[p.String()] {
				t.Fatalf("leaf %q is not explained", l.Path.String())
			}
		}
	})
}

// FuzzFlatten: flattening and unflattening gives the tree back exactly.
func FuzzFlatten(f *testing.F) {
	for _, d := range fuzzDocs {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, err := document.Parse(data, "fuzz.yaml")
		if err != nil {
			return
		}
		keys, vals := values.FlattenStrings(tree)
		flat := make(map[string]any, len(keys))
		for i, k := range keys {
			if _, dup := flat[k]; dup {
				t.Fatalf("FlattenStrings gives key %q twice", k)
			}
			flat[k] = vals[i]
		}
		back, err := values.UnflattenStrings(flat)
		if err != nil {
			t.Fatalf("UnflattenStrings(FlattenStrings(%v)): %v", tree, err)
		}
		if diff := cmp.Diff(canon(tree), canon(back)); diff != "" {
			t.Fatalf("round trip mismatch (-in +out):\n%s", diff)
		}
	})
}

// FuzzJSONPatch: hostile patches fail cleanly and never modify the input.
func FuzzJSONPatch(f *testing.F) {
	f.Add([]byte(`[{"op":"add","path":"/a/b","value":1}]`), []byte("a: {}"))
	f.Add([]byte(`[{"op":"move","from":"/a","path":"/b"}]`), []byte("a: [1]"))
	f.Add([]byte(`[{"op":"copy","from":"/a","path":"/a/x"}]`), []byte("a: {x: 1}"))
	f.Add([]byte(`[{"op":"test","path":"/a~1b","value":1},{"op":"remove","path":"/a~1b"}]`), []byte("a/b: 1"))
	f.Add([]byte(`[{"op":"replace","path":"","value":{"z":1}}]`), []byte("a: 1"))
	f.Add([]byte(`- {op: add, path: /l/-, value: 2}`), []byte("l: [1]"))
	f.Fuzz(func(t *testing.T, patch, doc []byte) {
		p, err := values.ParseJSONPatch(patch, "p")
		if err != nil {
			return
		}
		tree, err := document.Parse(doc, "d")
		if err != nil {
			return
		}
		before := values.DeepCopy(tree)
		_, _ = p.Apply(tree)
		if diff := cmp.Diff(canon(before), canon(tree)); diff != "" {
			t.Fatalf("Apply modified its input (-before +after):\n%s", diff)
		}
	})
}
