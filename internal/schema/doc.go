// Package schema validates and defaults value trees (see internal/values)
// with OpenAPI v3 schemas, the way strata's addon operator, modelled on
// flant/addon-operator, uses them.
//
// Parse reads a schema from YAML or JSON. Every keyword is checked: OpenAPI
// v3 schema keywords, definitions with local $refs ('#/definitions/name'),
// patternProperties and x-* extensions are accepted; anything else, such as
// a misspelt keyword or a JSON Schema keyword OpenAPI v3 lacks, is an error
// naming the file, line and schema location. $refs are expanded when the
// schema is parsed; recursive definitions are refused.
//
// Validation is kube-openapi's (k8s.io/kube-openapi/pkg/validation); this
// package shapes its errors: each FieldError names the value's path in
// --set notation (`image.tag`, `ports[0].port`, `a\.b`) and the keyword it
// breaks, and a ValidationError lists them all, sorted. Integers are exact:
// int64 and json.Number values beyond int64 validate as integers.
//
// ApplyDefaults applies defaults as Kubernetes' structural defaulting does
// for CRDs; Parse checks that every default matches its own schema.
//
// Three extensions come from addon-operator:
//
//   - Options.AdditionalPropertiesFalse closes the object schemas that
//     leave additionalProperties unset, as far as addon-operator reaches:
//     through properties that leave it unset, and items.
//   - x-extend: {schema: <file>} in a root schema pulls properties,
//     patternProperties, definitions, required, title, description and x-*
//     keys from another schema file, found by Options.Resolve. The
//     extending schema's own entries win; required lists are unioned.
//   - x-required-for-helm: a list of property names (or one name) that
//     ValidateForHelm requires on top of required, at the root and down
//     properties (as addon-operator merges it; not in items, maps or
//     combinators). Validate ignores it.
package schema
