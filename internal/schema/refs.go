package schema

import (
	"fmt"
	"strings"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/values"
)

const refPrefix = "#/definitions/"

// refName returns the definition a local $ref names, undoing JSON pointer
// escapes (~1 is /, ~0 is ~).
func refName(ref string) (string, error) {
	name, ok := strings.CutPrefix(ref, refPrefix)
	if !ok || name == "" || strings.Contains(name, "/") {
		return "", fmt.Errorf("unsupported $ref %q: only local references of the form '%s<name>' are supported", ref, refPrefix)
	}
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(name), nil
}

// refSiblings are the keywords allowed next to $ref. They annotate the
// reference and override the definition's own; anything else would be
// silently ignored by OpenAPI v3, so it is an error.
var refSiblings = map[string]bool{
	"description": true, "title": true, "default": true, "example": true, "examples": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "$comment": true,
}

// An expander replaces every $ref in a document by a copy of the definition
// it names, itself expanded. Recursive definitions are rejected: the
// validator needs a finite schema.
type expander struct {
	doc    *schemaDoc
	defs   obj
	done   map[string]obj // expanded definitions
	active []string       // definitions being expanded, for cycle reports
	nodes  int            // schema nodes produced so far
}

// expandRefs expands the $refs of doc in place and drops its definitions.
func expandRefs(doc *schemaDoc) error {
	defs, _ := doc.root["definitions"].(obj)
	e := &expander{doc: doc, defs: defs, done: map[string]obj{}}
	root, err := e.schema(doc.root, nil, true)
	if err != nil {
		return err
	}
	delete(root, "definitions")
	doc.root = root
	return checkDepth(doc, root, nil, 0)
}

// schema expands the $refs in m and below; it returns the node that takes
// m's place.
func (e *expander) schema(m obj, loc document.Path, isRoot bool) (obj, error) {
	if err := e.count(loc); err != nil {
		return nil, err
	}
	if ref, ok := m["$ref"].(string); ok {
		return e.reference(m, ref, loc, isRoot)
	}
	for _, c := range allChildren(m) {
		n, err := e.schema(c.schema, append(loc[:len(loc):len(loc)], c.loc...), false)
		if err != nil {
			return nil, err
		}
		c.set(n)
	}
	return m, nil
}

func (e *expander) count(loc document.Path) error {
	e.nodes++
	if e.nodes > MaxNodes {
		return e.doc.errorAt(loc, fmt.Errorf("schema has more than %d nodes once $refs are expanded", MaxNodes))
	}
	return nil
}

// reference returns a copy of the definition ref names, with m's
// annotations laid over it.
func (e *expander) reference(m obj, ref string, loc document.Path, isRoot bool) (obj, error) {
	for _, k := range sortedKeys(m) {
		if k == "$ref" || refSiblings[k] || isExtension(k) || (isRoot && (k == "definitions" || k == "$schema" || k == "$id" || k == "id")) {
			continue
		}
		return nil, e.doc.errorAt(loc.Append(document.Key(k)), fmt.Errorf("keyword %q next to $ref is not supported; combine them with allOf", k))
	}
	name, err := refName(ref)
	if err != nil {
		return nil, e.doc.errorAt(loc.Append(document.Key("$ref")), err)
	}
	def, err := e.definition(name, loc)
	if err != nil {
		return nil, err
	}
	out, err := e.copySchema(def, loc)
	if err != nil {
		return nil, err
	}
	for k, v := range m {
		if k != "$ref" {
			out[k] = v
		}
	}
	return out, nil
}

// definition returns the expanded definition name.
func (e *expander) definition(name string, loc document.Path) (obj, error) {
	if d, ok := e.done[name]; ok {
		return d, nil
	}
	for i, a := range e.active {
		if a == name {
			chain := append(e.active[i:len(e.active):len(e.active)], name)
			return nil, e.doc.errorAt(loc.Append(document.Key("$ref")), fmt.Errorf("recursive $ref is not supported: %s", strings.Join(chain, " -> ")))
		}
	}
	if len(e.active) >= MaxRefDepth {
		return nil, e.doc.errorAt(loc.Append(document.Key("$ref")), fmt.Errorf("$refs nested more than %d deep", MaxRefDepth))
	}
	raw, ok := e.defs[name].(obj)
	if !ok {
		return nil, e.doc.errorAt(loc.Append(document.Key("$ref")), fmt.Errorf("$ref to undefined definition %q", name))
	}
	e.active = append(e.active, name)
	d, err := e.schema(raw, document.Path{document.Key("definitions"), document.Key(name)}, false)
	e.active = e.active[:len(e.active)-1]
	if err != nil {
		return nil, err
	}
	e.done[name] = d
	return d, nil
}

// copySchema deep-copies an expanded definition, first charging every
// schema node of the copy against the node limit.
func (e *expander) copySchema(m obj, loc document.Path) (obj, error) {
	if err := e.countTree(m, loc); err != nil {
		return nil, err
	}
	return values.DeepCopy(m).(obj), nil
}

func (e *expander) countTree(m obj, loc document.Path) error {
	if err := e.count(loc); err != nil {
		return err
	}
	for _, c := range allChildren(m) {
		if err := e.countTree(c.schema, loc); err != nil {
			return err
		}
	}
	return nil
}

// checkDepth bounds the nesting of the expanded schema.
func checkDepth(doc *schemaDoc, m obj, loc document.Path, depth int) error {
	if depth > MaxDepth {
		return doc.errorAt(loc, fmt.Errorf("schema nested more than %d levels deep once $refs are expanded", MaxDepth))
	}
	for _, c := range allChildren(m) {
		if err := checkDepth(doc, c.schema, append(loc[:len(loc):len(loc)], c.loc...), depth+1); err != nil {
			return err
		}
	}
	return nil
}
