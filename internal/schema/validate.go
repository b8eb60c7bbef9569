package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"

	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"

	"github.com/strata-dev/strata/internal/document"
)

// rootToken is the path kube-openapi is given for the root; every path in
// its errors starts with it.
const rootToken = "$"

// validateValue validates v with kube-openapi and returns its errors,
// shaped and sorted together with extra (the CEL rules' errors).
func validateValue(s *spec.Schema, v any, extra ...fieldError) []FieldError {
	var bad []fieldError
	norm, _ := normalize(v, nil, &bad)
	if len(bad) > 0 {
		return finish(bad)
	}
	res := validate.NewSchemaValidator(s, nil, rootToken, strfmt.Default).Validate(norm)
	if res == nil || len(res.Errors) == 0 {
		if len(extra) == 0 {
			return nil
		}
		return finish(extra)
	}
	return finish(append(shape(res.Errors, v), extra...))
}

// maxExactFloat is the largest magnitude up to which every integer is a
// float64.
const maxExactFloat = 1 << 53

var bigIntegerRe = regexp.MustCompile(`^-?[0-9]+$`)

// normalize prepares a tree for kube-openapi, copying only what changes:
//
//   - integers within ±2^53 become float64. kube-openapi checks enums by
//     reflect conversion, which turns int64(97) into "a" and so matches
//     enum ["a"]; float64 cannot convert to string. Integral floats still
//     pass type: integer.
//   - json.Number (an integer beyond int64) becomes the nearest float64;
//     the type errors this causes for integer schemas are dropped when
//     errors are shaped.
//   - other Go integer and float types are accepted as the tree types.
//
// NaN, infinities and values of types a tree cannot hold are reported in
// bad.
func normalize(v any, path document.Path, bad *[]fieldError) (any, bool) {
	switch x := v.(type) {
	case nil, bool, string:
		return v, false
	case map[string]any:
		return normalizeMap(x, path, bad)
	case []any:
		return normalizeList(x, path, bad)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			*bad = append(*bad, fieldError{path: path, rule: "type", msg: fmt.Sprintf("%v is not a valid JSON number", x)})
		}
		return v, false
	case float32:
		return normalize(float64(x), path, bad)
	case json.Number:
		return normalizeNumber(x), true
	}
	if n, ok := asInt64(v); ok {
		return normalizeInt(n), true
	}
	if u, ok := v.(uint64); ok {
		return float64(u), true
	}
	*bad = append(*bad, fieldError{path: path, rule: "type", msg: fmt.Sprintf("unsupported value of Go type %T", v)})
	return v, false
}

func normalizeInt(n int64) any {
	if n >= -maxExactFloat && n <= maxExactFloat {
		return float64(n)
	}
	return n
}

func normalizeMap(x map[string]any, path document.Path, bad *[]fieldError) (any, bool) {
	var out map[string]any
	for k, e := range x {
		n, changed := normalize(e, path.Append(document.Key(k)), bad)
		if !changed {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(x))
			for k2, e2 := range x {
				out[k2] = e2
			}
		}
		out[k] = n
	}
	if out == nil {
		return x, false
	}
	return out, true
}

func normalizeList(x []any, path document.Path, bad *[]fieldError) (any, bool) {
	var out []any
	for i, e := range x {
		n, changed := normalize(e, path.Append(document.Index(i)), bad)
		if !changed {
			continue
		}
		if out == nil {
			out = make([]any, len(x))
			copy(out, x)
		}
		out[i] = n
	}
	if out == nil {
		return x, false
	}
	return out, true
}

func normalizeNumber(n json.Number) any {
	if i, err := n.Int64(); err == nil {
		return normalizeInt(i)
	}
	f, err := n.Float64()
	if err != nil && !math.IsInf(f, 0) {
		return n.String() // not a number at all: validate it as the string it holds
	}
	return clampFloat(f)
}

func asInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint:
		if uint64(x) <= math.MaxInt64 {
			return int64(x), true
		}
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), true
		}
	}
	return 0, false
}
