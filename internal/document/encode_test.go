package document_test

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
)

func TestEncode(t *testing.T) {
	tree := map[string]any{
		"big": mustParse(t, "x: 123456789012345678901234567890")["x"],
		"yes": "yes", "on": "On", "num": "1", "f": 1.5, "i": int64(-3), "n": nil,
		"list": []any{"a", int64(1)},
	}
	var b bytes.Buffer
	if err := document.Encode(&b, tree, document.YAML); err != nil {
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
	if err := document.Encode(&b, tree, document.JSON); err != nil {
		t.Fatal(err)
	}
	back = mustParse(t, b.String())
	if diff := cmp.Diff(tree, back); diff != "" {
		t.Errorf("JSON round trip mismatch (-want +got):\n%s", diff)
	}
}

func mustParse(t testing.TB, s string) map[string]any {
	t.Helper()
	m, err := document.Parse([]byte(s), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSizeExceeds(t *testing.T) {
	tree := map[string]any{"abc": []any{"12345", int64(7), map[string]any{"k": nil}}}
	var b bytes.Buffer
	if err := document.Encode(&b, tree, document.JSON); err != nil {
		t.Fatal(err)
	}
	compact := int64(len(`{"abc":["12345",7,{"k":null}]}`))
	for _, tc := range []struct {
		max  int64
		want bool
	}{{0, true}, {5, true}, {10, true}, {compact, false}, {int64(b.Len()), false}, {1 << 20, false}} {
		if got := document.SizeExceeds(tree, tc.max); got != tc.want {
			t.Errorf("SizeExceeds(%v, %d) = %t, want %t", tree, tc.max, got, tc.want)
		}
	}
}

func TestEncodeValue(t *testing.T) {
	type item struct {
		Name  string            `json:"name"`
		Count int64             `json:"count,omitempty"`
		Big   uint64            `json:"big"`
		Tags  map[string]string `json:"tags,omitempty"`
	}
	var b bytes.Buffer
	if err := document.EncodeValue(&b, []item{{Name: "yes", Count: 2, Big: 1 << 63, Tags: map[string]string{"b": "1", "a": "on"}}, {Name: "x"}}); err != nil {
		t.Fatal(err)
	}
	const want = `- big: 9223372036854775808
  count: 2
  name: "yes"
  tags:
    a: "on"
    b: "1"
- big: 0
  name: x
`
	if b.String() != want {
		t.Errorf("EncodeValue() =\n%s\nwant\n%s", b.String(), want)
	}
}
