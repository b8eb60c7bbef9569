package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/strata-dev/strata/internal/values"
	yaml "go.yaml.in/yaml/v3"
	"k8s.io/kube-openapi/pkg/validation/validate"
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
	kindRef                      // '#/definitions/<name>'
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

// schema converts a mapping node into a schema object, checking every
// keyword. The root (depth 0) may also hold definitions and x-extend.
func (l *loader) schema(n *yaml.Node, loc values.Path, depth int) (obj, error) {
	n, err := l.enter(n, loc, depth)
	if err != nil {
		return nil, err
	}
	if n.Kind != yaml.MappingNode {
		return nil, l.fail(loc, n, "a schema must be a mapping, not %s", nodeKind(n))
	}
	l.mark(loc, n)
	entries, err := l.entries(n, loc, depth)
	if err != nil {
		return nil, err
	}
	m := make(obj, len(entries))
	for _, e := range entries {
		kloc := loc.Append(values.Key(e.key))
		l.mark(kloc, e.k)
		if m[e.key], err = l.keyword(e.key, e.v, kloc, depth); err != nil {
			return nil, err
		}
	}
	if kw, err := checkBounds(m); err != nil {
		return nil, l.doc.errorAt(loc.Append(values.Key(kw)), err)
	}
	return m, nil
}

func (l *loader) keyword(key string, v *yaml.Node, loc values.Path, depth int) (any, error) {
	k, known := keywords[key]
	switch {
	case known:
	case isExtension(key):
		k = kindAny
	case unsupported[key] != "":
		return nil, l.fail(loc, v, "keyword %q is not supported: %s", key, unsupported[key])
	default:
		return nil, l.fail(loc, v, "unknown schema keyword %q", key)
	}
	if depth > 0 && (k == kindDefinitions || k == kindExtend) {
		return nil, l.fail(loc, v, "%s is only allowed in the root schema", key)
	}
	switch k {
	case kindSchema:
		return l.schema(v, loc, depth+1)
	case kindSchemaList, kindSchemaMap, kindPatternMap, kindDefinitions, kindSchemaOrBool, kindItems:
		return l.schemas(k, v, loc, depth)
	}
	val, err := l.value(v, loc, depth+1)
	if err != nil {
		return nil, err
	}
	if err := checkKind(k, val); err != nil {
		return nil, l.fail(loc, v, "%v", err)
	}
	return val, nil
}

// schemas converts the keywords whose values hold sub-schemas.
func (l *loader) schemas(k kind, v *yaml.Node, loc values.Path, depth int) (any, error) {
	v, err := l.enter(v, loc, depth+1)
	if err != nil {
		return nil, err
	}
	switch k {
	case kindSchemaOrBool:
		if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool" {
			return scalar(v)
		}
		return l.schema(v, loc, depth+1)
	case kindItems:
		if v.Kind == yaml.SequenceNode {
			return nil, l.fail(loc, v, "items must be a single schema; tuple validation (a list of schemas) is not part of OpenAPI v3")
		}
		return l.schema(v, loc, depth+1)
	case kindSchemaList:
		if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
			return nil, l.fail(loc, v, "must be a non-empty list of schemas")
		}
		list := make([]any, len(v.Content))
		for i, e := range v.Content {
			if list[i], err = l.schema(e, loc.Append(values.Index(i)), depth+1); err != nil {
				return nil, err
			}
		}
		return list, nil
	}
	// kindSchemaMap, kindPatternMap, kindDefinitions
	if v.Kind != yaml.MappingNode {
		return nil, l.fail(loc, v, "must be a mapping of names to schemas, not %s", nodeKind(v))
	}
	entries, err := l.entries(v, loc, depth+1)
	if err != nil {
		return nil, err
	}
	m := make(obj, len(entries))
	for _, e := range entries {
		eloc := loc.Append(values.Key(e.key))
		if k == kindPatternMap {
			if _, err := regexp.Compile(e.key); err != nil {
				return nil, l.fail(eloc, e.k, "invalid pattern: %v", err)
			}
		}
		if m[e.key], err = l.schema(e.v, eloc, depth+1); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// checkKind checks a keyword value that holds no sub-schemas.
func checkKind(k kind, v any) error {
	switch k {
	case kindString, kindRef:
		if _, ok := v.(string); !ok {
			return errors.New("must be a string")
		}
		if k == kindRef {
			_, err := refName(v.(string))
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

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	if n.ShortTag() == "!!null" {
		return "null"
	}
	return "a scalar (" + strings.TrimPrefix(n.ShortTag(), "!!") + ")"
}
