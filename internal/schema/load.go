package schema

import (
	"errors"

	"github.com/strata-dev/strata/internal/document"
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
type schemaDoc struct {
	source string
	root   obj
	pos    map[string]pos
}

// errorAt returns a ParseError for a schema location, with the line of the
// nearest enclosing location that has one.
func (d *schemaDoc) errorAt(loc document.Path, err error) *ParseError {
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
var yamlLimits = document.Limits{
	MaxBytes: MaxSchemaSize,
	MaxNodes: maxYAMLNodes,
	MaxDepth: 4 * (MaxDepth + 2),
}

// loadDocument parses one YAML or JSON schema file and checks every keyword.
func loadDocument(data []byte, source string) (*schemaDoc, error) {
	tree, p, err := document.Loader{Positions: true, Limits: yamlLimits}.ParseAny(data, source)
	if err != nil {
		return nil, parseError(source, err)
	}
	if tree == nil {
		return nil, &ParseError{Source: source, Line: 1, Err: errors.New("empty schema")}
	}
	l := &loader{doc: &schemaDoc{source: source, pos: map[string]pos{}}}
	if l.doc.root, err = l.schema(tree, p, nil, 0); err != nil {
		return nil, err
	}
	return l.doc, nil
}

// parseError turns an error of the values loader into a ParseError.
func parseError(source string, err error) *ParseError {
	var le *document.LoadError
	if !errors.As(err, &le) {
		return &ParseError{Source: source, Err: err}
	}
	return &ParseError{Source: le.Source, Line: le.Line, Err: loadError{le}}
}

// A loadError is a document.LoadError without its place, which the
// ParseError holding it gives. It unwraps to the LoadError, so errors.Is
// finds the values sentinels (document.ErrSyntax, ...).
type loadError struct{ err *document.LoadError }

func (e loadError) Error() string { return e.err.Msg }
func (e loadError) Unwrap() error { return e.err }
