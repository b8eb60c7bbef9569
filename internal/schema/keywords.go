package schema

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"k8s.io/kube-openapi/pkg/validation/validate"

	"github.com/strata-dev/strata/internal/document"
)

// kind is what a keyword's value must be.
type kind int

const (
	kindAny          kind = iota // any value: default, example
	kindString                   // a string
	kindBool                     // a boolean
	kindNumber                   // a number
	kindCount                    // a non-negative integer
	kindPositive                 // a number greater than zero
	kindStrings                  // a list of strings
	kindStringOrList             // a string or a list of strings
	kindTypes                    // a type name or a list of them
	kindPattern                  // a regular expression
	kindEnum                     // a non-empty list of values
	kindObject                   // any mapping
	kindSchema                   // a schema
	kindSchemaList               // a non-empty list of schemas
	kindSchemaMap                // name → schema
	kindPatternMap               // regular expression → schema
	kindSchemaOrBool             // a schema or a boolean
	kindItems                    // a schema; tuple form rejected
	kindDefinitions              // name → schema, root only
	kindRef                      // a JSON reference: '#/definitions/<name>', 'file.yaml#/pointer'
	kindExtend                   // {schema: <name>}, root only
)

// keywords are the OpenAPI v3 schema keywords plus definitions, $ref and
// patternProperties, and a few JSON Schema annotations found in the wild.
var keywords = map[string]kind{
	// Validation.
	"type":                 kindTypes,
	"format":               kindString,
	"nullable":             kindBool,
	"enum":                 kindEnum,
	"pattern":              kindPattern,
	"minLength":            kindCount,
	"maxLength":            kindCount,
	"minimum":              kindNumber,
	"maximum":              kindNumber,
	"exclusiveMinimum":     kindBool,
	"exclusiveMaximum":     kindBool,
	"multipleOf":           kindPositive,
	"minItems":             kindCount,
	"maxItems":             kindCount,
	"uniqueItems":          kindBool,
	"minProperties":        kindCount,
	"maxProperties":        kindCount,
	"required":             kindStrings,
	"properties":           kindSchemaMap,
	"patternProperties":    kindPatternMap,
	"additionalProperties": kindSchemaOrBool,
	"items":                kindItems,
	"allOf":                kindSchemaList,
	"anyOf":                kindSchemaList,
	"oneOf":                kindSchemaList,
	"not":                  kindSchema,
	"definitions":          kindDefinitions,
	"$ref":                 kindRef,

	// Defaulting and annotations.
	"default":       kindAny,
	"title":         kindString,
	"description":   kindString,
	"example":       kindAny,
	"examples":      kindAny,
	"readOnly":      kindBool,
	"writeOnly":     kindBool,
	"deprecated":    kindBool,
	"discriminator": kindObject,
	"xml":           kindObject,
	"externalDocs":  kindObject,
	"$schema":       kindString,
	"$id":           kindString,
	"id":            kindString,
	"$comment":      kindString,

	// Extensions with a meaning here; other x-* keys may hold anything.
	xExtend:              kindExtend,
	xRequiredForHelm:     kindStringOrList,
	xPreserveUnknownKeys: kindBool,
}

const (
	xExtend              = "x-extend"
	xRequiredForHelm     = "x-required-for-helm"
	xPreserveUnknownKeys = "x-kubernetes-preserve-unknown-fields"
)

// unsupported explains JSON Schema keywords that are not OpenAPI v3.
var unsupported = map[string]string{
	"const":                 "use enum with a single value",
	"additionalItems":       "tuple validation is not part of OpenAPI v3",
	"dependencies":          "not part of OpenAPI v3",
	"dependentRequired":     "not part of OpenAPI v3",
	"dependentSchemas":      "not part of OpenAPI v3",
	"if":                    "not part of OpenAPI v3",
	"then":                  "not part of OpenAPI v3",
	"else":                  "not part of OpenAPI v3",
	"contains":              "not part of OpenAPI v3",
	"propertyNames":         "not part of OpenAPI v3",
	"prefixItems":           "not part of OpenAPI v3",
	"unevaluatedItems":      "not part of OpenAPI v3",
	"unevaluatedProperties": "not part of OpenAPI v3",
	"$defs":                 "use definitions",
}

// typeNames are the JSON types.
var typeNames = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

func isExtension(key string) bool {
	return len(key) >= 2 && strings.EqualFold(key[:2], "x-")
}

// A loader checks a tree the values loader read and records the position
// of every schema node and keyword.
type loader struct {
	doc *schemaDoc
}

func (l *loader) fail(loc document.Path, line int, format string, args ...any) error {
	return &ParseError{Source: l.doc.source, Line: line, Path: loc.String(), Err: fmt.Errorf(format, args...)}
}

func (l *loader) mark(loc document.Path, line int) {
	l.doc.pos[loc.String()] = pos{source: l.doc.source, line: line}
}

func (l *loader) tooDeep(loc document.Path, line int) error {
	return l.fail(loc, line, "nested more than %d levels deep", MaxDepth)
}

// startLine returns the line the value v at p starts on. p has the line of
// the key holding v; a block mapping or list starts below it, at its first
// key or item. (Merged keys that come from above are not v's own.)
func startLine(v any, p *document.Pos) int {
	line, first := lineOf(p), 0
	switch x := v.(type) {
	case map[string]any:
		for k := range x {
			if kl := lineOf(p.Key(k)); kl >= line && (first == 0 || kl < first) {
				first = kl
			}
		}
	case []any:
		first = lineOf(p.Item(0))
	}
	return max(line, first)
}

// keys returns the keys of a mapping at depth in document order (merged
// keys where their source has them), so that the first problem in the
// file is the one reported. The keys count one level deeper.
func (l *loader) keys(m map[string]any, p *document.Pos, loc document.Path, depth int) ([]string, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		pa, pb := p.Key(a), p.Key(b)
		return cmp.Or(cmp.Compare(lineOf(pa), lineOf(pb)), cmp.Compare(columnOf(pa), columnOf(pb)), strings.Compare(a, b))
	})
	if len(keys) > 0 && depth+1 > MaxDepth {
		return nil, l.tooDeep(loc, lineOf(p.Key(keys[0])))
	}
	return keys, nil
}

// schema checks that v is a schema: a mapping of keywords. The root (depth
// 0) may also hold definitions and x-extend.
func (l *loader) schema(v any, p *document.Pos, loc document.Path, depth int) (obj, error) {
	line := startLine(v, p)
	if depth > MaxDepth {
		return nil, l.tooDeep(loc, line)
	}
	m, ok := v.(obj)
	if !ok {
		return nil, l.fail(loc, line, "a schema must be a mapping, not %s", kindOf(v))
	}
	l.mark(loc, line)
	keys, err := l.keys(m, p, loc, depth)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		kloc := loc.Append(document.Key(k))
		l.mark(kloc, lineOf(p.Key(k)))
		if m[k], err = l.keyword(k, m[k], p.Key(k), kloc, depth); err != nil {
			return nil, err
		}
	}
	if kw, err := checkBounds(m); err != nil {
		return nil, l.doc.errorAt(loc.Append(document.Key(kw)), err)
	}
	return m, nil
}

func (l *loader) keyword(key string, v any, p *document.Pos, loc document.Path, depth int) (any, error) {
	k, known := keywords[key]
	switch {
	case known:
	case isExtension(key):
		k = kindAny
	case unsupported[key] != "":
		return nil, l.fail(loc, startLine(v, p), "keyword %q is not supported: %s", key, unsupported[key])
	default:
		return nil, l.fail(loc, startLine(v, p), "unknown schema keyword %q", key)
	}
	if depth > 0 && (k == kindDefinitions || k == kindExtend) {
		return nil, l.fail(loc, startLine(v, p), "%s is only allowed in the root schema", key)
	}
	switch k {
	case kindSchema:
		return l.schema(v, p, loc, depth+1)
	case kindSchemaList, kindSchemaMap, kindPatternMap, kindDefinitions, kindSchemaOrBool, kindItems:
		return l.schemas(k, v, p, loc, depth)
	}
	if err := l.value(v, p, loc, depth+1); err != nil {
		return nil, err
	}
	if err := checkKind(k, v); err != nil {
		return nil, l.fail(loc, startLine(v, p), "%v", err)
	}
	return v, nil
}

// schemas checks the keywords whose values hold sub-schemas.
func (l *loader) schemas(k kind, v any, p *document.Pos, loc document.Path, depth int) (any, error) {
	if depth+1 > MaxDepth {
		return nil, l.tooDeep(loc, startLine(v, p))
	}
	switch k {
	case kindSchemaOrBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return l.schema(v, p, loc, depth+1)
	case kindItems:
		if _, ok := v.([]any); ok {
			return nil, l.fail(loc, startLine(v, p), "items must be a single schema; tuple validation (a list of schemas) is not part of OpenAPI v3")
		}
		return l.schema(v, p, loc, depth+1)
	case kindSchemaList:
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return nil, l.fail(loc, startLine(v, p), "must be a non-empty list of schemas")
		}
		for i, e := range list {
			var err error
			if list[i], err = l.schema(e, p.Item(i), loc.Append(document.Index(i)), depth+1); err != nil {
				return nil, err
			}
		}
		return list, nil
	}
	// kindSchemaMap, kindPatternMap, kindDefinitions
	m, ok := v.(obj)
	if !ok {
		return nil, l.fail(loc, startLine(v, p), "must be a mapping of names to schemas, not %s", kindOf(v))
	}
	keys, err := l.keys(m, p, loc, depth+1)
	if err != nil {
		return nil, err
	}
	for _, name := range keys {
		eloc := loc.Append(document.Key(name))
		if k == kindPatternMap {
			if _, err := regexp.Compile(name); err != nil {
				return nil, l.fail(eloc, lineOf(p.Key(name)), "invalid pattern: %v", err)
			}
		}
		if m[name], err = l.schema(m[name], p.Key(name), eloc, depth+1); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// value checks a tree value that is not a schema: its numbers must be
// finite.
func (l *loader) value(v any, p *document.Pos, loc document.Path, depth int) error {
	if depth > MaxDepth {
		return l.tooDeep(loc, startLine(v, p))
	}
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			if err := l.value(e, p.Item(i), loc.Append(document.Index(i)), depth+1); err != nil {
				return err
			}
		}
	case map[string]any:
		keys, err := l.keys(x, p, loc, depth)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := l.value(x[k], p.Key(k), loc.Append(document.Key(k)), depth+1); err != nil {
				return err
			}
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return l.fail(loc, lineOf(p), "%s is not a JSON number", yamlFloat(x))
		}
	}
	return nil
}

// yamlFloat writes NaN or an infinity as YAML does.
func yamlFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return ".nan"
	case f > 0:
		return ".inf"
	}
	return "-.inf"
}

// checkKind checks a keyword value that holds no sub-schemas.
func checkKind(k kind, v any) error {
	switch k {
	case kindString, kindRef:
		if _, ok := v.(string); !ok {
			return errors.New("must be a string")
		}
		if k == kindRef {
			_, _, err := parseRef(v.(string))
			return err
		}
	case kindBool:
		if _, ok := v.(bool); !ok {
			return errors.New("must be a boolean")
		}
	case kindNumber:
		if _, ok := toFloat(v); !ok {
			return errors.New("must be a number")
		}
	case kindPositive:
		if f, ok := toFloat(v); !ok || f <= 0 {
			return errors.New("must be a number greater than 0")
		}
	case kindCount:
		if n, ok := v.(int64); !ok || n < 0 {
			return errors.New("must be a non-negative integer")
		}
	case kindStrings:
		if _, ok := stringList(v); !ok {
			return errors.New("must be a list of strings")
		}
	case kindStringOrList:
		if _, ok := v.(string); !ok {
			if _, ok := stringList(v); !ok {
				return errors.New("must be a string or a list of strings")
			}
		}
	case kindTypes:
		return checkTypes(v)
	case kindPattern:
		s, ok := v.(string)
		if !ok {
			return errors.New("must be a string")
		}
		if _, err := regexp.Compile(s); err != nil {
			return fmt.Errorf("invalid pattern: %v", err)
		}
	case kindEnum:
		if list, ok := v.([]any); !ok || len(list) == 0 {
			return errors.New("must be a non-empty list")
		}
	case kindObject:
		if _, ok := v.(map[string]any); !ok {
			return errors.New("must be a mapping")
		}
	case kindExtend:
		return checkExtend(v)
	}
	return nil
}

func checkTypes(v any) error {
	names, ok := stringList(v)
	if s, isString := v.(string); isString {
		names, ok = []string{s}, true
	}
	if !ok || len(names) == 0 {
		return errors.New("must be a type name or a list of type names")
	}
	for _, t := range names {
		if !slices.Contains(typeNames, t) {
			return fmt.Errorf("unknown type %q; want one of %s", t, strings.Join(typeNames, ", "))
		}
	}
	return nil
}

func checkExtend(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return errors.New("must be a mapping with the key schema")
	}
	for k := range m {
		if k != "schema" {
			return fmt.Errorf("unknown key %q; x-extend takes only schema", k)
		}
	}
	if s, ok := m["schema"].(string); !ok || s == "" {
		return errors.New("schema must be a non-empty file name")
	}
	return nil
}

// checkBounds checks that minimum, maximum and multipleOf fit a schema's
// numeric type and format, using kube-openapi's own range check; a bound
// that does not fit would make every value fail.
func checkBounds(m obj) (keyword string, err error) {
	typeName, format := numericType(m)
	if typeName == "" {
		return "", nil
	}
	for _, kw := range []string{"minimum", "maximum", "multipleOf"} {
		f, ok := toFloat(m[kw])
		if !ok {
			continue
		}
		if validate.IsValueValidAgainstRange(f, typeName, format, kw, "") != nil {
			if format != "" {
				return kw, fmt.Errorf("%v is not a valid %s with format %s", m[kw], typeName, format)
			}
			return kw, fmt.Errorf("%v is not a valid %s", m[kw], typeName)
		}
	}
	return "", nil
}

// numericType mirrors how kube-openapi picks the type and format it checks
// numbers against: only for a single type, and only known formats.
func numericType(m obj) (typeName, format string) {
	t, _ := m["type"].(string)
	if list, ok := stringList(m["type"]); ok && len(list) == 1 {
		t = list[0]
	}
	f, _ := m["format"].(string)
	switch t {
	case "integer":
		if f != "int32" && f != "int64" {
			f = ""
		}
	case "number":
		if f != "float" && f != "double" {
			f = ""
		}
	default:
		return "", ""
	}
	return t, f
}

func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(list))
	for i, e := range list {
		if out[i], ok = e.(string); !ok {
			return nil, false
		}
	}
	return out, true
}

// toFloat converts a numeric tree leaf to float64.
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case json.Number:
		f, err := x.Float64()
		if err != nil && !math.IsInf(f, 0) {
			return 0, false
		}
		return clampFloat(f), true
	}
	return 0, false
}

// clampFloat keeps a value converted from a huge integer finite.
func clampFloat(f float64) float64 {
	return math.Max(-math.MaxFloat64, math.Min(math.MaxFloat64, f))
}

// kindOf names the kind of a tree value for error messages.
func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case nil:
		return "null"
	case bool:
		return "a scalar (bool)"
	case int64, json.Number:
		return "a scalar (int)"
	case float64:
		return "a scalar (float)"
	}
	return "a scalar (str)"
}

func lineOf(p *document.Pos) int {
	if p == nil {
		return 0
	}
	return p.Line
}

func columnOf(p *document.Pos) int {
	if p == nil {
		return 0
	}
	return p.Column
}
