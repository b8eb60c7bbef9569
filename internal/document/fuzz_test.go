package document_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
)

// fuzzDocs and canon are the ones of values' fuzz tests, which parse with document.
var fuzzDocs = []string{
	"", "a: 1", "a: {b: [1, {c: null}], d: x}", `{"a": [1, 2.5e10, "s"]}`,
	"base: &b {x: 1}\nc:\n  <<: *b\n  y: 2", "a: 123456789012345678901234567890",
	"'a.b': {'c[0]': 1, '': 2, 'x\\\\y': [[]]}", "a: !!binary aGVsbG8=", "- 1", "a: [", "a: 1\na: 2",
}

// canon maps a tree to a form where numbers compare by value whatever their
// Go type (a float 2 written as YAML reads back as an integer).
func canon(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = canon(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = canon(e)
		}
		return out
	case int64:
		return strconv.FormatFloat(float64(v), 'g', -1, 64) + "#" + strconv.FormatInt(v, 10)
	case float64:
		if math.IsNaN(v) {
			return "NaN"
		}
		if v == math.Trunc(v) && math.Abs(v) < 1<<63 {
			return canon(int64(v))
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case json.Number:
		return "big#" + string(v)
	}
	return v
}

// FuzzParse: any input parses or fails cleanly; what parses encodes to YAML
// and JSON that parse back to the same tree.
func FuzzParse(f *testing.F) {
	for _, d := range fuzzDocs {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, err := document.Parse(data, "fuzz.yaml")
		if err != nil {
			return
		}
		for _, format := range []document.Format{document.YAML, document.JSON} {
			var b bytes.Buffer
			if err := document.Encode(&b, tree, format); err != nil {
				if format == document.JSON {
					continue // NaN and infinities have no JSON form
				}
				t.Fatalf("Encode(%s): %v", format, err)
			}
			back, err := document.Parse(b.Bytes(), "again")
			if err != nil {
				t.Fatalf("re-parsing %s output %q: %v", format, b.String(), err)
			}
			if diff := cmp.Diff(canon(tree), canon(back)); diff != "" {
				t.Fatalf("%s round trip mismatch (-in +out):\n%s\noutput:\n%s", format, diff, b.String())
			}
		}
	})
}
