package values_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/values"
)

func TestJSONPatch(t *testing.T) {
	tests := []struct {
		name, doc, patch, want string
		ignoreMissing          bool
	}{
		{"add", "a: {}", `[{"op":"add","path":"/a/b","value":1}]`, "a: {b: 1}", false},
		{"add to list end", "l: [1]", `[{"op":"add","path":"/l/-","value":2}]`, "l: [1, 2]", false},
		{"add into list", "l: [1, 3]", `[{"op":"add","path":"/l/1","value":2}]`, "l: [1, 2, 3]", false},
		{"remove", "a: {b: 1, c: 2}", `[{"op":"remove","path":"/a/b"}]`, "a: {c: 2}", false},
		{"remove missing ignored", "a: 1", `[{"op":"remove","path":"/nope"}]`, "a: 1", true},
		{"replace", "a: 1", `[{"op":"replace","path":"/a","value":"x"}]`, "a: x", false},
		{"move", "a: {b: 1}", `[{"op":"move","from":"/a/b","path":"/c"}]`, "a: {}\nc: 1", false},
		{"copy", "a: [1, 2]", `[{"op":"copy","from":"/a","path":"/b"}]`, "a: [1, 2]\nb: [1, 2]", false},
		{"test passes", "a: 1", `[{"op":"test","path":"/a","value":1},{"op":"add","path":"/b","value":2}]`, "a: 1\nb: 2", false},
		{"escaping ~1 and ~0", "'a/b': 1\n'c~d': 2", `[{"op":"replace","path":"/a~1b","value":10},{"op":"remove","path":"/c~0d"}]`, "a/b: 10", false},
		{"big integers survive", "a: 123456789012345678901234567890", `[{"op":"add","path":"/b","value":1}]`, "a: 123456789012345678901234567890\nb: 1", false},
		{"yaml patch", "a: 1", "- op: replace\n  path: /a\n  value: 2\n", "a: 2", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := values.ParseJSONPatch([]byte(tc.patch), "p.json")
			if err != nil {
				t.Fatal(err)
			}
			p.IgnoreMissingRemove = tc.ignoreMissing
			got, err := p.Apply(mustParse(t, tc.doc))
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if diff := cmp.Diff(mustParse(t, tc.want), got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJSONPatchApplyErrors(t *testing.T) {
	tests := []struct{ name, doc, patch string }{
		{"test fails", "a: 1", `[{"op":"test","path":"/a","value":2}]`},
		{"remove missing", "a: 1", `[{"op":"remove","path":"/nope"}]`},
		{"replace missing", "a: 1", `[{"op":"replace","path":"/nope","value":1}]`},
		{"add under scalar", "a: 1", `[{"op":"add","path":"/a/b","value":1}]`},
		{"root to a list", "a: 1", `[{"op":"replace","path":"","value":[1]}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := values.ParseJSONPatch([]byte(tc.patch), "p.json")
			if err != nil {
				t.Fatal(err)
			}
			doc := mustParse(t, tc.doc)
			if got, err := p.Apply(doc); !errors.Is(err, values.ErrPatch) {
				t.Errorf("Apply = %v, %v; want ErrPatch", got, err)
			}
			if diff := cmp.Diff(mustParse(t, tc.doc), doc); diff != "" {
				t.Errorf("a failed patch changed the document (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseJSONPatchErrors(t *testing.T) {
	tests := []struct{ name, patch, want string }{
		{"not a list", `{"op":"add"}`, "p.json:1: a JSON patch is a list of operations, but this is a map"},
		{"unknown op", "[{\"op\":\"add\",\"path\":\"/a\",\"value\":1},\n {\"op\":\"frob\",\"path\":\"/a\"}]", `p.json:2: operation 1: op frob is not one of add, remove, replace, move, copy, test`},
		{"missing value", `[{"op":"add","path":"/a"}]`, `p.json:1: operation 0: add needs "value"`},
		{"missing from", `[{"op":"move","path":"/a"}]`, `p.json:1: operation 0: move needs "from"`},
		{"bad pointer", `[{"op":"remove","path":"a"}]`, `p.json:1: operation 0: "path" "a" must be empty or start with /`},
		{"unknown member", `[{"op":"remove","path":"/a","value":1}]`, `p.json:1: operation 0: unknown member "value" for remove`},
		{"not a map", `[1]`, `p.json:1: operation 0: an operation is a map with op and path, not the integer 1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := values.ParseJSONPatch([]byte(tc.patch), "p.json")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseJSONPatch(%s) = %v, want %q", tc.patch, err, tc.want)
			}
		})
	}
}

func TestMergePatch(t *testing.T) {
	tests := []struct{ name, doc, patch, want string }{
		{"rfc 7386 example", "title: Goodbye!\nauthor: {givenName: John, familyName: Doe}\ntags: [example, sample]\ncontent: This will be unchanged",
			"title: Hello!\nphoneNumber: '+01-123-456-7890'\nauthor: {familyName: null}\ntags: [example]",
			"title: Hello!\nauthor: {givenName: John}\ntags: [example]\ncontent: This will be unchanged\nphoneNumber: '+01-123-456-7890'"},
		{"replaces lists", "a: [1, 2]", "a: [3]", "a: [3]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := values.NewMergePatch(mustParse(t, tc.patch))
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Apply(mustParse(t, tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(mustParse(t, tc.want), got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJSONPatchReplaceMissingAdds: with ReplaceMissingAdds a replace of a
// key its object lacks adds it (addon-operator's JSON patch library);
// without it, and where the parent is missing or a list, it fails.
func TestJSONPatchReplaceMissingAdds(t *testing.T) {
	tree := map[string]any{"a": "b", "o": map[string]any{"x": int64(1)}, "l": []any{int64(1)}}
	for _, tc := range []struct {
		name    string
		ops     []any
		lenient bool
		want    map[string]any // nil: an error
	}{
		{"strict", []any{map[string]any{"op": "replace", "path": "/k", "value": "v"}}, false, nil},
		{"missing key", []any{map[string]any{"op": "replace", "path": "/k", "value": "v"}}, true,
			map[string]any{"a": "b", "k": "v", "o": map[string]any{"x": int64(1)}, "l": []any{int64(1)}}},
		{"nested, after an add", []any{
			map[string]any{"op": "add", "path": "/n", "value": map[string]any{}},
			map[string]any{"op": "replace", "path": "/n/k~1s", "value": "v"},
			map[string]any{"op": "replace", "path": "/o/x", "value": int64(2)},
		}, true, map[string]any{"a": "b", "n": map[string]any{"k/s": "v"}, "o": map[string]any{"x": int64(2)}, "l": []any{int64(1)}}},
		{"missing parent", []any{map[string]any{"op": "replace", "path": "/p/k", "value": "v"}}, true, nil},
		{"past a list's end", []any{map[string]any{"op": "replace", "path": "/l/1", "value": "v"}}, true, nil},
		{"under a string", []any{map[string]any{"op": "replace", "path": "/a/k", "value": "v"}}, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := values.NewJSONPatch(tc.ops, "p", nil)
			if err != nil {
				t.Fatal(err)
			}
			p.ReplaceMissingAdds = tc.lenient
			got, err := p.Apply(tree)
			if tc.want == nil {
				if err == nil || !errors.Is(err, values.ErrPatch) {
					t.Fatalf("Apply = %v, %v; want an ErrPatch", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
