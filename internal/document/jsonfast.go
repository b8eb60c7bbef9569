package document

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DecodeJSONFast reads a JSON text as a json.Decoder with UseNumber reads
// it into an interface{} (objects as map[string]any, arrays as []any,
// numbers as json.Number, the last of repeated keys kept), when the text
// is one JSON value and nothing but white space follows. It reads in one
// pass what encoding/json's encoders write (a plugin's manifests, say);
// anything else it is not sure of (an escaped surrogate, invalid UTF-8,
// nesting deeper than maxJSONDepth, any syntax error) gives false, and the
// caller reads the text with encoding/json, the reference.
// FuzzDecodeJSONFast holds it to encoding/json.
func DecodeJSONFast(s string) (any, bool) {
	p := jsonParser{s: s}
	p.space()
	v, ok := p.value(0)
	if !ok {
		return nil, false
	}
	p.space()
	return v, p.i == len(s)
}

// maxJSONDepth is below encoding/json's limit of nesting (10000).
const maxJSONDepth = 1000

type jsonParser struct {
	s string
	i int
}

func (p *jsonParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (any, bool) {
	if p.i >= len(p.s) || depth > maxJSONDepth {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		m := map[string]any{}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return m, true
		}
		for {
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				return nil, false
			}
			k, ok := p.string()
			if !ok {
				return nil, false
			}
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, false
			}
			p.i++
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
			p.space()
			if p.i >= len(p.s) {
				return nil, false
			}
			switch p.s[p.i] {
			case ',':
				p.i++
			case '}':
				p.i++
				return m, true
			default:
				return nil, false
			}
		}
	case c == '[':
		p.i++
		l := []any{}
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return l, true
		}
		for {
			p.space()
			v, ok := p.value(depth + 1)
			if !ok {
				return nil, false
			}
			l = append(l, v)
			p.space()
			if p.i >= len(p.s) {
				return nil, false
			}
			switch p.s[p.i] {
			case ',':
				p.i++
			case ']':
				p.i++
				return l, true
			default:
				return nil, false
			}
		}
	case c == '"':
		return p.string()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return nil, false
}

func (p *jsonParser) literal(word string) bool {
	if !strings.HasPrefix(p.s[p.i:], word) {
		return false
	}
	p.i += len(word)
	return true
}

// IsJSONNumber reports whether s is a number as JSON writes one:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func IsJSONNumber(s string) bool {
	if s == "" {
		return false
	}
	p := jsonParser{s: s}
	_, ok := p.number()
	return ok && p.i == len(s)
}

// number reads a number as JSON's grammar has it.
func (p *jsonParser) number() (any, bool) {
	s, start := p.s, p.i
	i := start
	if s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return nil, false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return nil, false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	p.i = i
	return json.Number(s[start:i]), true
}

// string reads a string whose opening quote is at p.i.
func (p *jsonParser) string() (string, bool) {
	s := p.s
	start := p.i + 1
	i := start
	for i < len(s) {
		c := s[i]
		if c == '"' {
			p.i = i + 1
			return s[start:i], true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		i++
	}
	var b strings.Builder
	b.WriteString(s[start:i])
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			p.i = i + 1
			return b.String(), true
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				return "", false
			}
			b.WriteString(s[i : i+size])
			i += size
			continue
		case c != '\\':
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			return "", false
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			if i+6 > len(s) {
				return "", false
			}
			v, err := strconv.ParseUint(s[i+2:i+6], 16, 16)
			if err != nil || v >= 0xD800 && v < 0xE000 {
				return "", false // a surrogate: left to encoding/json
			}
			b.WriteRune(rune(v))
			i += 6
			continue
		default:
			return "", false
		}
		i += 2
	}
	return "", false
}
