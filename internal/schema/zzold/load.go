package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

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

// loadDocument parses one YAML or JSON schema file and checks every keyword.
func loadDocument(data []byte, source string) (*document, error) {
	if len(data) > MaxSchemaSize {
		return nil, &ParseError{Source: source, Err: fmt.Errorf("schema is %d bytes, more than the limit of %d", len(data), MaxSchemaSize)}
	}
	root, err := parseYAML(data, source)
	if err != nil {
		return nil, err
	}
	l := &loader{doc: &document{source: source, pos: map[string]pos{}}, visits: maxYAMLNodes}
	m, err := l.schema(root, nil, 0)
	if err != nil {
		return nil, err
	}
	l.doc.root = m
	return l.doc, nil
}

// parseYAML returns the root node of the only document in data.
func parseYAML(data []byte, source string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ParseError{Source: source, Line: 1, Err: errors.New("empty schema")}
		}
		return nil, yamlError(source, data, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, yamlError(source, data, err)
	default:
		return nil, &ParseError{Source: source, Line: next.Line, Err: errors.New("more than one YAML document; a schema file holds exactly one")}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &ParseError{Source: source, Line: 1, Err: errors.New("not a YAML document")}
	}
	return doc.Content[0], nil
}

var (
	yamlLineRe   = regexp.MustCompile(`^line (\d+): (.*)$`)
	yamlAnchorRe = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

// yamlParserErrors are the problems the YAML parser (not its scanner)
// reports. The library gives their line 0-based, the start of the enclosing
// construct, and leaves it out when it is 0.
var yamlParserErrors = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"found undefined tag handle":             true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

// yamlError turns a YAML syntax error into a ParseError with a 1-based
// line. The library leaves the line out when it would be the first, and
// for unknown anchors, which are looked up in the text.
func yamlError(source string, data []byte, err error) *ParseError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	switch {
	case yamlParserErrors[msg]:
		line++
	case line == 0:
		line = 1
		if m := yamlAnchorRe.FindStringSubmatch(msg); m != nil {
			if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 {
				line += bytes.Count(data[:i], []byte("\n"))
			}
		}
	}
	return &ParseError{Source: source, Line: line, Err: errors.New(msg)}
}

// A loader converts YAML nodes into schema objects and tree values.
type loader struct {
	doc    *document
	visits int // YAML nodes left to visit; aliases can make a small file huge
}

func (l *loader) fail(loc values.Path, n *yaml.Node, format string, args ...any) error {
	return &ParseError{Source: l.doc.source, Line: n.Line, Path: loc.String(), Err: fmt.Errorf(format, args...)}
}

func (l *loader) mark(loc values.Path, n *yaml.Node) {
	l.doc.pos[loc.String()] = pos{source: l.doc.source, line: n.Line}
}

// enter follows an alias and charges the node against the visit budget and
// the depth limit.
func (l *loader) enter(n *yaml.Node, loc values.Path, depth int) (*yaml.Node, error) {
	for i := 0; n.Kind == yaml.AliasNode; i++ {
		if n.Alias == nil || i > 100 {
			return nil, l.fail(loc, n, "unresolvable alias")
		}
		n = n.Alias
	}
	l.visits--
	if l.visits < 0 {
		return nil, l.fail(loc, n, "schema expands to more than %d YAML nodes (aliases?)", maxYAMLNodes)
	}
	if depth > MaxDepth {
		return nil, l.fail(loc, n, "nested more than %d levels deep", MaxDepth)
	}
	return n, nil
}

// An entry is one key of a mapping node and its value.
type entry struct {
	key  string
	k, v *yaml.Node
}

// entries returns the keys of a mapping node in document order, then the
// keys YAML merge keys (<<) bring in that the mapping does not set itself,
// earlier merges winning. Duplicate keys are an error.
func (l *loader) entries(n *yaml.Node, loc values.Path, depth int) ([]entry, error) {
	var out []entry
	seen := map[string]bool{}
	var collect func(n *yaml.Node, explicit bool, depth int) error
	collect = func(n *yaml.Node, explicit bool, depth int) error {
		var merges []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				merges = append(merges, v)
				continue
			}
			key, err := l.key(k, loc, depth)
			if err != nil {
				return err
			}
			if seen[key] {
				if explicit {
					return l.fail(loc.Append(values.Key(key)), k, "duplicate key %q", key)
				}
				continue
			}
			seen[key] = true
			out = append(out, entry{key: key, k: k, v: v})
		}
		for _, m := range merges {
			sources, err := l.mergeSources(m, loc, depth+1)
			if err != nil {
				return err
			}
			for _, src := range sources {
				if err := collect(src, false, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, collect(n, true, depth)
}

// mergeSources returns the mappings a merge key's value names: one mapping
// or a list of them.
func (l *loader) mergeSources(v *yaml.Node, loc values.Path, depth int) ([]*yaml.Node, error) {
	v, err := l.enter(v, loc, depth)
	if err != nil {
		return nil, err
	}
	list := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		list = v.Content
	}
	out := make([]*yaml.Node, len(list))
	for i, e := range list {
		if out[i], err = l.enter(e, loc, depth); err != nil {
			return nil, err
		}
		if out[i].Kind != yaml.MappingNode {
			return nil, l.fail(loc, out[i], "a merge key (<<) takes a mapping or a list of mappings")
		}
	}
	return out, nil
}

// key returns a mapping key as a string: any scalar, as JSON would have it.
func (l *loader) key(k *yaml.Node, loc values.Path, depth int) (string, error) {
	k, err := l.enter(k, loc, depth+1)
	if err != nil {
		return "", err
	}
	if k.Kind != yaml.ScalarNode {
		return "", l.fail(loc, k, "mapping keys must be scalars")
	}
	return k.Value, nil
}

// value converts any YAML node into a tree value.
func (l *loader) value(n *yaml.Node, loc values.Path, depth int) (any, error) {
	n, err := l.enter(n, loc, depth)
	if err != nil {
		return nil, err
	}
	switch n.Kind {
	case yaml.ScalarNode:
		v, err := scalar(n)
		if err != nil {
			return nil, l.fail(loc, n, "%v", err)
		}
		return v, nil
	case yaml.SequenceNode:
		list := make([]any, 0, len(n.Content))
		for i, e := range n.Content {
			v, err := l.value(e, loc.Append(values.Index(i)), depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		return list, nil
	case yaml.MappingNode:
		entries, err := l.entries(n, loc, depth)
		if err != nil {
			return nil, err
		}
		m := make(map[string]any, len(entries))
		for _, e := range entries {
			if m[e.key], err = l.value(e.v, loc.Append(values.Key(e.key)), depth+1); err != nil {
				return nil, err
			}
		}
		return m, nil
	}
	return nil, l.fail(loc, n, "unsupported YAML node")
}

var decimalRe = regexp.MustCompile(`^[-+]?[0-9][0-9_]*$`)

// scalar converts a YAML scalar into a tree leaf: integers are int64, or
// json.Number when they do not fit; other numbers are float64.
func scalar(n *yaml.Node) (any, error) {
	switch tag := n.ShortTag(); tag {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, fmt.Errorf("invalid boolean %q", n.Value)
		}
		return b, nil
	case "!!int":
		return integer(n.Value)
	case "!!float":
		if decimalRe.MatchString(n.Value) { // an integer too large for int64
			return integer(n.Value)
		}
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, fmt.Errorf("invalid number %q", n.Value)
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%s is not a JSON number", n.Value)
		}
		return f, nil
	case "!!str", "!!timestamp", "!!binary":
		return n.Value, nil
	default:
		return nil, fmt.Errorf("unsupported YAML tag %s", tag)
	}
}

func integer(s string) (any, error) {
	var b big.Int
	if _, ok := b.SetString(strings.TrimPrefix(s, "+"), 0); !ok {
		return nil, fmt.Errorf("invalid integer %q", s)
	}
	if b.IsInt64() {
		return b.Int64(), nil
	}
	return json.Number(b.String()), nil
}
