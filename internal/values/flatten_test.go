package values_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/values"
)

func TestFlatten(t *testing.T) {
	tree := mustParse(t, `
image: {repository: nginx, tag: "1.25"}
ports:
  - {port: 80, name: http}
  - {port: 443}
a.b: dotted
"x[0]": bracket
"k=v,w": special
"back\\slash": bs
empty: {}
none: []
nothing: null
nested: [[1, 2], []]
`)
	want := []string{
		`a\.b`, `back\\slash`, `empty`, `image.repository`, `image.tag`,
		`k\=v\,w`, `nested[0][0]`, `nested[0][1]`, `nested[1]`, `none`, `nothing`,
		`ports[0].name`, `ports[0].port`, `ports[1].port`, `x\[0]`,
	}
	keys, vals := values.FlattenStrings(tree)
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("FlattenStrings keys mismatch (-want +got):\n%s", diff)
	}
	flat := map[string]any{}
	for i, k := range keys {
		flat[k] = vals[i]
	}
	back, err := values.UnflattenStrings(flat)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tree, back); diff != "" {
		t.Errorf("round trip mismatch (-want +got):\n%s", diff)
	}
}

func TestFlattenOrdersIndicesNumerically(t *testing.T) {
	list := make([]any, 12)
	for i := range list {
		list[i] = int64(i)
	}
	keys, _ := values.FlattenStrings(map[string]any{"l": list})
	if keys[2] != "l[2]" || keys[10] != "l[10]" {
		t.Errorf("FlattenStrings order = %v, want numeric index order", keys)
	}
}

func TestUnflattenErrors(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]any
	}{
		{"value and parent", map[string]any{"a": int64(1), "a.b": int64(2)}},
		{"empty map and child", map[string]any{"a": map[string]any{}, "a.b": int64(2)}},
		{"list and map", map[string]any{"a[0]": int64(1), "a.b": int64(2)}},
		{"bad path", map[string]any{"a[x]": int64(1)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := values.UnflattenStrings(tc.in); err == nil {
				t.Errorf("UnflattenStrings(%v) = %v, want an error", tc.in, got)
			}
		})
	}
}

func TestUnflattenIndexFirst(t *testing.T) {
	if got, err := values.Unflatten([]values.Leaf{{Path: document.Path{document.Index(0)}, Value: 1}}); err == nil {
		t.Errorf("Unflatten([0]) = %v, want an error", got)
	}
}

func TestUnflattenPadsLists(t *testing.T) {
	got, err := values.UnflattenStrings(map[string]any{"l[2]": "c", "l[0]": "a"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"l": []any{"a", nil, "c"}}, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}
