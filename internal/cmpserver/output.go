package cmpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/manifest"
)

// Limits on what ParseManifests accepts.
const (
	// MaxManifests bounds the number of manifests in one output.
	MaxManifests = 100_000
	// MaxManifestBytes bounds the total size of the JSON manifests: they
	// travel in one gRPC message, which Argo CD caps at 100 MiB.
	MaxManifestBytes = 96 << 20
	// MaxListNesting bounds how deep Lists inside Lists are unpacked.
	MaxListNesting = 8
	// DefaultMaxManifestNodes bounds the maps, lists and values of all
	// documents together, YAML aliases counted each time they are used
	// (cmp serve --max-manifest-values).
	DefaultMaxManifestNodes = 4 << 20
	// maxQuoted is how much of an output an error quotes.
	maxQuoted = 200
)

// ErrInvalidManifest is wrapped by the errors of ParseManifests about a
// document that is not a manifest: not a map, or without apiVersion or kind.
var ErrInvalidManifest = errors.New("invalid manifest")

// ParseManifests reads the manifests a generate command printed, and
// returns each as a compact JSON object (keys sorted), the form Argo CD's
// repo-server expects. Source names the output in errors.
//
// The output is a manifest stream, read by package manifest: a YAML stream
// (documents separated by "---") or a JSON stream (JSON values one after
// another); a document that is a list holds manifests, as a JSON array of
// objects does. Empty documents are dropped. An object with an items list
// (List, ConfigMapList...) is unpacked into its items, Lists inside it too,
// and one with null items is an empty list (manifest.ListItems). Every
// manifest must be a map with apiVersion and kind strings, as Argo CD's
// repo-server requires. Numbers are kept exact: integers beyond 2^53 are
// not rounded. YAML is read as YAML 1.1, and a key repeated in a map takes
// its last value, as Argo CD reads a plugin's output (sigs.k8s.io/yaml).
//
// Errors are *document.LoadError naming source and the line: output that is
// not YAML or JSON (the error quotes its start), a document that is not a
// manifest (wrapping ErrInvalidManifest, naming the document's number,
// counted from 1 among the non-empty documents), or output past the limits
// (wrapping document.ErrTooLarge).
func ParseManifests(out []byte, source string) ([]string, error) {
	return ParseManifestsLimited(out, source, 0)
}

// ParseManifestsLimited is ParseManifests with a budget of maxNodes maps,
// lists and values in all documents together (0: the default,
// DefaultMaxManifestNodes). Each document is turned into JSON as soon as
// it is read, and dropped: a stream costs the memory of its largest
// document, some 300 bytes a value, and of the JSON. Positions are
// recorded only to place an error about a manifest, on a second reading.
func ParseManifestsLimited(out []byte, source string, maxNodes int) ([]string, error) {
	return parseManifestsWithin(out, source, maxNodes, MaxManifestBytes)
}

// parseManifestsWithin is ParseManifestsLimited with a bound of maxBytes
// (0: MaxManifestBytes) on the manifests' JSON.
func parseManifestsWithin(out []byte, source string, maxNodes, maxBytes int) ([]string, error) {
	if maxNodes <= 0 {
		maxNodes = DefaultMaxManifestNodes
	}
	if maxBytes <= 0 {
		maxBytes = MaxManifestBytes
	}
	manifests, err := parseManifests(out, source, maxNodes, maxBytes, false)
	if errors.Is(err, ErrInvalidManifest) {
		// Read again with positions, for the line of the error.
		if _, perr := parseManifests(out, source, maxNodes, maxBytes, true); perr != nil {
			err = perr
		}
	}
	return manifests, err
}

func parseManifests(out []byte, source string, maxNodes, maxBytes int, positions bool) ([]string, error) {
	p := &manifestParser{source: source, out: out, maxNodes: maxNodes, maxBytes: maxBytes}
	lim := manifest.Limits{MaxDocuments: MaxManifests, MaxNodes: maxNodes}
	var addErr error // an error about a manifest, as it is
	err := manifest.Each(out, source, manifest.Options{Limits: lim, Positions: positions, YAML11: true, LastKeyWins: true}, func(d manifest.Document) error {
		loc := location{doc: d.Index, pos: d.Pos, start: d.Line}
		if !positions {
			loc.pos = nil
		}
		if list, ok := d.Value.([]any); ok {
			for i, item := range list {
				if addErr = p.add(item, loc.item("", i), 0); addErr != nil {
					return addErr
				}
			}
			return nil
		}
		addErr = p.add(d.Value, loc, 0)
		return addErr
	})
	switch {
	case err == nil:
	case addErr != nil:
		return nil, addErr
	case errors.Is(err, document.ErrTooLarge):
		var le *document.LoadError
		if errors.As(err, &le) && strings.Contains(le.Msg, "values") {
			// The budget of values, not the size or the documents.
			e := *le
			e.Msg += "; the plugin server's limit is --max-manifest-values"
			return nil, &e
		}
		return nil, err
	default:
		return nil, p.fail(err)
	}
	return p.result(), nil
}

func (p *manifestParser) result() []string {
	if p.manifests == nil {
		return []string{}
	}
	return p.manifests
}

// fail adds the start of the output to an error saying that it is not YAML
// or JSON.
func (p *manifestParser) fail(err error) error {
	var le *document.LoadError
	if !manifest.IsSyntax(err) || !errors.As(err, &le) {
		return err
	}
	if strings.Contains(le.Msg, "which JSON cannot hold") {
		// A value YAML has and JSON lacks (.nan, .inf, a key that reads
		// as null): the output is YAML, and the message says what to do.
		return err
	}
	e := *le
	if errors.Is(le.Err, document.ErrInvalidUTF8) {
		e.Msg = "invalid UTF-8" // not the loader's advice about files
	}
	e.Msg = fmt.Sprintf("%s: the output is not YAML or JSON manifests; it starts with %s: print only manifests to stdout, and anything else to stderr",
		e.Msg, quoteStart(p.out))
	return &e
}

type manifestParser struct {
	source    string
	out       []byte // the whole output, for quoting
	manifests []string
	bytes     int // total length of manifests
	nodes     int // nodes counted
	maxNodes  int
	maxBytes  int // of the manifests' JSON
}

// location is where a manifest is: its document and the path to it.
type location struct {
	doc   int           // counted from 1
	path  string        // such as "[2]" or "items[0]"; "" for the document itself
	pos   *document.Pos // positions in lines of the whole output
	start int           // the line the document starts on
}

// line returns the line of pos, or of the manifest when pos is nil.
func (l location) line(pos *document.Pos) int {
	if pos == nil {
		pos = l.pos
	}
	if pos == nil || pos.Line == 0 {
		return l.start
	}
	return pos.Line
}

// item returns the location of item i of the list in field ("" for the
// manifest itself being a list).
func (l location) item(field string, i int) location {
	list, path := l.pos, l.path
	if field != "" {
		list = list.Key(field)
		if path != "" {
			path += "."
		}
		path += field
	}
	sub := location{doc: l.doc, path: path + "[" + strconv.Itoa(i) + "]", pos: list.Item(i), start: l.start}
	if sub.pos == nil {
		sub.pos = list
	}
	return sub
}

func (l location) String() string {
	s := "document " + strconv.Itoa(l.doc)
	if l.path != "" {
		s += " at " + l.path
	}
	return s
}

func (p *manifestParser) invalid(loc location, pos *document.Pos, format string, args ...any) error {
	return &document.LoadError{Source: p.source, Line: loc.line(pos), Err: ErrInvalidManifest,
		Msg: loc.String() + " " + fmt.Sprintf(format, args...)}
}

// add checks one manifest and adds it, or the items of a List.
func (p *manifestParser) add(v any, loc location, nesting int) error {
	m, ok := v.(map[string]any)
	if !ok {
		return p.invalid(loc, nil, "is %s, not a manifest: a manifest is a map with apiVersion and kind; print only manifests to stdout, and anything else to stderr", describeDoc(v))
	}
	var missing []string
	for _, field := range []string{"apiVersion", "kind"} {
		switch f := m[field]; f.(type) {
		case nil:
			missing = append(missing, field)
		case string:
			if f == "" {
				missing = append(missing, field)
			}
		default:
			return p.invalid(loc, loc.pos.Key(field), "has a %s that is %s; it must be a string", field, document.Describe(f))
		}
	}
	if len(missing) > 0 {
		return p.invalid(loc, nil, "has no %s; every manifest needs apiVersion and kind", strings.Join(missing, " or "))
	}
	kind := m["kind"].(string)
	// Lists are unpacked as the repo-server would (manifest.ListItems),
	// nested ones too, so that every item is checked here.
	if items, isList := manifest.ListItems(m); isList {
		if nesting >= MaxListNesting {
			return p.invalid(loc, nil, "is a %s inside %d Lists; Lists may be nested at most %d deep", kind, nesting, MaxListNesting)
		}
		for i, item := range items {
			if err := p.add(item, loc.item("items", i), nesting+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := p.measure(m, loc); err != nil {
		return err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return p.invalid(loc, nil, "cannot be written as JSON: %v", err)
	}
	s := strings.TrimSuffix(b.String(), "\n")
	p.bytes += len(s)
	if p.bytes > p.maxBytes {
		return p.tooBig(loc.line(nil))
	}
	if len(p.manifests) >= MaxManifests {
		return p.tooMany(loc.line(nil))
	}
	p.manifests = append(p.manifests, s)
	return nil
}

// measure counts a manifest's nodes and estimates its size as JSON (YAML
// aliases repeat what they refer to, so it can be far larger than the
// input), and finds numbers JSON cannot hold. It walks the manifest in the
// order of its JSON, so that its errors are the same every time.
func (p *manifestParser) measure(m map[string]any, loc location) error {
	size := 0
	var path document.Path // built only for an error
	var walk func(v any, pos *document.Pos) error
	walk = func(v any, pos *document.Pos) error {
		p.nodes++
		size += 2
		if p.nodes > p.maxNodes || p.bytes+size > p.maxBytes {
			return p.tooBig(loc.line(nil))
		}
		switch v := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				size += len(k) + 3
				path = append(path, document.Key(k))
				if err := walk(v[k], pos.Key(k)); err != nil {
					return err
				}
				path = path[:len(path)-1]
			}
		case []any:
			for i, e := range v {
				path = append(path, document.Index(i))
				if err := walk(e, pos.Item(i)); err != nil {
					return err
				}
				path = path[:len(path)-1]
			}
		case string:
			size += len(v)
		case json.Number:
			size += len(v)
		case float64:
			if math.IsInf(v, 0) || math.IsNaN(v) {
				return p.invalid(loc, pos, "holds the number %v at %s, which JSON cannot hold; quote it to keep it as a string", v, path)
			}
		}
		return nil
	}
	return walk(m, loc.pos)
}

func (p *manifestParser) tooMany(line int) error {
	return &document.LoadError{Source: p.source, Line: line, Err: document.ErrTooLarge,
		Msg: fmt.Sprintf("the output holds more than %d manifests; split the application", MaxManifests)}
}

func (p *manifestParser) tooBig(line int) error {
	return &document.LoadError{Source: p.source, Line: line, Err: document.ErrTooLarge,
		Msg: fmt.Sprintf("the manifests are larger than %d bytes (or hold more than %d values) as JSON; split the application, or check for YAML aliases that repeat large values (the plugin server's limit of values is --max-manifest-values)",
			p.maxBytes, p.maxNodes)}
}

// quoteStart quotes the first bytes of out, escaping what is not printable.
func quoteStart(out []byte) string {
	out = bytes.TrimLeft(bytes.TrimPrefix(out, []byte("\ufeff")), " \t\r\n")
	if len(out) <= maxQuoted {
		return strconv.Quote(string(out))
	}
	n := maxQuoted
	for i := 0; i < utf8.UTFMax && n > 0 && !utf8.RuneStart(out[n]); i++ {
		n--
	}
	return strconv.Quote(string(out[:n])) + "..."
}

// describeDoc names a document that is not a manifest, quoting a string
// at length: it is likely a message printed to stdout by mistake.
func describeDoc(v any) string {
	if s, ok := v.(string); ok {
		return "the string " + quoteStart([]byte(s))
	}
	return document.Describe(v)
}
