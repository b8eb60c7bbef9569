package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ErrNotFast is returned by YAMLWriter.Append for a document it leaves to
// Encode, the reference.
var ErrNotFast = errors.New("left to Encode")

// A YAMLWriter appends a map (a manifest, a tree as Loader or encoding/json
// reads JSON) as Encode writes it in YAML, byte for byte, without building
// a node tree and running yaml.v3's emitter over the whole document:
// mappings with sorted keys and sequences in block style, indented by 2, and
// the scalars written as Encode writes them. A string that is plainly safe
// (see plainSafe) is written as it is; any other goes through Encode alone,
// and its text is indented into place; the writer remembers that text, as
// the same descriptions recur in every CRD. Anything else it is not sure of
// (a key that is not plainly safe, a sequence in a sequence, numbers other
// than decimals) gives ErrNotFast, and the caller encodes the document with
// Encode. TestYAMLWriter and FuzzYAMLWriter hold it to Encode.
//
// The zero YAMLWriter is ready to use; it is not safe for concurrent use.
type YAMLWriter struct{ scalars map[string]string }

// Append appends v to b, or returns ErrNotFast (or an error of Encode).
func (w *YAMLWriter) Append(b []byte, v any) ([]byte, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return b, ErrNotFast
	}
	return w.appendMapping(b, m, 0, false)
}

// appendMapping writes a non-empty mapping whose keys are at column col;
// inline: the first key goes on the current line (after "- ").
func (w *YAMLWriter) appendMapping(b []byte, m map[string]any, col int, inline bool) ([]byte, error) {
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if !plainSafe(k) {
			return b, ErrNotFast
		}
		if i > 0 || !inline {
			b = appendSpaces(b, col)
		}
		b = append(b, k...)
		b = append(b, ':')
		var err error
		switch v := m[k].(type) {
		case map[string]any:
			if len(v) == 0 {
				b = append(b, " {}\n"...)
				continue
			}
			b = append(b, '\n')
			b, err = w.appendMapping(b, v, col+2, false)
		case []any:
			if len(v) == 0 {
				b = append(b, " []\n"...)
				continue
			}
			b = append(b, '\n')
			b, err = w.appendSequence(b, v, col+2)
		default:
			b = append(b, ' ')
			b, err = w.appendScalar(b, v, col)
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendSequence writes a non-empty sequence whose dashes are at col.
func (w *YAMLWriter) appendSequence(b []byte, l []any, col int) ([]byte, error) {
	for _, e := range l {
		b = appendSpaces(b, col)
		b = append(b, "- "...)
		var err error
		switch v := e.(type) {
		case map[string]any:
			if len(v) == 0 {
				b = append(b, "{}\n"...)
				continue
			}
			b, err = w.appendMapping(b, v, col+2, true)
		case []any:
			return b, ErrNotFast
		default:
			b, err = w.appendScalar(b, v, col)
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendScalar writes a scalar and its line break; a block scalar's lines
// are indented for a value whose key (or dash) is at col.
func (w *YAMLWriter) appendScalar(b []byte, v any, col int) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		b = append(b, "null"...)
	case bool:
		b = strconv.AppendBool(b, v)
	case int64:
		b = strconv.AppendInt(b, v, 10)
	case int:
		b = strconv.AppendInt(b, int64(v), 10)
	case json.Number:
		if !isDecimal(string(v)) {
			return b, ErrNotFast
		}
		b = append(b, v...)
	case string:
		if plainSafe(v) {
			b = append(b, v...)
			break
		}
		text, ok := w.scalars[v]
		if !ok {
			text, ok = literalText(v)
		}
		if !ok {
			// Encode writes {"k": v} as "k: " + the scalar, its
			// further lines indented for a key at column 0.
			var buf bytes.Buffer
			if err := Encode(&buf, map[string]any{"k": v}, YAML); err != nil {
				return b, err
			}
			text, ok = strings.CutPrefix(buf.String(), "k: ")
			if !ok || !strings.HasSuffix(text, "\n") {
				return b, ErrNotFast
			}
			text = text[:len(text)-1]
			if w.scalars == nil {
				w.scalars = map[string]string{}
			}
			w.scalars[v] = text
		}
		if !strings.Contains(text, "\n") {
			b = append(b, text...)
			break
		}
		for i, line := range strings.Split(text, "\n") {
			if i > 0 {
				b = append(b, '\n')
				if line != "" {
					b = appendSpaces(b, col)
				}
			}
			b = append(b, line...)
		}
	default:
		return b, ErrNotFast
	}
	return append(b, '\n'), nil
}

// literalText returns the text Encode writes for the common
// string of several lines (a CRD's description, a script) after "k: ": a
// literal block scalar ("|-", or "|" for one final line break), its lines
// indented by 2, empty ones left empty. It takes only strings of printable
// ASCII and line breaks that yaml.v3 writes so: not starting with a space
// or a line break (which would need an indentation indicator), no space
// before a line break or at the end, not ending in two line breaks.
func literalText(s string) (string, bool) {
	if !strings.Contains(s, "\n") || s[0] == ' ' || s[0] == '\n' || s[len(s)-1] == ' ' ||
		strings.HasSuffix(s, "\n\n") || strings.Contains(s, " \n") {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 || c > 0x7E) && c != '\n' {
			return "", false
		}
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/16 + 8)
	body := s
	if strings.HasSuffix(s, "\n") {
		b.WriteString("|")
		body = s[:len(s)-1]
	} else {
		b.WriteString("|-")
	}
	for line := range strings.SplitSeq(body, "\n") {
		b.WriteByte('\n')
		if line != "" {
			b.WriteString("  ")
			b.WriteString(line)
		}
	}
	return b.String(), true
}

// plainSafe reports whether Encode writes s as it is, a plain
// scalar, in a mapping key or value or a sequence entry: s starts with a
// letter, '_' or '/', holds only letters, digits, spaces and ._/=+,;()@-
// and ':' not followed by a space, ends in neither a space nor ':', and is
// not a word YAML reads as null or a boolean (1.1's included). That leaves
// out numbers, timestamps and every indicator.
func plainSafe(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	c := s[0]
	if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '/') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == ' ', c == '.', c == '_', c == '/', c == '=', c == '+', c == ',', c == ';', c == '(', c == ')', c == '@', c == '-':
		case c == ':':
			if i+1 == len(s) || s[i+1] == ' ' {
				return false
			}
		default:
			return false
		}
	}
	if s[len(s)-1] == ' ' {
		return false
	}
	if len(s) <= 5 {
		switch strings.ToLower(s) {
		case "null", "true", "false", "y", "n", "yes", "no", "on", "off":
			return false
		}
	}
	return true
}

func appendSpaces(b []byte, n int) []byte {
	for range n {
		b = append(b, ' ')
	}
	return b
}
