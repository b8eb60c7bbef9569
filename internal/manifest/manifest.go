package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/limits"
)

// Limits bound what a stream may cost to read. A zero field takes the
// default of DefaultLimits.
type Limits struct {
	MaxDocuments int   // non-empty documents in the stream
	MaxBytes     int64 // size of the stream
	MaxNodes     int   // maps, lists and values of all documents, aliases counted each time they are used
	MaxDepth     int   // nesting of maps and lists in a document; 0 takes document.DefaultLimits'
}

// DefaultLimits returns the limits used when a field of Limits is zero.
func DefaultLimits() Limits {
	return Limits{MaxDocuments: 100_000, MaxBytes: 64 << 20, MaxNodes: 4 << 20}
}

func (l Limits) withDefaults() Limits { return limits.Or(l, DefaultLimits()) }

// A Document is one non-empty document of a stream.
type Document struct {
	Index int           // among the non-empty documents, counted from 1
	Line  int           // the line of the stream the document's text starts on
	Value any           // the parsed tree (never nil)
	Pos   *document.Pos // positions in lines of the whole stream
}

// A Piece is the text of one document of a stream, before parsing.
type Piece struct {
	Data []byte
	Line int // the line of the stream Data starts on
}

// Parse reads every non-empty document of a stream, in order. Source names
// the stream in errors. A stream that starts like JSON ({ or [) is read as
// a JSON stream; if it is not one, it is read as YAML (JSON documents
// separated by "---", or YAML in flow style), and when that fails too the
// JSON error is the one returned. Duplicate keys are errors; numbers stay
// exact (see package document).
func Parse(stream []byte, source string, lim Limits) ([]Document, error) {
	var docs []Document
	err := Each(stream, source, Options{Limits: lim, Positions: true}, func(d Document) error {
		docs = append(docs, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return docs, nil
}

// Options say how Each reads a stream.
type Options struct {
	Limits
	// Positions records the position of every node in Document.Pos;
	// without, each Document's Pos holds the document's own line only,
	// and parsing is cheaper.
	Positions bool
	// YAML11 reads YAML scalars and map keys as YAML 1.1, the way
	// sigs.k8s.io/yaml does (document.Loader.YAML11): as Argo CD's plugin
	// sidecar and repo-server read a plugin's output, an unquoted yes or
	// on is true, 012 is 10, and a map key yes is "true". JSON is JSON.
	YAML11 bool
	// LastKeyWins takes a key repeated in a map for its last value, as
	// Argo CD reads a plugin's output, instead of an error
	// (document.Loader.LastKeyWins).
	LastKeyWins bool
}

// Each reads the documents of a stream as Parse does, handing each to fn
// as soon as it is parsed, and keeps none: a stream of many documents
// costs the memory of its largest, not of all of them. An error of fn
// stops the reading and is returned as it is.
func Each(stream []byte, source string, opts Options, fn func(Document) error) error {
	lim, positions := opts.Limits.withDefaults(), opts.Positions
	if int64(len(stream)) > lim.MaxBytes {
		return &document.LoadError{Source: source, Err: document.ErrTooLarge,
			Msg: fmt.Sprintf("the stream is larger than the limit of %d bytes", lim.MaxBytes)}
	}
	text := bytes.TrimLeft(bytes.TrimPrefix(stream, []byte("\ufeff")), " \t\r\n")
	if len(text) > 0 && (text[0] == '{' || text[0] == '[') {
		pieces, jsonErr := SplitJSON(stream, source, lim)
		if jsonErr == nil {
			return eachPiece(pieces, source, lim, true, positions, Options{LastKeyWins: opts.LastKeyWins}, fn)
		}
		pieces, err := Split(stream, source, lim)
		if err == nil {
			// Checked before fn sees anything: a stream that is not YAML
			// either gives the JSON error.
			err = eachPiece(pieces, source, lim, false, positions, opts, func(Document) error { return nil })
		}
		if err != nil {
			if IsSyntax(err) {
				return jsonErr
			}
			return err
		}
		return eachPiece(pieces, source, lim, false, positions, opts, fn)
	}
	pieces, err := Split(stream, source, lim)
	if err != nil {
		return err
	}
	return eachPiece(pieces, source, lim, false, positions, opts, fn)
}

// IsSyntax reports whether err says that a stream is not YAML or JSON.
func IsSyntax(err error) bool {
	return errors.Is(err, document.ErrSyntax) || errors.Is(err, document.ErrInvalidUTF8)
}

// eachPiece parses each piece, sharing the node budget, and hands each
// non-empty document to fn.
func eachPiece(pieces []Piece, source string, lim Limits, jsonOnly, positions bool, opts Options, fn func(Document) error) error {
	nodes, index := 0, 0
	for _, p := range pieces {
		if nodes >= lim.MaxNodes {
			return tooManyNodes(source, p.Line, lim)
		}
		loader := document.Loader{Positions: positions, JSON: jsonOnly, YAML11: opts.YAML11, LastKeyWins: opts.LastKeyWins, FirstLine: p.Line,
			Limits: document.Limits{MaxBytes: lim.MaxBytes, MaxDepth: lim.MaxDepth, MaxNodes: lim.MaxNodes - nodes}}
		tree, pos, err := loader.ParseAny(p.Data, source)
		if err != nil {
			var le *document.LoadError
			if !errors.As(err, &le) {
				return err
			}
			if errors.Is(err, document.ErrTooLarge) {
				// Not the size (Each checked the stream): the node
				// budget, which this document's loader got what was left of.
				return tooManyNodes(source, max(le.Line, p.Line), lim)
			}
			if le.Line == 0 {
				placed := *le
				placed.Line = p.Line
				return &placed
			}
			return err
		}
		if tree == nil {
			continue
		}
		nodes += count(tree)
		index++
		if err := fn(Document{Index: index, Line: p.Line, Value: tree, Pos: pos}); err != nil {
			return err
		}
	}
	return nil
}

// count counts the nodes of a tree, as the loader does.
func count(v any) int {
	n := 1
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			n += count(e)
		}
	case []any:
		for _, e := range v {
			n += count(e)
		}
	}
	return n
}

func tooMany(source string, line int, lim Limits) error {
	return &document.LoadError{Source: source, Line: line, Err: document.ErrTooLarge,
		Msg: fmt.Sprintf("the stream holds more than %d documents", lim.MaxDocuments)}
}

func tooManyNodes(source string, line int, lim Limits) error {
	return &document.LoadError{Source: source, Line: line, Err: document.ErrTooLarge,
		Msg: fmt.Sprintf("the documents hold more than %d values (YAML aliases count each time they are used)", lim.MaxNodes)}
}

// SplitJSON splits a stream of JSON values (white space between them).
func SplitJSON(stream []byte, source string, lim Limits) ([]Piece, error) {
	lim = lim.withDefaults()
	dec := json.NewDecoder(bytes.NewReader(stream))
	var pieces []Piece
	line, counted := 1, 0
	for {
		off := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return pieces, nil
			}
			e := &document.LoadError{Source: source, Err: document.ErrSyntax, Msg: err.Error(), Line: line}
			var se *json.SyntaxError
			if errors.As(err, &se) {
				e.Line = 1 + bytes.Count(stream[:min(int(se.Offset), len(stream))], []byte("\n"))
			} else if errors.Is(err, io.ErrUnexpectedEOF) {
				e.Line = 1 + bytes.Count(stream, []byte("\n"))
			}
			return nil, e
		}
		// raw starts after the white space that follows off.
		start := off + bytes.Index(stream[off:], raw[:1])
		line += bytes.Count(stream[counted:start], []byte("\n"))
		counted = start
		pieces = append(pieces, Piece{Data: raw, Line: line})
		if len(pieces) > lim.MaxDocuments {
			return nil, tooMany(source, line, lim)
		}
	}
}

// Split cuts a YAML stream into its documents at the lines that start
// with a document marker ("---" or "..."). Markers cannot occur inside a
// document, not even in a block scalar, so the cut is exact. Pieces that
// hold nothing but comments and white space are left out; a directive
// (%YAML, %TAG) stays with the document after it.
func Split(stream []byte, source string, lim Limits) ([]Piece, error) {
	lim = lim.withDefaults()
	var pieces []Piece
	start, startLine := 0, 1
	content := false   // the piece holds more than comments and directives
	directive := false // the piece holds a directive (%YAML, %TAG)
	cut := func(end, nextLine int) error {
		if content {
			pieces = append(pieces, Piece{Data: stream[start:end], Line: startLine})
			if len(pieces) > lim.MaxDocuments {
				return tooMany(source, startLine, lim)
			}
		}
		start, startLine, content, directive = end, nextLine, false, false
		return nil
	}
	line := 1
	for off := 0; off < len(stream); line++ {
		next := len(stream)
		if i := bytes.IndexByte(stream[off:], '\n'); i >= 0 {
			next = off + i + 1
		}
		l := stream[off:next]
		switch {
		case isMarker(l, "---"):
			if content {
				if err := cut(off, line); err != nil {
					return nil, err
				}
			}
			switch {
			case hasContent(l[3:]):
				content = true
			case !directive:
				// A bare marker starting the piece is left out, so that
				// the loader sees JSON documents as JSON.
				start, startLine = next, line+1
			}
		case isMarker(l, "..."):
			if err := cut(next, line+1); err != nil {
				return nil, err
			}
		case len(l) > 0 && l[0] == '%' && !content:
			directive = true // it belongs to the document after it
		case hasContent(l):
			content = true
		}
		off = next
	}
	content = content || directive
	if err := cut(len(stream), line); err != nil {
		return nil, err
	}
	return pieces, nil
}

func isMarker(l []byte, m string) bool {
	return bytes.HasPrefix(l, []byte(m)) && (len(l) == 3 || strings.IndexByte(" \t\r\n", l[3]) >= 0)
}

// hasContent reports whether a line holds more than white space and a comment.
func hasContent(l []byte) bool {
	l = bytes.TrimLeft(l, " \t\r\n")
	return len(l) > 0 && l[0] != '#'
}

// ListItems reports whether obj is a list of objects the way Argo CD's
// repo-server reads one (unstructured IsList, and its isNullList): items is
// a list, whatever the kind; or items is null and obj has neither spec nor
// status, an empty list. Items are returned as they are: the caller checks
// that each is an object.
func ListItems(obj map[string]any) (items []any, isList bool) {
	field, ok := obj["items"]
	if !ok {
		return nil, false
	}
	switch field := field.(type) {
	case []any:
		return field, true
	case nil:
		_, spec := obj["spec"]
		_, status := obj["status"]
		return nil, !spec && !status
	}
	return nil, false
}
