package schema

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/values"
)

// closeObjects sets additionalProperties: false on the object schemas that
// leave it unset: a schema of type object, or one declaring properties or
// patternProperties. It follows properties (those that leave
// additionalProperties unset) and items, as addon-operator does; not
// patternProperties, additionalProperties schemas, nor allOf, anyOf, oneOf
// or not (closing the branches of an allOf would make them reject each
// other's properties). A schema with x-kubernetes-preserve-unknown-fields:
// true is left open.
func closeObjects(m obj) {
	if isObjectSchema(m) && m["additionalProperties"] == nil && m[xPreserveUnknownKeys] != true {
		m["additionalProperties"] = false
	}
	// The reach is addon-operator's (its AdditionalPropertiesTransformer):
	// the properties that leave additionalProperties unset, and below them;
	// items, and below them. Not below a property that sets
	// additionalProperties itself, nor into patternProperties or an
	// additionalProperties schema: values addon-operator accepts there
	// must not be refused.
	for _, c := range children(m, "properties") {
		if _, set := c.schema["additionalProperties"]; !set {
			closeObjects(c.schema)
		}
	}
	for _, c := range children(m, "items") {
		closeObjects(c.schema)
	}
}

func isObjectSchema(m obj) bool {
	if m["properties"] != nil || m["patternProperties"] != nil {
		return true
	}
	return hasType(m, "object")
}

func hasType(m obj, name string) bool {
	if t, ok := m["type"].(string); ok {
		return t == name
	}
	list, _ := stringList(m["type"])
	return slices.Contains(list, name)
}

// specKeywords are the keywords kube-openapi validates with; annotations,
// defaults and extensions are left out of the validation schema.
var specKeywords = []string{
	"type", "format", "pattern", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
	"exclusiveMinimum", "maxLength", "minLength", "maxItems", "minItems", "uniqueItems",
	"maxProperties", "minProperties", "required", "enum", "nullable",
}

// buildSpec turns a loaded, expanded schema into a kube-openapi schema.
// With helm, x-required-for-helm is merged into required at every level.
func buildSpec(m obj, helm bool) (*spec.Schema, error) {
	data, err := json.Marshal(specJSON(m, helm))
	if err != nil {
		return nil, err
	}
	s := new(spec.Schema)
	if err := json.Unmarshal(data, s); err != nil {
		return nil, err
	}
	return s, nil
}

func specJSON(m obj, helm bool) map[string]any {
	out := map[string]any{}
	for _, k := range specKeywords {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	// kube-openapi skips the type check of strings and lists when a format
	// is set and the type is not numeric; a format on a type that has no
	// formats (boolean, object, array, null) is dropped so types are checked.
	if _, ok := m["type"]; ok && !hasType(m, "string") && !hasType(m, "integer") && !hasType(m, "number") {
		delete(out, "format")
	}
	if helm {
		if req := helmRequired(m); req != nil {
			out["required"] = req
		}
	}
	if ap, ok := m["additionalProperties"].(bool); ok {
		out["additionalProperties"] = ap
	}
	for _, c := range allChildren(m) {
		kw := c.loc[0].Key
		// x-required-for-helm counts at the root and down properties only,
		// as addon-operator merges it (not in items, maps or combinators).
		sub := specJSON(c.schema, helm && kw == "properties")
		switch {
		case len(c.loc) == 1:
			out[kw] = sub
		case c.loc[1].IsIndex:
			list, _ := out[kw].([]any)
			out[kw] = append(list, sub)
		default:
			named, _ := out[kw].(map[string]any)
			if named == nil {
				named = map[string]any{}
				out[kw] = named
			}
			named[c.loc[1].Key] = sub
		}
	}
	return out
}

// helmRequired is required unioned with x-required-for-helm, or nil when
// the schema has no x-required-for-helm.
func helmRequired(m obj) []any {
	x, ok := m[xRequiredForHelm]
	if !ok {
		return nil
	}
	if s, isString := x.(string); isString {
		x = []any{s}
	}
	return unionRequired(m["required"], x)
}

func hasHelmRequired(m obj) bool {
	if _, ok := m[xRequiredForHelm]; ok {
		return true
	}
	for _, c := range allChildren(m) {
		if hasHelmRequired(c.schema) {
			return true
		}
	}
	return false
}

// checkDefaults validates every default the defaulting can apply against
// its own schema, after defaulting it, as Kubernetes does for CRDs. The
// root's default is never applied and not checked.
func checkDefaults(doc *schemaDoc, m obj, loc document.Path) error {
	for _, c := range children(m, structuralKeywords...) {
		cloc := append(loc[:len(loc):len(loc)], c.loc...)
		if def, ok := c.schema["default"]; ok && def != nil {
			if err := checkDefault(c.schema, def); err != nil {
				return doc.errorAt(cloc.Append(document.Key("default")), err)
			}
		}
		if err := checkDefaults(doc, c.schema, cloc); err != nil {
			return err
		}
	}
	return nil
}

func checkDefault(m obj, def any) error {
	s, err := buildSpec(m, false)
	if err != nil {
		return err
	}
	v := values.DeepCopy(def)
	if d := buildDefaulter(m, false); d != nil {
		v = d.apply(v)
	}
	errs := validateValue(s, v)
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, fe := range errs {
		msgs[i] = fe.String()
		if fe.Path == "" {
			msgs[i] = fe.Message + " (rule: " + fe.Rule + ")"
		}
	}
	return fmt.Errorf("default does not match the schema: %s", strings.Join(msgs, "; "))
}
