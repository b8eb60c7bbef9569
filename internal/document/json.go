package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// JSON input goes through encoding/json, not the YAML parser: YAML rejects
// valid JSON such as surrogate pairs ("\ud83d\ude00", which Python writes)
// and "\/". The decoder here adds what encoding/json lacks: duplicate keys
// are errors, and every node gets its line.

// looksJSON reports whether text (trimmed) starts like a JSON container.
func looksJSON(text []byte) bool {
	return len(text) > 0 && (text[0] == '{' || text[0] == '[')
}

// parseJSON decodes one JSON document into a tree with positions.
func (c *converter) parseJSON(data []byte) (any, *Pos, error) {
	// Unmarshal checks the whole document first; its errors have offsets.
	if err := json.Unmarshal(data, new(json.RawMessage)); err != nil {
		return nil, nil, c.jsonSyntaxError(data, err)
	}
	r := &jsonReader{c: c, data: data, line: 1 + c.lineOff}
	r.dec = json.NewDecoder(bytes.NewReader(data))
	r.dec.UseNumber()
	tok, err := r.token()
	if err != nil {
		return nil, nil, err
	}
	return r.value(tok, 0)
}

func (c *converter) jsonSyntaxError(data []byte, err error) error {
	le := &LoadError{Source: c.source, Err: ErrSyntax, Msg: err.Error()}
	if c.jsonOnly {
		le.Msg += "; the input must be JSON"
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off := min(int(se.Offset), len(data))
		le.Line = 1 + c.lineOff + bytes.Count(data[:off], []byte("\n"))
	}
	return le
}

type jsonReader struct {
	c    *converter
	data []byte
	dec  *json.Decoder
	off  int // bytes counted into line
	line int // line at off
}

func (r *jsonReader) fail(sentinel error, format string, args ...any) error {
	return &LoadError{Source: r.c.source, Line: r.line, Err: sentinel, Msg: fmt.Sprintf(format, args...)}
}

// token reads a token and moves line to where it ends (JSON tokens do not
// span lines).
func (r *jsonReader) token() (json.Token, error) {
	tok, err := r.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, r.fail(ErrSyntax, "%v", err)
	}
	end := min(int(r.dec.InputOffset()), len(r.data))
	if end > r.off {
		r.line += bytes.Count(r.data[r.off:end], []byte("\n"))
		r.off = end
	}
	return tok, nil
}

func (r *jsonReader) value(tok json.Token, depth int) (any, *Pos, error) {
	r.c.nodes++
	if r.c.nodes > r.c.lim.MaxNodes {
		return nil, nil, r.fail(ErrTooLarge, "document has more than %d nodes", r.c.lim.MaxNodes)
	}
	var pos *Pos
	if r.c.positions {
		pos = &Pos{Line: r.line}
	}
	switch t := tok.(type) {
	case json.Number:
		return Number(string(t)), pos, nil
	case json.Delim:
	default:
		return t, pos, nil // string, bool or nil
	}
	if depth >= r.c.lim.MaxDepth {
		return nil, nil, r.fail(ErrTooDeep, "maps and lists are nested more than %d levels deep", r.c.lim.MaxDepth)
	}
	if tok == json.Delim('[') {
		list := []any{}
		for {
			tok, err := r.token()
			if err != nil {
				return nil, nil, err
			}
			if tok == json.Delim(']') {
				return list, pos, nil
			}
			v, p, err := r.value(tok, depth+1)
			if err != nil {
				return nil, nil, err
			}
			list = append(list, v)
			if pos != nil {
				pos.Items = append(pos.Items, p)
			}
		}
	}
	m := map[string]any{}
	lines := map[string]int{}
	if pos != nil {
		pos.Keys = map[string]*Pos{}
	}
	for {
		tok, err := r.token()
		if err != nil {
			return nil, nil, err
		}
		if tok == json.Delim('}') {
			return m, pos, nil
		}
		key, _ := tok.(string) // Unmarshal accepted the document: keys are strings
		keyLine := r.line
		if first, dup := lines[key]; dup && !r.c.lastKeyWins {
			return nil, nil, r.fail(ErrDuplicateKey, "duplicate key %q (first defined at line %d); remove one of them", key, first)
		}
		lines[key] = keyLine
		if tok, err = r.token(); err != nil {
			return nil, nil, err
		}
		v, p, err := r.value(tok, depth+1)
		if err != nil {
			return nil, nil, err
		}
		m[key] = v
		if pos != nil {
			p.Line = keyLine
			pos.Keys[key] = p
		}
	}
}

// FromJSON converts a value decoded by encoding/json with UseNumber into the
// tree's types: integers as int64 (json.Number beyond its range), other
// numbers as float64.
func FromJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = FromJSON(e)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = FromJSON(e)
		}
		return v
	case json.Number:
		return Number(string(v))
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v)
		}
	}
	return v
}

// Number converts JSON number text to the tree's type for it.
func Number(s string) any {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	if isDecimal(s) {
		return json.Number(s)
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return json.Number(s)
}
