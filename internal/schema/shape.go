package schema

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	kerrors "k8s.io/kube-openapi/pkg/validation/errors"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/values"
)

// fieldError is a FieldError before its path is written out.
type fieldError struct {
	path      document.Path
	rule      string
	msg       string
	redundant bool // a format range error: dropped next to a type error
}

// shape turns kube-openapi's errors into field errors. tree is the value
// as given (before normalize), for exact paths and values.
func shape(errs []error, tree any) []fieldError {
	var out []fieldError
	for _, err := range errs {
		if fe, ok := shapeOne(err, tree); ok {
			out = append(out, fe)
		}
	}
	return out
}

func shapeOne(err error, tree any) (fieldError, bool) {
	var v *kerrors.Validation
	if errors.As(err, &v) {
		return shapeValidation(v, tree)
	}
	msg := err.Error()
	if m := rangeRe.FindStringSubmatch(msg); m != nil {
		return shapeRange(m, tree)
	}
	if quoted, qerr := strconv.QuotedPrefix(msg); qerr == nil {
		raw, _ := strconv.Unquote(quoted)
		return shapeComposite(resolvePath(raw, tree, false), strings.TrimSpace(msg[len(quoted):])), true
	}
	return fieldError{rule: "schema", msg: msg}, true
}

func shapeValidation(e *kerrors.Validation, tree any) (fieldError, bool) {
	switch e.Code() {
	case kerrors.RequiredFailCode:
		return fieldError{path: resolvePath(e.Name, tree, true), rule: "required", msg: "required property is missing"}, true
	case kerrors.UnallowedPropertyCode:
		key, _ := e.Value.(string)
		path := resolvePath(e.Name, tree, false).Append(document.Key(key))
		return fieldError{path: path, rule: "additionalProperties", msg: "property is not allowed"}, true
	}
	path := resolvePath(e.Name, tree, false)
	val, _ := valueAt(tree, path)
	tail := strings.TrimPrefix(e.Error(), e.Name+" in "+e.In+" ")
	fe := fieldError{path: path}
	switch e.Code() {
	case kerrors.InvalidTypeCode:
		return typeError(path, tail, val)
	case kerrors.TooLongFailCode:
		fe.rule, fe.msg = "maxLength", fmt.Sprintf("must be at most %v characters long, got %s", e.Valid, render(val))
	case kerrors.TooShortFailCode:
		fe.rule, fe.msg = "minLength", fmt.Sprintf("must be at least %v characters long, got %s", e.Valid, render(val))
	case kerrors.PatternFailCode:
		pattern := strings.TrimSuffix(strings.TrimPrefix(tail, "should match '"), "'")
		fe.rule, fe.msg = "pattern", fmt.Sprintf("must match pattern '%s', got %s", pattern, render(val))
	case kerrors.EnumFailCode:
		if val == nil && slices.Contains(e.Values, nil) {
			return fieldError{}, false // kube-openapi never matches a null enum entry
		}
		fe.rule, fe.msg = "enum", fmt.Sprintf("must be one of %s, got %s", renderList(e.Values), render(val))
	case kerrors.MultipleOfFailCode:
		fe.rule, fe.msg = "multipleOf", bound(tail)+", got "+render(val)
	case kerrors.MaxFailCode:
		fe.rule, fe.msg = "maximum", bound(tail)+", got "+render(val)
	case kerrors.MinFailCode:
		fe.rule, fe.msg = "minimum", bound(tail)+", got "+render(val)
	case kerrors.UniqueFailCode:
		fe.rule, fe.msg = "uniqueItems", "must not contain duplicate items"
	case kerrors.MaxItemsFailCode:
		fe.rule, fe.msg = "maxItems", fmt.Sprintf("must have at most %v items, got %v", e.Valid, e.Value)
	case kerrors.MinItemsFailCode:
		fe.rule, fe.msg = "minItems", fmt.Sprintf("must have at least %v items, got %v", e.Valid, e.Value)
	case kerrors.TooManyPropertiesCode:
		fe.rule, fe.msg = "maxProperties", fmt.Sprintf("must have at most %v properties, got %v", e.Valid, e.Value)
	case kerrors.TooFewPropertiesCode:
		fe.rule, fe.msg = "minProperties", fmt.Sprintf("must have at least %v properties, got %v", e.Valid, e.Value)
	default:
		fe.rule, fe.msg = "schema", tail
	}
	return fe, true
}

// typeError shapes kube-openapi's type errors. Their "type" is a list of
// JSON types, or a format name when the value's kind does not fit the
// schema's format.
func typeError(path document.Path, tail string, val any) (fieldError, bool) {
	expected := strings.TrimPrefix(tail, "must be of type ")
	if i := strings.Index(expected, ": "); i >= 0 {
		expected = expected[:i]
	}
	names := strings.Split(expected, ",")
	if !slices.ContainsFunc(names, func(n string) bool { return !slices.Contains(typeNames, n) }) {
		if isBigInteger(val) && (slices.Contains(names, "integer") || slices.Contains(names, "number")) {
			return fieldError{}, false // kube-openapi cannot hold it; it is an integer
		}
		return fieldError{path: path, rule: "type", msg: fmt.Sprintf("must be of type %s, got %s", strings.Join(names, " or "), describe(val))}, true
	}
	format := expected
	if s, ok := val.(string); ok {
		return fieldError{path: path, rule: "format", msg: fmt.Sprintf("must be a valid %s, got %s", format, render(s))}, true
	}
	base := formatType(format)
	if base != "string" && isBigInteger(val) {
		return fieldError{}, false // reported by the format's range check
	}
	return fieldError{path: path, rule: "type", msg: fmt.Sprintf("must be of type %s (format %s), got %s", base, format, describe(val))}, true
}

// formatType is the JSON type a format belongs to.
func formatType(format string) string {
	switch format {
	case "int32", "int64", "uint32", "uint64":
		return "integer"
	case "float", "double", "float32", "float64":
		return "number"
	}
	return "string"
}

// rangeRe matches kube-openapi's check that a number fits its type and
// format.
var rangeRe = regexp.MustCompile(`^(?s)Checked value must be of type (\S+)(?: with format (\S+)| \(default format\)) in (.*)$`)

func shapeRange(m []string, tree any) (fieldError, bool) {
	if m[2] == "" {
		// Without a format the check duplicates the type check, which also
		// knows that an integer beyond int64 is still an integer.
		return fieldError{}, false
	}
	path := resolvePath(m[3], tree, false)
	val, _ := valueAt(tree, path)
	article := "a"
	if m[1] == "integer" {
		article = "an"
	}
	msg := fmt.Sprintf("must be %s %s with format %s, got %s", article, m[1], m[2], render(val))
	return fieldError{path: path, rule: "format", msg: msg, redundant: true}, true
}

// shapeComposite shapes anyOf, oneOf, allOf and not errors, which carry
// only a message.
func shapeComposite(path document.Path, rest string) fieldError {
	fe := fieldError{path: path}
	switch {
	case strings.Contains(rest, "(anyOf)"):
		fe.rule, fe.msg = "anyOf", "must be valid against at least one of the anyOf schemas"
	case strings.Contains(rest, "(oneOf)"):
		fe.rule, fe.msg = "oneOf", "must be valid against exactly one of the oneOf schemas"
		if _, n, ok := strings.Cut(rest, "Found "); ok {
			n, _, _ = strings.Cut(n, " ")
			fe.msg += ", but is valid against " + n
		}
	case strings.Contains(rest, "(allOf)"):
		fe.rule, fe.msg = "allOf", "must be valid against all of the allOf schemas"
	case strings.Contains(rest, "(not)"):
		fe.rule, fe.msg = "not", "must not be valid against the not schema"
	default:
		fe.rule, fe.msg = "schema", rest
	}
	return fe
}

// bound rewrites "should be less than or equal to 1e+06" as "must be less
// than or equal to 1000000".
func bound(tail string) string {
	text := "must " + strings.TrimPrefix(tail, "should ")
	i := strings.LastIndexByte(text, ' ')
	if f, err := strconv.ParseFloat(text[i+1:], 64); err == nil {
		return text[:i+1] + formatFloat(f)
	}
	return text
}

// finish drops redundant errors, sorts by path, rule and message, removes
// duplicates, and writes paths out.
func finish(list []fieldError) []FieldError {
	typed := map[string]bool{}
	for _, fe := range list {
		if fe.rule == "type" {
			typed[fe.path.String()] = true
		}
	}
	list = slices.DeleteFunc(list, func(fe fieldError) bool { return fe.redundant && typed[fe.path.String()] })
	slices.SortStableFunc(list, func(a, b fieldError) int {
		return cmp.Or(values.ComparePaths(a.path, b.path), strings.Compare(a.rule, b.rule), strings.Compare(a.msg, b.msg))
	})
	out := make([]FieldError, 0, len(list))
	for _, fe := range list {
		e := FieldError{Path: fe.path.String(), Rule: fe.rule, Message: fe.msg}
		if n := len(out); n > 0 && out[n-1] == e {
			continue
		}
		out = append(out, e)
	}
	return out
}

// resolvePath maps a kube-openapi path ("$.a.b[0]", keys unescaped) to a
// Path. Keys may hold dots, so the tree decides where keys end: the
// longest existing key wins. With missingLast the path ends in a key the
// tree lacks (a missing required property).
func resolvePath(raw string, tree any, missingLast bool) document.Path {
	rest, ok := strings.CutPrefix(raw, rootToken)
	if !ok {
		return naivePath(raw)
	}
	r := pathResolver{budget: 10_000}
	if p, ok := r.walk(rest, tree, nil, missingLast); ok {
		return p
	}
	return naivePath(rest)
}

type pathResolver struct{ budget int }

func (r *pathResolver) walk(rest string, v any, acc document.Path, missingLast bool) (document.Path, bool) {
	r.budget--
	if r.budget < 0 {
		return nil, false
	}
	if rest == "" {
		return acc, !missingLast
	}
	switch x := v.(type) {
	case map[string]any:
		if rest[0] != '.' {
			return nil, false
		}
		body := rest[1:]
		for end := len(body); end >= 0; end-- {
			if end < len(body) && body[end] != '.' && body[end] != '[' {
				continue
			}
			child, ok := x[body[:end]]
			if !ok {
				continue
			}
			if p, ok := r.walk(body[end:], child, acc.Append(document.Key(body[:end])), missingLast); ok {
				return p, true
			}
		}
		if _, exists := x[body]; missingLast && !exists {
			return acc.Append(document.Key(body)), true
		}
	case []any:
		if rest[0] != '[' {
			return nil, false
		}
		end := strings.IndexByte(rest, ']')
		i, err := strconv.Atoi(rest[1:max(end, 1)])
		if end < 0 || err != nil || i < 0 || i >= len(x) {
			return nil, false
		}
		return r.walk(rest[end+1:], x[i], acc.Append(document.Index(i)), missingLast)
	}
	return nil, false
}

// naivePath splits a path at every dot and bracket; the fallback when the
// tree cannot place it.
func naivePath(rest string) document.Path {
	var p document.Path
	for _, part := range strings.Split(strings.TrimPrefix(rest, "."), ".") {
		key, idx, _ := strings.Cut(part, "[")
		p = append(p, document.Key(key))
		for idx != "" {
			n, after, _ := strings.Cut(idx, "]")
			i, err := strconv.Atoi(n)
			if err != nil {
				break
			}
			p = append(p, document.Index(i))
			idx = strings.TrimPrefix(after, "[")
		}
	}
	return p
}

func valueAt(tree any, p document.Path) (any, bool) {
	v := tree
	for _, s := range p {
		switch x := v.(type) {
		case map[string]any:
			e, ok := x[s.Key]
			if s.IsIndex || !ok {
				return nil, false
			}
			v = e
		case []any:
			if !s.IsIndex || s.Index < 0 || s.Index >= len(x) {
				return nil, false
			}
			v = x[s.Index]
		default:
			return nil, false
		}
	}
	return v, true
}

// isBigInteger reports whether v is a json.Number holding an integer.
func isBigInteger(v any) bool {
	n, ok := v.(json.Number)
	return ok && bigIntegerRe.MatchString(string(n))
}

// describe names a value's JSON type and shows it: `string "three"`.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string " + render(x)
	case bool:
		return "boolean " + render(x)
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case float64, float32:
		return "number " + render(x)
	case json.Number:
		if isBigInteger(x) {
			return "integer " + render(x)
		}
		return "number " + render(x)
	}
	if _, ok := asInt64(v); ok {
		return "integer " + render(v)
	}
	return fmt.Sprintf("%T", v)
}

const maxRender = 64

// render shows a value briefly: strings quoted and cut at 64 characters,
// numbers as JSON writes them, objects and arrays by kind.
func render(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if utf8.RuneCountInString(x) > maxRender {
			x = string([]rune(x)[:maxRender-3]) + "..."
		}
		return strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return formatFloat(x)
	case float32:
		return formatFloat(float64(x))
	case json.Number:
		return x.String()
	case map[string]any:
		return "object"
	case []any:
		return fmt.Sprintf("array of %d items", len(x))
	}
	if n, ok := asInt64(v); ok {
		return strconv.FormatInt(n, 10)
	}
	return fmt.Sprint(v)
}

func renderList(list []any) string {
	parts := make([]string, len(list))
	for i, v := range list {
		parts[i] = render(v)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// formatFloat writes a float as encoding/json does.
func formatFloat(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}
