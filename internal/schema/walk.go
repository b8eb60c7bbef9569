package schema

import (
	"maps"
	"slices"

	"github.com/strata-dev/strata/internal/document"
)

// A child is a sub-schema of a schema node and where it sits.
type child struct {
	loc    document.Path // location of the sub-schema, relative to its parent
	schema obj
	set    func(obj) // replaces the sub-schema in its parent
}

// structuralKeywords hold the sub-schemas that describe parts of the value:
// the ones defaulting and AdditionalPropertiesFalse follow.
var structuralKeywords = []string{"properties", "patternProperties", "additionalProperties", "items"}

// combinatorKeywords hold sub-schemas that apply to the whole value.
var combinatorKeywords = []string{"allOf", "anyOf", "oneOf", "not"}

// children lists the sub-schemas of m held by the given keywords, in a
// stable order (keyword order, then names sorted, then list order).
func children(m obj, keywords ...string) []child {
	var out []child
	for _, kw := range keywords {
		switch v := m[kw].(type) {
		case obj:
			if kw == "properties" || kw == "patternProperties" || kw == "definitions" {
				for _, name := range slices.Sorted(maps.Keys(v)) {
					s, ok := v[name].(obj)
					if !ok {
						continue
					}
					out = append(out, child{
						loc:    document.Path{document.Key(kw), document.Key(name)},
						schema: s,
						set:    func(n obj) { v[name] = n },
					})
				}
				continue
			}
			out = append(out, child{loc: document.Path{document.Key(kw)}, schema: v, set: func(n obj) { m[kw] = n }})
		case []any:
			for i, e := range v {
				if s, ok := e.(obj); ok {
					out = append(out, child{
						loc:    document.Path{document.Key(kw), document.Index(i)},
						schema: s,
						set:    func(n obj) { v[i] = n },
					})
				}
			}
		}
	}
	return out
}

// schemaKeywords hold every sub-schema but definitions.
var schemaKeywords = append(slices.Clone(structuralKeywords), combinatorKeywords...)

// allChildren lists every sub-schema of m except definitions.
func allChildren(m obj) []child {
	return children(m, schemaKeywords...)
}
