package values_test

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

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
	if got, err := values.Unflatten([]values.Leaf{{Path: values.Path{values.Index(0)}, Value: 1}}); err == nil {
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

func TestParsePath(t *testing.T) {
	tests := []struct {
		in   string
		want values.Path
	}{
		{"a", values.Path{values.Key("a")}},
		{"", values.Path{values.Key("")}},
		{"a.b", values.Path{values.Key("a"), values.Key("b")}},
		{`a\.b`, values.Path{values.Key("a.b")}},
		{"a[0].b[1][2]", values.Path{values.Key("a"), values.Index(0), values.Key("b"), values.Index(1), values.Index(2)}},
		{"a..b", values.Path{values.Key("a"), values.Key(""), values.Key("b")}},
		{`a\\`, values.Path{values.Key(`a\`)}},
		{`\[0]`, values.Path{values.Key("[0]")}},
	}
	for _, tc := range tests {
		got, err := values.ParsePath(tc.in)
		if err != nil {
			t.Errorf("ParsePath(%q) error: %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParsePath(%q) mismatch (-want +got):\n%s", tc.in, diff)
		}
		if s := got.String(); s != tc.in {
			t.Errorf("ParsePath(%q).String() = %q", tc.in, s)
		}
	}
	for _, bad := range []string{"a[", "a[x]", "a[-1]", "a[+1]", "a[99999999]", `a\`, "a=b", "a,b", "a[0]b"} {
		if p, err := values.ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q) = %v, want an error", bad, p)
		}
	}
}

func TestEncode(t *testing.T) {
	tree := map[string]any{
		"big": mustParse(t, "x: 123456789012345678901234567890")["x"],
		"yes": "yes", "on": "On", "num": "1", "f": 1.5, "i": int64(-3), "n": nil,
		"list": []any{"a", int64(1)},
	}
	var b bytes.Buffer
	if err := values.Encode(&b, tree, values.YAML); err != nil {
		t.Fatal(err)
	}
	want := `big: 123456789012345678901234567890
f: 1.5
i: -3
list:
  - a
  - 1
"n": null
num: "1"
"on": "On"
"yes": "yes"
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("Encode YAML mismatch (-want +got):\n%s", diff)
	}
	back := mustParse(t, b.String())
	if diff := cmp.Diff(tree, back); diff != "" {
		t.Errorf("YAML round trip mismatch (-want +got):\n%s", diff)
	}
	b.Reset()
	if err := values.Encode(&b, tree, values.JSON); err != nil {
		t.Fatal(err)
	}
	back = mustParse(t, b.String())
	if diff := cmp.Diff(tree, back); diff != "" {
		t.Errorf("JSON round trip mismatch (-want +got):\n%s", diff)
	}
}
