package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Errors wrapped by a *LoadError, for errors.Is.
var (
	ErrSyntax       = errors.New("syntax error")
	ErrDuplicateKey = errors.New("duplicate key")
	ErrNotMap       = errors.New("not a map")
	ErrInvalidUTF8  = errors.New("invalid UTF-8")
	ErrTooLarge     = errors.New("too large")
	ErrTooDeep      = errors.New("nested too deeply")
)

// LoadError is an error in a YAML or JSON document, with its place.
type LoadError struct {
	Source string // file name, or a description such as "ConfigMap default/x key values"
	Line   int    // 1-based; 0 when unknown
	Column int    // 1-based; 0 when unknown
	Msg    string
	Err    error // one of the Err* sentinels, or the error of a Checker
	Path   Path  // for errors from Decode, the field at fault; nil otherwise
}

func (e *LoadError) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

func (e *LoadError) Unwrap() error { return e.Err }

// Limits bound what a document may cost to load. A zero field takes the
// default of DefaultLimits.
//
// MaxNodes is checked twice: on the text, before the YAML library builds
// anything (an upper bound of the maps, lists and values written, see
// countNodes), and on the tree, aliases counted each time they are used.
// Parsing a document therefore costs memory in proportion to its nodes,
// at most MaxNodes, whatever the text. MaxAliasNodes and MaxAliasBytes
// bound what resolving aliases and merge keys (<<) adds to the tree: the
// nodes, and the bytes of the keys and scalars, copied from the anchors
// each time an alias is used. A negative MaxAliasNodes or MaxAliasBytes
// means no limit of its own (MaxNodes still holds).
type Limits struct {
	MaxBytes      int64 // size of the document
	MaxDepth      int   // nesting of maps and lists
	MaxNodes      int   // nodes, aliases counted each time they are used (guards against "billion laughs")
	MaxAliasNodes int   // nodes added by resolving aliases
	MaxAliasBytes int64 // bytes of keys and scalars added by resolving aliases
	// MaxCost, when positive, is an allocation budget in bytes for
	// parsing: a node costs about NodeCost bytes (the YAML library's node,
	// the tree's value and its position), so MaxNodes is lowered to
	// MaxCost/NodeCost, and like MaxNodes the budget is checked on the
	// text before the YAML library builds anything, and while the tree is
	// built. For callers whose memory is shared among many documents (a
	// controller serving every tenant).
	MaxCost int64
}

// NodeCost is what parsing costs a node at its peak, the unit of
// Limits.MaxCost: measured on a flow list of 480,000 one-digit integers
// (94 MiB at the peak, ~205 bytes a node), rounded up.
const NodeCost = 256

// DefaultLimits returns the limits used when a Loader sets none.
func DefaultLimits() Limits {
	return Limits{MaxBytes: 64 << 20, MaxDepth: 512, MaxNodes: 4 << 20, MaxAliasNodes: 1 << 20, MaxAliasBytes: 16 << 20}
}

// Pos is where a node of a tree was written: the line and column of its map
// key (or of the item, inside a list), with the positions of its children.
type Pos struct {
	Line, Column int
	Keys         map[string]*Pos
	Items        []*Pos
}

// Key returns the position of a child key, or nil.
func (p *Pos) Key(k string) *Pos {
	if p == nil {
		return nil
	}
	return p.Keys[k]
}

// Item returns the position of a list item, or nil.
func (p *Pos) Item(i int) *Pos {
	if p == nil || i < 0 || i >= len(p.Items) {
		return nil
	}
	return p.Items[i]
}

// Lookup returns the position of the node at path, or nil.
func (p *Pos) Lookup(path Path) *Pos {
	for _, s := range path {
		if s.IsIndex {
			p = p.Item(s.Index)
		} else {
			p = p.Key(s.Key)
		}
	}
	return p
}

// A Loader reads YAML and JSON documents into trees.
type Loader struct {
	Limits    Limits // zero fields take DefaultLimits
	Positions bool   // record the line of every node
	JSON      bool   // accept JSON only, not YAML
	// YAML11 reads scalars as YAML 1.1 and map keys as JSON keys, the way
	// kubectl and the argocd CLI read manifests (sigs.k8s.io/yaml): yes/no/
	// on/off are booleans, 012 is octal, a key `yes` is "true" (yaml11.go).
	YAML11 bool
	// YAML11Bools reads only the values YAML 1.1 takes for booleans as
	// booleans: y, yes, on, n, no, off (in their usual capitalizations),
	// unquoted and untagged. Keys and all else are read as YAML 1.2.
	// addon-operator reads values.yaml files so.
	YAML11Bools bool
	// LastKeyWins takes a key given twice in a map for its last value,
	// as sigs.k8s.io/yaml and encoding/json read it (Argo CD's repo-server
	// reading a plugin's output), instead of an error (ErrDuplicateKey).
	LastKeyWins bool
	// FirstLine is the line of its file that the data starts on, for a
	// document cut from a longer stream: positions and errors count lines
	// of the file. 0 means 1.
	FirstLine int
}

// Parse parses one YAML or JSON document holding a map, with default limits.
// An empty document is an empty map.
func Parse(data []byte, source string) (map[string]any, error) {
	m, _, err := Loader{}.Parse(data, source)
	return m, err
}

// MaxBytes returns the size limit the Loader applies to a document.
func (l Loader) MaxBytes() int64 { return l.limits().MaxBytes }

// Parse parses YAML or JSON holding a map. As in Helm 4, a YAML stream of
// several documents is merged in order, each document a map (an empty
// document is an empty map).
func (l Loader) Parse(data []byte, source string) (map[string]any, *Pos, error) {
	docs, err := l.parseStream(data, source)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]any{}
	var outPos *Pos
	if l.Positions {
		outPos = &Pos{Line: 1, Column: 1, Keys: map[string]*Pos{}}
	}
	for _, d := range docs {
		switch m := d.v.(type) {
		case nil:
		case map[string]any:
			if len(docs) == 1 {
				return m, d.pos, nil
			}
			mergeDoc(out, m, outPos, d.pos)
		default:
			return nil, nil, &LoadError{Source: source, Line: lineOf(d.pos), Column: colOf(d.pos), Err: ErrNotMap,
				Msg: fmt.Sprintf("the document must be a map of keys to values, but it is %s", Describe(d.v))}
		}
	}
	return out, outPos, nil
}

// mergeDoc merges one document of a stream into the ones before it.
func mergeDoc(dst, src map[string]any, dpos, spos *Pos) {
	for k, sv := range src {
		sm, sIsMap := sv.(map[string]any)
		dm, dIsMap := dst[k].(map[string]any)
		switch {
		case sv == nil:
			delete(dst, k)
		case sIsMap && dIsMap:
			mergeDoc(dm, sm, dpos.Key(k), spos.Key(k))
			continue
		default:
			dst[k] = sv
		}
		if dpos != nil {
			dpos.Keys[k] = spos.Key(k)
		}
	}
}

// At returns the line and column of p; 0, 0 when p is nil.
func (p *Pos) At() (line, column int) {
	if p == nil {
		return 0, 0
	}
	return p.Line, p.Column
}

func lineOf(p *Pos) int {
	line, _ := p.At()
	return line
}

func colOf(p *Pos) int {
	_, col := p.At()
	return col
}

type parsedDoc struct {
	v   any
	pos *Pos
}

// ParseAny parses one YAML or JSON document of any shape; an empty document
// is nil. A second non-empty document is an error.
func (l Loader) ParseAny(data []byte, source string) (any, *Pos, error) {
	docs, err := l.parseStream(data, source)
	if err != nil {
		return nil, nil, err
	}
	var found *parsedDoc
	for i := range docs {
		if docs[i].v == nil {
			continue
		}
		if found != nil {
			return nil, nil, &LoadError{Source: source, Line: lineOf(docs[i].pos), Err: ErrSyntax,
				Msg: "a second YAML document starts here; this input holds exactly one document"}
		}
		found = &docs[i]
	}
	if found == nil {
		return nil, nil, nil
	}
	return found.v, found.pos, nil
}

// A Document is one document of a YAML stream, with the positions of its
// values when the Loader keeps them (else the document's own position).
type Document struct {
	Value any
	Pos   *Pos
}

// ParseDocuments parses every non-empty document of a YAML stream (or one
// JSON document), in order, for inputs that hold several objects (a
// manifest file). The limits apply to the stream as a whole.
func (l Loader) ParseDocuments(data []byte, source string) ([]Document, error) {
	docs, err := l.parseStream(data, source)
	if err != nil {
		return nil, err
	}
	out := make([]Document, 0, len(docs))
	for _, d := range docs {
		if d.v != nil {
			out = append(out, Document{Value: d.v, Pos: d.pos})
		}
	}
	return out, nil
}

// parseStream parses every document of a YAML stream.
func (l Loader) parseStream(data []byte, source string) ([]parsedDoc, error) {
	lim := l.limits()
	if int64(len(data)) > lim.MaxBytes {
		return nil, &LoadError{Source: source, Msg: fmt.Sprintf("document is larger than the limit of %d bytes", lim.MaxBytes), Err: ErrTooLarge}
	}
	if !utf8.Valid(data) {
		line, col := invalidUTF8At(data)
		return nil, &LoadError{Source: source, Line: line + max(l.FirstLine-1, 0), Column: col, Err: ErrInvalidUTF8,
			Msg: "invalid UTF-8: save the file as UTF-8"}
	}
	// One converter for the whole stream: the node budget is shared.
	c := converter{source: source, lim: lim, positions: l.Positions, jsonOnly: l.JSON, yaml11: l.YAML11, yaml11Bools: l.YAML11Bools, lastKeyWins: l.LastKeyWins, lineOff: max(l.FirstLine-1, 0)}
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // a UTF-8 byte order mark
	text := bytes.Trim(data, " \t\r\n")             // YAML's and JSON's white space, not Unicode's: "\u2008" is a value
	if len(text) == 0 {
		return nil, nil
	}
	if l.JSON || looksJSON(text) && json.Valid(text) {
		v, pos, err := c.parseJSON(data)
		if err != nil {
			return nil, err
		}
		if pos == nil {
			pos = &Pos{Line: 1, Column: 1}
		}
		return []parsedDoc{{v: v, pos: pos}}, nil
	}
	// Count before the YAML library builds its tree of the whole
	// document: a text of small values costs it far more than the tree.
	if _, line, over := countNodes(data, lim.MaxNodes); over {
		return nil, tooManyNodes(source, line+c.lineOff, lim.MaxNodes)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []parsedDoc
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			if looksJSON(text) {
				// Meant as JSON, most likely: the JSON error is the clearer one.
				return nil, c.jsonSyntaxError(data, json.Unmarshal(data, new(json.RawMessage)))
			}
			return nil, syntaxError(source, data, err, c.lineOff)
		}
		if len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		v, pos, err := c.node(root, 0)
		if err != nil {
			return nil, err
		}
		if pos == nil { // positions off: keep the document's own, for errors
			pos = &Pos{Line: c.line(root), Column: root.Column}
		}
		docs = append(docs, parsedDoc{v: v, pos: pos})
	}
}

func (l Loader) limits() Limits {
	d := DefaultLimits()
	if l.Limits.MaxBytes > 0 {
		d.MaxBytes = l.Limits.MaxBytes
	}
	if l.Limits.MaxDepth > 0 {
		d.MaxDepth = l.Limits.MaxDepth
	}
	if l.Limits.MaxNodes > 0 {
		d.MaxNodes = l.Limits.MaxNodes
	}
	if l.Limits.MaxAliasNodes != 0 {
		d.MaxAliasNodes = l.Limits.MaxAliasNodes
	}
	if l.Limits.MaxAliasBytes != 0 {
		d.MaxAliasBytes = l.Limits.MaxAliasBytes
	}
	if l.Limits.MaxCost > 0 {
		d.MaxCost = l.Limits.MaxCost
		d.MaxNodes = min(d.MaxNodes, int(max(l.Limits.MaxCost/NodeCost, 1)))
	}
	return d
}

var (
	yamlLine   = regexp.MustCompile(`^yaml: line (\d+): `)
	yamlAnchor = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)
)

// yamlParserErrors are the errors of the YAML parser (not its scanner): the
// library gives their line 0-based, the start of the enclosing construct,
// and leaves it out when it is 0.
var yamlParserErrors = map[string]bool{
	"did not find expected <document start>": true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found undefined tag handle":             true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

// syntaxError turns a YAML library error into a LoadError with a 1-based line.
func syntaxError(source string, data []byte, err error, lineOff int) *LoadError {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	switch {
	case yamlParserErrors[msg]:
		line++
	case line == 0:
		line = 1
		if m := yamlAnchor.FindStringSubmatch(msg); m != nil {
			if i := bytes.Index(data, []byte("*"+m[1])); i >= 0 {
				line += bytes.Count(data[:i], []byte("\n"))
			}
		}
	}
	return &LoadError{Source: source, Line: line + lineOff, Err: ErrSyntax, Msg: msg}
}

func invalidUTF8At(data []byte) (line, col int) {
	line, col = 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return line, col
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += size
	}
	return line, col
}

type converter struct {
	jsonOnly bool
	yaml11   bool // YAML 1.1 scalars and JSON keys (Loader.YAML11)
	// yaml11Bools: YAML 1.1 booleans among plain values (Loader.YAML11Bools)
	yaml11Bools bool
	source      string
	lim         Limits
	positions   bool
	nodes       int
	lineOff     int        // lines of the file before the data
	alias       int        // depth of alias resolution: > 0 inside an alias's copy
	anchored    int        // depth of anchored nodes: > 0 inside one, which aliases may copy again
	aliasUse    *yaml.Node // the outermost alias being resolved
	aliasNodes  int
	aliasBytes  int64

	lastKeyWins bool // a repeated key replaces the value (Loader.LastKeyWins)
}

// releasing reports whether the children of n may be dropped from the
// library's tree once converted, so that the garbage collector takes them
// while the rest converts: not inside an anchored node (an alias may
// convert it again), nor inside a copy made for an alias.
func (c *converter) releasing(n *yaml.Node) bool {
	return c.anchored == 0 && c.alias == 0 && n.Anchor == ""
}

// aliased counts a node copied by resolving an alias, with the bytes of
// its text.
func (c *converter) aliased(n *yaml.Node, text int) error {
	if c.alias == 0 {
		return nil
	}
	c.aliasNodes++
	c.aliasBytes += int64(text)
	if c.aliasUse != nil {
		n = c.aliasUse // the error is the alias's, not the anchor's
	}
	if c.lim.MaxAliasNodes > 0 && c.aliasNodes > c.lim.MaxAliasNodes {
		return c.errorf(n, ErrTooLarge, "YAML aliases and merge keys (<<) expand to more than %d values; write the values out, or use fewer aliases of large anchors", c.lim.MaxAliasNodes)
	}
	if c.lim.MaxAliasBytes > 0 && c.aliasBytes > c.lim.MaxAliasBytes {
		return c.errorf(n, ErrTooLarge, "YAML aliases and merge keys (<<) expand to more than %d bytes of keys and values; write the values out, or use fewer aliases of large anchors", c.lim.MaxAliasBytes)
	}
	return nil
}

// line returns the line of n in the file.
func (c *converter) line(n *yaml.Node) int { return n.Line + c.lineOff }

func (c *converter) errorf(n *yaml.Node, sentinel error, format string, args ...any) *LoadError {
	return &LoadError{Source: c.source, Line: c.line(n), Column: n.Column, Err: sentinel, Msg: fmt.Sprintf(format, args...)}
}

func (c *converter) pos(n *yaml.Node) *Pos {
	if !c.positions {
		return nil
	}
	return &Pos{Line: c.line(n), Column: n.Column}
}

func (c *converter) node(n *yaml.Node, depth int) (any, *Pos, error) {
	c.nodes++
	if c.nodes > c.lim.MaxNodes {
		return nil, nil, c.errorf(n, ErrTooLarge, "document expands to more than %d nodes (aliases count each time they are used)", c.lim.MaxNodes)
	}
	if depth > c.lim.MaxDepth {
		return nil, nil, c.errorf(n, ErrTooDeep, "maps and lists are nested more than %d levels deep", c.lim.MaxDepth)
	}
	if n.Kind != yaml.AliasNode {
		if err := c.aliased(n, len(n.Value)); err != nil {
			return nil, nil, err
		}
	}
	if n.Anchor != "" {
		c.anchored++
		defer func() { c.anchored-- }()
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, nil, c.errorf(n, ErrSyntax, "unknown alias %q", n.Value)
		}
		if c.alias == 0 {
			c.aliasUse = n
		}
		c.alias++
		v, p, err := c.node(n.Alias, depth+1)
		c.alias--
		if c.alias == 0 {
			c.aliasUse = nil
		}
		if p != nil {
			p = &Pos{Line: c.line(n), Column: n.Column, Keys: p.Keys, Items: p.Items}
		}
		return v, p, err
	case yaml.MappingNode:
		return c.mapping(n, depth)
	case yaml.SequenceNode:
		list := make([]any, 0, len(n.Content))
		pos := c.pos(n)
		release := c.releasing(n)
		for i, item := range n.Content {
			v, p, err := c.node(item, depth+1)
			if err != nil {
				return nil, nil, err
			}
			if release {
				n.Content[i] = nil
			}
			list = append(list, v)
			if pos != nil {
				pos.Items = append(pos.Items, p)
			}
		}
		return list, pos, nil
	case yaml.ScalarNode:
		v, err := c.scalar(n)
		return v, c.pos(n), err
	case yaml.DocumentNode:
		return nil, nil, c.errorf(n, ErrSyntax, "unexpected nested document")
	}
	return nil, nil, c.errorf(n, ErrSyntax, "unsupported YAML node")
}

func (c *converter) mapping(n *yaml.Node, depth int) (any, *Pos, error) {
	m := make(map[string]any, len(n.Content)/2)
	pos := c.pos(n)
	if pos != nil {
		pos.Keys = make(map[string]*Pos, len(n.Content)/2)
	}
	var lines map[string]int // first line of each explicit key, for duplicate errors
	var merges []*yaml.Node
	release := c.releasing(n)
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if kn.Kind == yaml.ScalarNode && kn.ShortTag() == "!!merge" {
			merges = append(merges, vn)
			continue
		}
		key, err := c.key(kn)
		if err != nil {
			return nil, nil, err
		}
		if err := c.aliased(kn, len(key)); err != nil {
			return nil, nil, err
		}
		if _, dup := m[key]; dup && !c.lastKeyWins {
			first := 0
			if lines != nil {
				first = lines[key]
			}
			return nil, nil, c.errorf(kn, ErrDuplicateKey, "duplicate key %q (first defined at line %d); remove one of them", key, first)
		}
		if lines == nil {
			lines = make(map[string]int, len(n.Content)/2)
		}
		lines[key] = c.line(kn)
		v, p, err := c.node(vn, depth+1)
		if err != nil {
			return nil, nil, err
		}
		if release {
			n.Content[i], n.Content[i+1] = nil, nil
		}
		m[key] = v
		if pos != nil {
			if p == nil {
				p = &Pos{}
			}
			p.Line, p.Column = c.line(kn), kn.Column
			pos.Keys[key] = p
		}
	}
	// Merge keys (<<) supply keys the map does not set itself; earlier
	// sources in a merge list win over later ones, as YAML specifies.
	for _, mn := range merges {
		sources := []*yaml.Node{mn}
		if mn.Kind == yaml.SequenceNode {
			sources = mn.Content
		}
		for _, src := range sources {
			v, p, err := c.node(src, depth+1)
			if err != nil {
				return nil, nil, err
			}
			sm, ok := v.(map[string]any)
			if !ok {
				return nil, nil, c.errorf(src, ErrSyntax, "a merge key (<<) must refer to a map or a list of maps, not %s", Describe(v))
			}
			for k, sv := range sm {
				if _, set := m[k]; set {
					continue
				}
				m[k] = sv
				if pos != nil {
					pos.Keys[k] = p.Key(k)
				}
			}
		}
	}
	return m, pos, nil
}

func (c *converter) key(kn *yaml.Node) (string, error) {
	for kn.Kind == yaml.AliasNode && kn.Alias != nil {
		kn = kn.Alias
	}
	if kn.Kind != yaml.ScalarNode {
		return "", c.errorf(kn, ErrSyntax, "a map key must be a plain value, not a %s", kindName(kn.Kind))
	}
	if c.yaml11 {
		return c.key11(kn)
	}
	return kn.Value, nil
}

func (c *converter) scalar(n *yaml.Node) (any, error) {
	if c.yaml11 {
		return c.scalar11(n)
	}
	switch n.ShortTag() {
	case "!!str":
		if c.yaml11Bools && n.Style == 0 {
			if b, ok := yaml11Bools[n.Value]; ok {
				return b, nil
			}
		}
		return n.Value, nil
	case "!!timestamp", "!!binary":
		return n.Value, nil
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, c.errorf(n, ErrSyntax, "%q is not a boolean", n.Value)
		}
		return b, nil
	case "!!int":
		return c.integer(n)
	case "!!float":
		if s := strings.TrimPrefix(n.Value, "+"); isDecimal(s) && n.Style&yaml.TaggedStyle == 0 {
			// A plain integer beyond the int64 range (YAML resolves it
			// as a float): keep it exact.
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return i, nil
			}
			return json.Number(s), nil
		}
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil {
			return f, nil
		}
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, c.errorf(n, ErrSyntax, "%q is not a number", n.Value)
		}
		return f, nil
	}
	// Application-specific tags (!Ref, !vault ...) are kept as their text.
	return n.Value, nil
}

func (c *converter) integer(n *yaml.Node) (any, error) {
	if i, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
		return i, nil
	}
	var i int64
	if err := n.Decode(&i); err == nil {
		return i, nil
	}
	// Out of the int64 range: keep the exact decimal digits.
	s := strings.TrimPrefix(strings.ReplaceAll(n.Value, "_", ""), "+")
	if isDecimal(s) {
		return json.Number(s), nil
	}
	var u uint64
	if err := n.Decode(&u); err == nil {
		return json.Number(strconv.FormatUint(u, 10)), nil
	}
	return nil, c.errorf(n, ErrSyntax, "integer %q is out of range; quote it to keep it as a string", n.Value)
}

func isDecimal(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "map"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "scalar"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}

// Describe names the type of a tree value and shows it, for error messages:
// `the string "x"`, `the integer 3`, `a map`.
func Describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	case string:
		return fmt.Sprintf("the string %q", Clip(v, 60))
	case bool:
		return fmt.Sprintf("the boolean %t", v)
	case int64, json.Number:
		return fmt.Sprintf("the integer %v", v)
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return fmt.Sprintf("the number %v", v)
		}
		return fmt.Sprintf("the number %s", strconv.FormatFloat(v, 'g', -1, 64))
	}
	return fmt.Sprintf("a %T", v)
}

// Clip cuts s to at most n bytes on a rune boundary, marking the cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
