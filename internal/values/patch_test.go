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
