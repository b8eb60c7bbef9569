package schema

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/values"
)

// MaxRefFiles bounds the other files one schema's $refs may read.
const MaxRefFiles = 64

var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// parseRef splits a $ref into the file it names ("" for the document it is
// written in) and the tokens of its JSON pointer fragment, unescaped (~1 is
// /, ~0 is ~, %XX as in a URI). Remote and absolute references are refused.
func parseRef(ref string) (file string, tokens []string, err error) {
	file, frag, _ := strings.Cut(ref, "#")
	if file == "" && frag == "" {
		return "", nil, fmt.Errorf("empty $ref")
	}
	if u, perr := url.Parse(file); perr != nil || u.Scheme != "" || u.Host != "" || u.RawQuery != "" {
		return "", nil, fmt.Errorf("$ref %q is not supported: only files beside the schema are read, never URLs; copy the schema into a file next to this one", ref)
	}
	if path.IsAbs(file) || filepath.IsAbs(file) {
		return "", nil, fmt.Errorf("$ref %q is not supported: write the path relative to the file holding the $ref", ref)
	}
	if frag == "" {
		return file, nil, nil
	}
	if !strings.HasPrefix(frag, "/") {
		return "", nil, fmt.Errorf("$ref %q is not supported: the part after # must be a JSON pointer such as '#/definitions/<name>'", ref)
	}
	unescaped, err := url.PathUnescape(frag)
	if err != nil {
		return "", nil, fmt.Errorf("$ref %q: %w", ref, err)
	}
	for _, t := range strings.Split(unescaped[1:], "/") {
		tokens = append(tokens, pointerUnescaper.Replace(t))
	}
	return file, tokens, nil
}

// pointer writes tokens back as a JSON pointer.
func pointer(tokens []string) string {
	esc := strings.NewReplacer("~", "~0", "/", "~1")
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(esc.Replace(t))
	}
	return b.String()
}

// refSiblings are the keywords allowed next to $ref. They annotate the
// reference and override the definition's own; anything else would be
// silently ignored by OpenAPI v3, so it is an error.
var refSiblings = map[string]bool{
	"description": true, "title": true, "default": true, "example": true, "examples": true,
	"deprecated": true, "readOnly": true, "writeOnly": true, "$comment": true,
}

// A refDoc is a document $refs point into: the schema being parsed (main),
// whose pointers are followed through its loaded, x-extend-merged schema
// nodes, or another file, whose pointers are followed through its raw tree
// (a fragment such as '#/versions/0/schema' may sit in any YAML document).
type refDoc struct {
	name string     // slash path below the resolver's root; relative $refs start from its directory
	doc  *schemaDoc // source name and positions, for errors
	main bool
	tree any           // other files: the raw tree
	pos  *document.Pos // other files: its positions
}

// key names a pointer into d, for the cache and for cycle reports.
func (d *refDoc) key(tokens []string) string {
	switch {
	case d.main && d.name == "":
		return "#" + pointer(tokens)
	case len(tokens) == 0:
		return d.name
	}
	return d.name + "#" + pointer(tokens)
}

// An expander replaces every $ref in a document by a copy of the schema it
// points at, itself expanded. Recursive references are rejected: the
// validator needs a finite schema.
type expander struct {
	resolve Resolver
	main    *refDoc
	files   map[string]*refDoc // other files read, by name
	done    map[string]obj     // expanded targets, by key
	active  []string           // targets being expanded, for cycle reports
	nodes   int                // schema nodes produced so far
}

// expandRefs expands the $refs of doc in place and drops its definitions.
// name is doc's path below resolve's root.
func expandRefs(doc *schemaDoc, name string, resolve Resolver) error {
	main := &refDoc{name: name, doc: doc, main: true}
	e := &expander{resolve: resolve, main: main, files: map[string]*refDoc{}, done: map[string]obj{}}
	root, err := e.schema(main, doc.root, nil, true)
	if err != nil {
		return err
	}
	delete(root, "definitions")
	doc.root = root
	return checkDepth(doc, root, nil, 0)
}

// schema expands the $refs in m and below; it returns the node that takes
// m's place. d is the document m is in.
func (e *expander) schema(d *refDoc, m obj, loc document.Path, isRoot bool) (obj, error) {
	if err := e.count(d, loc); err != nil {
		return nil, err
	}
	if ref, ok := m["$ref"].(string); ok {
		return e.reference(d, m, ref, loc, isRoot)
	}
	for _, c := range allChildren(m) {
		n, err := e.schema(d, c.schema, append(loc[:len(loc):len(loc)], c.loc...), false)
		if err != nil {
			return nil, err
		}
		c.set(n)
	}
	return m, nil
}

func (e *expander) count(d *refDoc, loc document.Path) error {
	e.nodes++
	if e.nodes > MaxNodes {
		return d.doc.errorAt(loc, fmt.Errorf("schema has more than %d nodes once $refs are expanded", MaxNodes))
	}
	return nil
}

// reference returns a copy of the schema ref points at, with m's
// annotations laid over it.
func (e *expander) reference(d *refDoc, m obj, ref string, loc document.Path, isRoot bool) (obj, error) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "$ref" || refSiblings[k] || isExtension(k) || (isRoot && (k == "definitions" || k == "$schema" || k == "$id" || k == "id")) {
			continue
		}
		return nil, d.doc.errorAt(loc.Append(document.Key(k)), fmt.Errorf("keyword %q next to $ref is not supported; combine them with allOf", k))
	}
	refLoc := loc.Append(document.Key("$ref"))
	file, tokens, err := parseRef(ref)
	if err != nil {
		return nil, d.doc.errorAt(refLoc, err)
	}
	target := d
	if file != "" {
		if target, err = e.file(d, file); err != nil {
			var pe *ParseError
			if errors.As(err, &pe) {
				return nil, err
			}
			return nil, d.doc.errorAt(refLoc, fmt.Errorf("$ref %q: %w", ref, err))
		}
	}
	def, err := e.target(d, target, tokens, ref, refLoc)
	if err != nil {
		return nil, err
	}
	if err := e.countTree(d, def, loc); err != nil {
		return nil, err
	}
	out := values.DeepCopy(def).(obj)
	delete(out, "definitions")
	for k, v := range m {
		if k != "$ref" {
			out[k] = v
		}
	}
	return out, nil
}

// file returns the document name names, relative to the directory of the
// document from, reading it the first time.
func (e *expander) file(from *refDoc, name string) (*refDoc, error) {
	name = path.Join(path.Dir(from.name), name)
	if e.main.name != "" && name == e.main.name {
		return e.main, nil
	}
	if f, ok := e.files[name]; ok {
		return f, nil
	}
	if e.resolve == nil {
		return nil, errors.New("a $ref to another file needs a resolver (Options.Resolve)")
	}
	if len(e.files) >= MaxRefFiles {
		return nil, fmt.Errorf("the schema's $refs read more than %d other files", MaxRefFiles)
	}
	data, source, err := e.resolve(name)
	if err != nil {
		return nil, err
	}
	if source == "" {
		source = name
	}
	tree, p, err := document.Loader{Positions: true, Limits: yamlLimits}.ParseAny(data, source)
	if err != nil {
		return nil, parseError(source, err)
	}
	if tree == nil {
		return nil, &ParseError{Source: source, Line: 1, Err: errors.New("empty schema file")}
	}
	f := &refDoc{name: name, doc: &schemaDoc{source: source, pos: map[string]pos{}}, tree: tree, pos: p}
	e.files[name] = f
	return f, nil
}

// target returns the expanded schema tokens point at in d. from and refLoc
// are where the $ref (written ref) is, for errors.
func (e *expander) target(from, d *refDoc, tokens []string, ref string, refLoc document.Path) (obj, error) {
	key := d.key(tokens)
	if t, ok := e.done[key]; ok {
		return t, nil
	}
	for i, a := range e.active {
		if a == key {
			chain := append(e.active[i:len(e.active):len(e.active)], key)
			return nil, from.doc.errorAt(refLoc, fmt.Errorf("recursive $ref is not supported: %s", strings.Join(chain, " -> ")))
		}
	}
	if len(e.active) >= MaxRefDepth {
		return nil, from.doc.errorAt(refLoc, fmt.Errorf("$refs nested more than %d deep", MaxRefDepth))
	}
	var node obj
	var loc document.Path
	var err error
	if d.main {
		node, loc, err = schemaAt(d.doc.root, tokens)
	} else {
		node, loc, err = d.fragment(tokens)
	}
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, from.doc.errorAt(refLoc, fmt.Errorf("$ref %q: %w", ref, err))
	}
	e.active = append(e.active, key)
	t, err := e.schema(d, node, loc, len(tokens) == 0 || !d.main)
	e.active = e.active[:len(e.active)-1]
	if err != nil {
		return nil, err
	}
	e.done[key] = t
	return t, nil
}

// schemaAt follows a JSON pointer from the root of a loaded schema through
// keywords that hold schemas, and returns the schema it names.
func schemaAt(root obj, tokens []string) (obj, document.Path, error) {
	cur, loc := root, document.Path{}
	for i := 0; i < len(tokens); i++ {
		kw := tokens[i]
		var next any
		switch keywords[kw] {
		case kindSchema, kindItems, kindSchemaOrBool:
			next = cur[kw]
			loc = loc.Append(document.Key(kw))
		case kindSchemaMap, kindPatternMap, kindDefinitions:
			if i+1 == len(tokens) {
				return nil, nil, fmt.Errorf("%s is a mapping of schemas, not a schema", loc.Append(document.Key(kw)))
			}
			i++
			m, _ := cur[kw].(obj)
			next = m[tokens[i]]
			if next == nil && kw == "definitions" && len(loc) == 0 {
				return nil, nil, fmt.Errorf("no definition %q", tokens[i])
			}
			loc = loc.Append(document.Key(kw)).Append(document.Key(tokens[i]))
		case kindSchemaList:
			if i+1 == len(tokens) {
				return nil, nil, fmt.Errorf("%s is a list of schemas, not a schema", loc.Append(document.Key(kw)))
			}
			i++
			list, _ := cur[kw].([]any)
			n, err := strconv.Atoi(tokens[i])
			if err != nil || n < 0 || n >= len(list) {
				return nil, nil, fmt.Errorf("%s has no item %q", loc.Append(document.Key(kw)), tokens[i])
			}
			next = list[n]
			loc = loc.Append(document.Key(kw)).Append(document.Index(n))
		default:
			return nil, nil, fmt.Errorf("the pointer does not lead to a schema: %q holds no schemas", kw)
		}
		m, ok := next.(obj)
		if !ok {
			return nil, nil, fmt.Errorf("there is no schema at %s", loc)
		}
		cur = m
	}
	return cur, loc, nil
}

// fragment finds the node tokens point at in another file's raw tree and
// loads a copy of it as a schema (with definitions allowed at its top, as
// at a file's root).
func (d *refDoc) fragment(tokens []string) (obj, document.Path, error) {
	v, p, loc := d.tree, d.pos, document.Path{}
	for _, t := range tokens {
		switch x := v.(type) {
		case map[string]any:
			c, ok := x[t]
			if !ok {
				return nil, nil, fmt.Errorf("%s has nothing at %s", d.doc.source, loc.Append(document.Key(t)))
			}
			v, p, loc = c, p.Key(t), loc.Append(document.Key(t))
		case []any:
			n, err := strconv.Atoi(t)
			if err != nil || n < 0 || n >= len(x) {
				return nil, nil, fmt.Errorf("%s has no item %q at %s", d.doc.source, t, loc)
			}
			v, p, loc = x[n], p.Item(n), loc.Append(document.Index(n))
		default:
			return nil, nil, fmt.Errorf("%s has nothing at %s", d.doc.source, loc.Append(document.Key(t)))
		}
	}
	l := &loader{doc: d.doc}
	m, err := l.schema(values.DeepCopy(v), p, loc, 0)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := m[xExtend]; ok {
		return nil, nil, d.doc.errorAt(loc.Append(document.Key(xExtend)), errors.New("x-extend is read only in the schema file itself, not in a file a $ref points into"))
	}
	return m, loc, nil
}

func (e *expander) countTree(d *refDoc, m obj, loc document.Path) error {
	if err := e.count(d, loc); err != nil {
		return err
	}
	for _, c := range allChildren(m) {
		if err := e.countTree(d, c.schema, loc); err != nil {
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

// rebaseRefs rewrites the file part of the $refs in the schemas below m,
// written relative to directory from, to be relative to directory to (both
// below the resolver's root): x-extend moves a parent's properties into the
// extending schema, which may sit in another directory.
func rebaseRefs(m obj, from, to string) {
	if from == to {
		return
	}
	if ref, ok := m["$ref"].(string); ok {
		if file, frag, _ := strings.Cut(ref, "#"); file != "" && !path.IsAbs(file) {
			if rel, err := filepath.Rel(filepath.FromSlash(to), filepath.FromSlash(path.Join(from, file))); err == nil {
				m["$ref"] = filepath.ToSlash(rel)
				if strings.Contains(ref, "#") {
					m["$ref"] = filepath.ToSlash(rel) + "#" + frag
				}
			}
		}
	}
	for _, c := range children(m, append(schemaKeywords, "definitions")...) {
		rebaseRefs(c.schema, from, to)
	}
}
