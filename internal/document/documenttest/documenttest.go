// Package documenttest holds what the tests of document and of the packages
// above it share: seed documents for fuzz tests, the YAML cases the fast
// YAML decoders are held to their references on (yamljson, and
// helmrender.LoadValues above it), and a canonical form of value trees to
// compare them by. It is test support: the product never
// imports it.
package documenttest

import (
	"encoding/json"
	"math"
	"strconv"
)

// FuzzDocs are seed documents for fuzz tests that parse YAML or JSON:
// nesting, anchors and merge keys, big numbers, awkward keys, tags, a
// top-level list, and two documents that must not parse.
var FuzzDocs = []string{
	"", "a: 1", "a: {b: [1, {c: null}], d: x}", `{"a": [1, 2.5e10, "s"]}`,
	"base: &b {x: 1}\nc:\n  <<: *b\n  y: 2", "a: 123456789012345678901234567890",
	"'a.b': {'c[0]': 1, '': 2, 'x\\\\y': [[]]}", "a: !!binary aGVsbG8=", "- 1", "a: [", "a: 1\na: 2",
}

// Canon maps a tree to a form where numbers compare by value whatever their
// Go type (a float 2 written as YAML reads back as an integer).
func Canon(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = Canon(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = Canon(e)
		}
		return out
	case int64:
		return strconv.FormatFloat(float64(v), 'g', -1, 64) + "#" + strconv.FormatInt(v, 10)
	case float64:
		if math.IsNaN(v) {
			return "NaN"
		}
		if v == math.Trunc(v) && math.Abs(v) < 1<<63 {
			return Canon(int64(v))
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case json.Number:
		return "big#" + string(v)
	}
	return v
}
