package values_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/values"
)

func mustParse(t testing.TB, s string) map[string]any {
	t.Helper()
	m, err := document.Parse([]byte(s), "test")
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return m
}

func layersOf(t testing.TB, docs ...string) []*values.Layer {
	t.Helper()
	var ls []*values.Layer
	for i, d := range docs {
		m, pos, err := document.Loader{Positions: true}.Parse([]byte(d), "")
		if err != nil {
			t.Fatal(err)
		}
		name := string(rune('A' + i))
		ls = append(ls, &values.Layer{Name: name, Source: name + ".yaml", Values: m, Pos: pos})
	}
	return ls
}

// mergeTests are the merge table; FuzzMergeMatchesHelm starts from them.
var mergeTests = []struct {
	name   string
	layers []string
	want   string
}{
	{"none", nil, "{}"},
	{"maps merge deeply", []string{"a: {b: 1, c: 2}", "a: {c: 3, d: 4}"}, "a: {b: 1, c: 3, d: 4}"},
	{"lists replaced whole", []string{"l: [1, 2, 3]", "l: [9]"}, "l: [9]"},
	{"scalar replaced", []string{"a: 1", "a: x"}, "a: x"},
	{"null deletes", []string{"a: {b: 1, c: 2}", "a: {b: null}"}, "a: {c: 2}"},
	{"null deletes subtree", []string{"a: {b: {c: 1}}", "a: null"}, "{}"},
	{"null then set again", []string{"a: 1", "a: null", "a: 2"}, "a: 2"},
	{"null with nothing below", []string{"a: null"}, "{}"},
	{"map over scalar", []string{"a: 1", "a: {b: 2}"}, "a: {b: 2}"},
	{"scalar over map", []string{"a: {b: 2}", "a: 1"}, "a: 1"},
	{"list over map", []string{"a: {b: 2}", "a: [1]"}, "a: [1]"},
	{"empty map keeps lower", []string{"a: {b: 1}", "a: {}"}, "a: {b: 1}"},
	{"empty map leaf", []string{"a: {}"}, "a: {}"},
	{"empty list replaces", []string{"a: [1]", "a: []"}, "a: []"},
	{"three layers", []string{"a: 1\nb: 1\nc: 1", "b: 2\nc: 2", "c: 3"}, "{a: 1, b: 2, c: 3}"},
}

func TestMerge(t *testing.T) {
	for _, tc := range mergeTests {
		t.Run(tc.name, func(t *testing.T) {
			for _, prov := range []bool{false, true} {
				res, err := values.Merge(layersOf(t, tc.layers...), values.MergeOptions{Provenance: prov})
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(mustParse(t, tc.want), res.Values); diff != "" {
					t.Errorf("Merge(%q, provenance=%t) mismatch (-want +got):\n%s", tc.layers, prov, diff)
				}
			}
		})
	}
}

func TestMergeDoesNotModifyLayers(t *testing.T) {
	ls := layersOf(t, "a: {b: 1, l: [1, 2]}", "a: {c: 2, b: null}")
	before := values.DeepCopy(ls[0].Values)
	before1 := values.DeepCopy(ls[1].Values)
	res, err := values.Merge(append(ls, values.Assignment{Kind: values.SetValue, Arg: "a.l[0]=9,a.d=4"}.Layer()), values.MergeOptions{Provenance: true})
	if err != nil {
		t.Fatal(err)
	}
	res.Values["a"].(map[string]any)["x"] = "mutated"
	if diff := cmp.Diff(before, ls[0].Values); diff != "" {
		t.Errorf("layer 0 modified (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before1, ls[1].Values); diff != "" {
		t.Errorf("layer 1 modified (-before +after):\n%s", diff)
	}
	want := mustParse(t, "a: {c: 2, d: 4, l: [9, 2], x: mutated}")
	if diff := cmp.Diff(want, res.Values); diff != "" {
		t.Errorf("result mismatch (-want +got):\n%s", diff)
	}
}

func TestMergeOps(t *testing.T) {
	patch, err := values.ParseJSONPatch([]byte(`[
		{"op": "replace", "path": "/image/tag", "value": "v3"},
		{"op": "add", "path": "/ports/-", "value": 443},
		{"op": "remove", "path": "/debug"}
	]`), "p.json")
	if err != nil {
		t.Fatal(err)
	}
	mp, err := values.NewMergePatch(mustParse(t, "image: {pullPolicy: null}\nextra: 1"))
	if err != nil {
		t.Fatal(err)
	}
	ls := layersOf(t, "image: {tag: v1, pullPolicy: Always}\nports: [80]\ndebug: true")
	ls = append(ls,
		&values.Layer{Name: "patch", Op: patch},
		&values.Layer{Name: "merge-patch", Op: mp},
		values.Assignment{Kind: values.SetValue, Arg: "ports[0]=8080,gone=null"}.Layer(),
	)
	for _, prov := range []bool{false, true} {
		res, err := values.Merge(ls, values.MergeOptions{Provenance: prov})
		if err != nil {
			t.Fatal(err)
		}
		want := mustParse(t, "image: {tag: v3}\nports: [8080, 443]\nextra: 1")
		if diff := cmp.Diff(want, res.Values); diff != "" {
			t.Errorf("provenance=%t: mismatch (-want +got):\n%s", prov, diff)
		}
	}
}

func TestMergeOpErrorNamesLayer(t *testing.T) {
	patch, err := values.ParseJSONPatch([]byte(`[{"op": "remove", "path": "/missing"}]`), "p.json")
	if err != nil {
		t.Fatal(err)
	}
	ls := append(layersOf(t, "a: 1"), &values.Layer{Name: "patch p.json", Op: patch})
	_, err = values.Merge(ls, values.MergeOptions{})
	if err == nil {
		t.Fatal("Merge succeeded, want an error removing a missing path")
	}
	if got := err.Error(); !strings.Contains(got, "applying patch p.json") {
		t.Errorf("error %q does not name the layer", got)
	}
	patch.IgnoreMissingRemove = true
	res, err := values.Merge(ls, values.MergeOptions{})
	if err != nil {
		t.Fatalf("IgnoreMissingRemove: %v", err)
	}
	if diff := cmp.Diff(mustParse(t, "a: 1"), res.Values); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}
