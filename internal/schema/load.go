package schema

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/strata-dev/strata/internal/values"
	yaml "go.yaml.in/yaml/v3"
)

// obj is a loaded schema node, or any other JSON object: keyword → value.
// Values are tree values (see internal/values), sub-schemas are obj.
type obj = map[string]any

// pos is where a schema location came from.
type pos struct {
	source string
	line   int
}

// A document is a loaded schema: its root node and the position of every
// schema node and keyword, keyed by location in --set notation.
type document struct {
	source string
	root   obj
	pos    map[string]pos
}

// errorAt returns a ParseError for a schema location, with the line of the
// nearest enclosing location that has one.
func (d *document) errorAt(loc values.Path, err error) *ParseError {
	for n := len(loc); n >= 0; n-- {
		if p, ok := d.pos[loc[:n].String()]; ok {
			return &ParseError{Source: p.source, Line: p.line, Path: loc.String(), Err: err}
		}
	}
	return &ParseError{Source: d.source, Path: loc.String(), Err: err}
}

// yamlLimits bound what reading one schema file may cost. Aliases can make
// a small file huge; the nesting of schemas and values is checked against
// MaxDepth as the schema is walked, so the YAML depth limit leaves room
// for the two YAML levels a schema level can take (properties: name:) and
// for aliases, which the values loader counts as a level each.
var yamlLimits = values.Limits{
	MaxBytes: MaxSchemaSize,
	MaxNodes: maxYAMLNodes,
	MaxDepth: 4 * (MaxDepth + 2),
}

// loadDocument parses one YAML or JSON schema file and checks every keyword.
func loadDocument(data []byte, source string) (*document, error) {
	tree, p, err := values.Loader{Positions: true, Limits: yamlLimits}.ParseAny(data, source)
	if err != nil {
		return nil, parseError(source, err)
	}
	if tree == nil {
		return nil, &ParseError{Source: source, Line: 1, Err: errors.New("empty schema")}
	}
	if err := checkTags(data, source); err != nil {
		return nil, err
	}
	l := &loader{doc: &document{source: source, pos: map[string]pos{}}}
	if l.doc.root, err = l.schema(tree, p, nil, 0); err != nil {
		return nil, err
	}
	return l.doc, nil
}

// parseError turns an error of the values loader into a ParseError.
func parseError(source string, err error) *ParseError {
	var le *values.LoadError
	if !errors.As(err, &le) {
		return &ParseError{Source: source, Err: err}
	}
	return &ParseError{Source: le.Source, Line: le.Line, Err: loadError{le}}
}

// A loadError is a values.LoadError without its place, which the
// ParseError holding it gives. It unwraps to the LoadError, so errors.Is
// finds the values sentinels (values.ErrSyntax, ...).
type loadError struct{ err *values.LoadError }

func (e loadError) Error() string { return e.err.Msg }
func (e loadError) Unwrap() error { return e.err }

// checkTags rejects scalars with a tag a JSON value cannot have, such as
// !custom, or << outside a merge key: the values loader keeps them as
// their text. Only data that has such a tag is read again.
func checkTags(data []byte, source string) error {
	if !bytes.ContainsRune(data, '!') && !bytes.Contains(data, []byte("<<")) {
		return nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if dec.Decode(&doc) != nil {
			return nil // the end; the values loader has read the same data
		}
		for _, n := range doc.Content {
			if err := checkTag(n, nil, source); err != nil {
				return err
			}
		}
	}
}

// jsonTags are the tags of the scalars a schema may hold.
var jsonTags = map[string]bool{
	"!!null": true, "!!bool": true, "!!int": true, "!!float": true,
	"!!str": true, "!!timestamp": true, "!!binary": true,
}

// checkTag checks the scalars of a node, which sits at loc, in document
// order. Aliases are checked where their anchor is; the values below a
// merge key (<<) sit where the merge key is.
func checkTag(n *yaml.Node, loc values.Path, source string) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if tag := n.ShortTag(); !jsonTags[tag] {
			return &ParseError{Source: source, Line: n.Line, Path: loc.String(), Err: fmt.Errorf("unsupported YAML tag %s", tag)}
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			if err := checkTag(e, loc.Append(values.Index(i)), source); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				if err := checkMergeTags(v, loc, source); err != nil {
					return err
				}
				continue
			}
			for k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			if err := checkTag(v, loc.Append(values.Key(k.Value)), source); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkMergeTags(v *yaml.Node, loc values.Path, source string) error {
	if v.Kind != yaml.SequenceNode {
		return checkTag(v, loc, source)
	}
	for _, e := range v.Content {
		if err := checkTag(e, loc, source); err != nil {
			return err
		}
	}
	return nil
}
