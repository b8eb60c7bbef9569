package yamljson

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v2"
)

// parseBlockYAML reads a YAML document written in the plain block style
// of nearly every values.yaml and of the manifests templates print: block
// mappings and sequences, keys and scalars on one line each (plain,
// single-quoted or double-quoted; a value may go on over lines as YAML
// folds them), literal block scalars ("|", "|-") as mapping values,
// comments, and the empty flow collections {} and []. It returns the tree
// yaml.v2 decodes from the same text into a MapSlice (see rootMapping): the
// same structure, the same scalars resolved by yaml.v2's rules. Anything else, and anything it is
// not sure to read exactly as yaml.v2 does (anchors, aliases, tags, block
// scalars other than the common literal ones of CRDs and ConfigMaps, flow
// collections with content, multi-line scalars, tabs, carriage returns,
// document markers, line breaks other than \n, errors), gives
// ErrNotFast, and the caller goes through yaml.v2. The differential
// tests and FuzzYAMLConv hold it to yaml.v2.
//
// A nil MapSlice with ok is a null document (nothing but comments).
func parseBlockYAML(text string) (root yaml.MapSlice, isMap bool, err error) {
	return readBlockYAML(text, false)
}

// scanBlockYAML reads text as parseBlockYAML does, taking the same
// decisions line for line, but keeps only what Helm's manifest sorter and
// the output checks read: the entries of the root mapping whose keys are
// apiVersion, kind or metadata, in any case (what treeHead looks at). It
// reads everything else without keeping it, and gives ErrNotFast, on top
// of parseBlockYAML's cases, for whatever jsonWriter might not write (a key
// that is not a string, a NaN or an infinity): a document it reads is one
// ToJSONFast converts, with the head treeHead reads from this root.
func scanBlockYAML(text string) (root yaml.MapSlice, isMap bool, err error) {
	return readBlockYAML(text, true)
}

func readBlockYAML(text string, scan bool) (root yaml.MapSlice, isMap bool, err error) {
	if !plainText(text) {
		return nil, false, ErrNotFast
	}
	p := &blockParser{text: text, scan: scan, root: true}
	p.next()
	if p.eof {
		return nil, false, nil
	}
	if p.indent != 0 || p.isEntry() {
		return nil, false, ErrNotFast
	}
	m, err := p.mapping(0)
	if err != nil {
		return nil, false, err
	}
	if !p.eof {
		return nil, false, ErrNotFast // a line the mapping did not take
	}
	return m, true, nil
}

// plainText reports whether text holds only what the block parser
// handles: \n line breaks, printable characters yaml.v2 reads, no tabs,
// no document markers or directives.
func plainText(text string) bool {
	for start := 0; start < len(text); {
		// At the start of a line.
		if c := text[start]; c == '%' || (c == '-' && strings.HasPrefix(text[start:], "---")) || (c == '.' && strings.HasPrefix(text[start:], "...")) {
			return false
		}
		line, next := text[start:], len(text)
		if end := strings.IndexByte(line, '\n'); end >= 0 {
			line, next = line[:end], start+end+1
		}
		for i := 0; i < len(line); {
			if i+8 <= len(line) && printableASCII8(line[i:i+8]) {
				i += 8
				continue
			}
			c := line[i]
			if c-0x20 < 0x7F-0x20 { // printable ASCII
				i++
				continue
			}
			if c < utf8.RuneSelf {
				return false // a control character other than \n, or DEL
			}
			r, size := utf8.DecodeRuneInString(line[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				return false
			case r < 0xA0, r == 0x2028, r == 0x2029, r == 0xFEFF, r >= 0xD800 && r < 0xE000, r > 0xFFFD && r < 0x10000:
				// C1 controls and NEL, YAML 1.1's other line breaks, BOMs.
				return false
			}
			i += size
		}
		start = next
	}
	return true
}

// printableASCII8 reports whether the eight bytes of s are all printable
// ASCII (0x20 to 0x7E), eight at a time: a byte below 0x20 sets its top bit
// in w-0x20… where w had it clear, a byte above 0x7E sets it in w+0x01…
// or has it in w (a carry out of a byte comes from one that has it).
func printableASCII8(s string) bool {
	w := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := (w - 0x20*ones) &^ w & highs
	above := ((w + ones) | w) & highs
	return below|above == 0
}

// A blockParser walks the text a line at a time. The current line is the
// next one holding more than spaces and a comment: its indentation and its
// content (after the indentation, up to the line break).
type blockParser struct {
	text    string
	pos     int // start of the line after the current one
	indent  int
	content string
	eof     bool
	// scan reads values without keeping them (scanBlockYAML); root is
	// true until the root mapping starts.
	scan, root bool
}

// next moves to the next line with content.
func (p *blockParser) next() {
	for p.pos < len(p.text) {
		end := strings.IndexByte(p.text[p.pos:], '\n')
		var line string
		if end < 0 {
			line, p.pos = p.text[p.pos:], len(p.text)
		} else {
			line, p.pos = p.text[p.pos:p.pos+end], p.pos+end+1
		}
		indent := 0
		for indent < len(line) && line[indent] == ' ' {
			indent++
		}
		rest := line[indent:]
		if rest == "" || rest[0] == '#' {
			continue
		}
		p.indent, p.content = indent, strings.TrimRight(rest, " ")
		return
	}
	p.eof, p.indent, p.content = true, -1, ""
}

// isEntry reports whether the current line is a sequence entry.
func (p *blockParser) isEntry() bool {
	return !p.eof && p.content[0] == '-' && (len(p.content) == 1 || p.content[1] == ' ')
}

// mapping reads the block mapping whose keys are at indent.
func (p *blockParser) mapping(indent int) (yaml.MapSlice, error) {
	var m yaml.MapSlice
	root := p.root
	p.root = false
	for !p.eof && p.indent == indent {
		if p.isEntry() {
			return nil, ErrNotFast // a sequence entry among keys
		}
		var (
			key  any
			rest string
			err  error
		)
		keep, scan := !p.scan, p.scan
		if scan {
			text, quoted, after, err := splitKeyText(p.content)
			if err != nil {
				return nil, err
			}
			if !quoted {
				if _, isString, err := resolvePlainValue(text); err != nil || !isString {
					return nil, ErrNotFast
				}
			}
			if rest = after; root && headKey(text) {
				// Read and kept as parseBlockYAML reads it.
				key, keep, p.scan = text, true, false
			}
		} else if key, rest, err = splitKey(p.content); err != nil {
			return nil, err
		}
		value, err := p.mappingValue(indent, rest)
		p.scan = scan
		if err != nil {
			return nil, err
		}
		if rest != "" && p.indent > indent {
			return nil, ErrNotFast // a multi-line scalar, or an error
		}
		if keep {
			m = append(m, yaml.MapItem{Key: key, Value: value})
		}
	}
	if p.indent > indent {
		return nil, ErrNotFast
	}
	return m, nil
}

// mappingValue reads the value of a key at indent, rest being what
// follows the key on its line.
func (p *blockParser) mappingValue(indent int, rest string) (value any, err error) {
	switch {
	case rest == "":
		p.next()
		return p.nested(indent)
	case rest == "|" || rest == "|-":
		return p.literal(indent, rest == "|-")
	case (rest[0] == '\'' || rest[0] == '"') && closeQuote(rest[0], rest[1:]) < 0:
		return p.quotedLines(indent, rest[0], rest[1:])
	}
	if value, err = p.scalar(rest); err != nil {
		return nil, err
	}
	if plainStart(rest) && !strings.Contains(rest, " #") {
		return p.plainLines(indent, rest, value)
	}
	p.next()
	return value, nil
}

// headKey reports whether a root key is one treeHead looks at.
func headKey(k string) bool {
	return strings.EqualFold(k, "apiVersion") || strings.EqualFold(k, "kind") || strings.EqualFold(k, "metadata")
}

// scalar is the function scalar; when scanning, it reads a string as nil
// (see scalarOf), and a NaN or an infinity (which jsonWriter leaves to
// encoding/json) gives ErrNotFast.
func (p *blockParser) scalar(s string) (any, error) {
	v, err := scalarOf(s, p.scan)
	if f, isFloat := v.(float64); isFloat && p.scan && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return nil, ErrNotFast
	}
	return v, err
}

// literal reads the literal block scalar ("|" or, with strip, "|-") that
// is the value of a key at indent, from the line after the current one,
// and moves to the line after it. It takes the common shape only: the
// first line holds content and sets the indentation, which is deeper than
// indent; blank lines hold no more spaces than that indentation; with "|"
// the last content line ends in a line break. Anything else (leading
// blank lines, lines of spaces only beyond the indentation, an empty
// scalar) gives ErrNotFast.
func (p *blockParser) literal(indent int, strip bool) (string, error) {
	text, pos := p.text, p.pos
	var b strings.Builder
	m, breaks, broken := -1, 0, false
	for pos < len(text) {
		end := strings.IndexByte(text[pos:], '\n')
		var line string
		next := len(text)
		if end < 0 {
			line = text[pos:]
		} else {
			line, next = text[pos:pos+end], pos+end+1
		}
		sp := 0
		for sp < len(line) && line[sp] == ' ' {
			sp++
		}
		if sp == len(line) {
			if m < 0 || sp > m || end < 0 {
				return "", ErrNotFast
			}
			breaks++
			pos = next
			continue
		}
		if m < 0 {
			if sp <= indent {
				return "", ErrNotFast // an empty scalar
			}
			m = sp
		} else if sp < m {
			break // the scalar ends; what follows is read as usual
		}
		if !p.scan {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			for ; breaks > 0; breaks-- {
				b.WriteByte('\n')
			}
			b.WriteString(line[m:])
		}
		breaks = 0
		broken = end >= 0
		pos = next
	}
	if m < 0 {
		return "", ErrNotFast
	}
	if !strip {
		if !broken {
			return "", ErrNotFast
		}
		if !p.scan {
			b.WriteByte('\n')
		}
	}
	p.pos = pos
	p.next()
	return b.String(), nil
}

// plainLines reads the lines that continue a plain scalar, the value of
// a key at indent whose first line is first (resolved as v), from the line
// after the current one, and moves to the line after them. Continuation
// lines are indented deeper than indent; they are folded as YAML folds
// them (a line break becomes a space, each blank line a line break); a
// comment line ends the scalar. Only lines that plainly continue it are
// taken here: a line that could end it otherwise (a ": ", a " #", a final
// ':') gives ErrNotFast.
func (p *blockParser) plainLines(indent int, first string, v any) (any, error) {
	text, pos := p.text, p.pos
	var b strings.Builder
	breaks, folded := 0, false
	for pos < len(text) {
		end := strings.IndexByte(text[pos:], '\n')
		var line string
		next := len(text)
		if end < 0 {
			line = text[pos:]
		} else {
			line, next = text[pos:pos+end], pos+end+1
		}
		sp := 0
		for sp < len(line) && line[sp] == ' ' {
			sp++
		}
		if sp == len(line) {
			breaks++
			pos = next
			continue
		}
		if sp <= indent {
			break
		}
		c := strings.TrimRight(line[sp:], " ")
		if c[0] == '#' {
			// A comment line ends the scalar (a line after it that is
			// indented deeper than indent is an error, or something
			// else: the caller gives ErrNotFast for it).
			break
		}
		if c[len(c)-1] == ':' || strings.Contains(c, ": ") || strings.Contains(c, " #") {
			return nil, ErrNotFast
		}
		if p.scan {
			// Folded, the scalar holds a space or a line break: a
			// string, whatever its text.
			folded, breaks = true, 0
			pos = next
			continue
		}
		if !folded {
			b.WriteString(strings.TrimRight(first, " "))
			folded = true
		}
		if breaks == 0 {
			b.WriteByte(' ')
		}
		for ; breaks > 0; breaks-- {
			b.WriteByte('\n')
		}
		b.WriteString(c)
		pos = next
	}
	p.pos = pos
	p.next()
	switch {
	case !folded:
		return v, nil
	case p.scan:
		return "", nil
	}
	return resolvePlain(b.String())
}

// closeQuote returns the index in s, the text after the opening quote q
// of a quoted scalar, of the quote that closes it, or -1: in single quotes
// "”" is a quote inside it, in double quotes a backslash escapes what
// follows.
func closeQuote(q byte, s string) int {
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == q && q == '\'' && i+1 < len(s) && s[i+1] == '\'':
			i++
		case s[i] == q:
			return i
		case s[i] == '\\' && q == '"':
			i++
		}
	}
	return -1
}

// unquote reads a piece of a quoted scalar that lies on one line: s holds
// no closing quote.
func unquote(q byte, s string) (string, error) {
	if q == '\'' {
		return strings.ReplaceAll(s, "''", "'"), nil
	}
	v, after, err := quotedScalar("\"" + s + "\"")
	if err != nil || after != "" {
		return "", ErrNotFast
	}
	return v, nil
}

// quotedLines reads a quoted scalar (q is its quote) that goes on past its
// first line (first, after the opening quote), the value of a key at
// indent, and moves to the line after it. Its lines are folded as YAML
// folds them (a line break becomes a space, each blank line a line break,
// the spaces around a break dropped). The lines after the first must be
// indented deeper than indent; the closing quote may be followed by a
// comment only; a line may not end in a backslash (an escaped line break,
// or an escape that the spaces after it belong to).
func (p *blockParser) quotedLines(indent int, q byte, first string) (string, error) {
	text, pos := p.text, p.pos
	var b strings.Builder
	piece := func(s string) error {
		if q == '"' && strings.HasSuffix(s, "\\") {
			return ErrNotFast
		}
		v, err := unquote(q, s)
		b.WriteString(v)
		return err
	}
	if err := piece(strings.TrimRight(first, " ")); err != nil {
		return "", err
	}
	breaks := 0
	for pos < len(text) {
		end := strings.IndexByte(text[pos:], '\n')
		var line string
		next := len(text)
		if end < 0 {
			line = text[pos:]
		} else {
			line, next = text[pos:pos+end], pos+end+1
		}
		sp := 0
		for sp < len(line) && line[sp] == ' ' {
			sp++
		}
		if sp == len(line) {
			breaks++
			pos = next
			continue
		}
		if sp <= indent {
			return "", ErrNotFast
		}
		c := line[sp:]
		if breaks == 0 {
			b.WriteByte(' ')
		}
		for ; breaks > 0; breaks-- {
			b.WriteByte('\n')
		}
		pos = next
		if k := closeQuote(q, c); k >= 0 {
			if !onlyComment(c[k+1:]) {
				return "", ErrNotFast
			}
			v, err := unquote(q, c[:k])
			if err != nil {
				return "", err
			}
			b.WriteString(v)
			p.pos = pos
			p.next()
			return b.String(), nil
		}
		if err := piece(strings.TrimRight(c, " ")); err != nil {
			return "", err
		}
	}
	return "", ErrNotFast // no closing quote
}

// nested reads what follows a key or an entry with nothing after it: a
// block indented more than indent, a sequence at indent (a mapping's value
// may be written so), or null.
func (p *blockParser) nested(indent int) (any, error) {
	switch {
	case p.eof || p.indent < indent:
		return nil, nil
	case p.indent > indent && p.isEntry():
		return p.sequence(p.indent)
	case p.indent > indent && (p.content[0] == '{' || p.content[0] == '['):
		// {} or [] on a line of its own (anything else is left alone).
		v, err := p.scalar(p.content)
		if err != nil {
			return nil, err
		}
		p.next()
		return v, nil
	case p.indent > indent:
		return p.mapping(p.indent)
	case p.isEntry():
		return p.sequence(indent)
	}
	return nil, nil
}

// sequence reads the block sequence whose entries are at indent.
func (p *blockParser) sequence(indent int) ([]any, error) {
	l := []any{}
	for !p.eof && p.indent == indent && p.isEntry() {
		rest := strings.TrimLeft(p.content[1:], " ")
		if rest == "" || rest[0] == '#' {
			p.next()
			var v any
			var err error
			switch {
			case p.eof || p.indent <= indent:
				// null
			case p.isEntry():
				v, err = p.sequence(p.indent)
			default:
				v, err = p.mapping(p.indent)
			}
			if err != nil {
				return nil, err
			}
			if !p.scan {
				l = append(l, v)
			}
			continue
		}
		if rest[0] == '-' && (len(rest) == 1 || rest[1] == ' ') {
			return nil, ErrNotFast // "- - x"
		}
		if _, _, err := splitKey(rest); err == nil {
			// "- key: value": a mapping whose keys are at the column of
			// its first key.
			p.indent, p.content = indent+len(p.content)-len(rest), rest
			v, err := p.mapping(p.indent)
			if err != nil {
				return nil, err
			}
			if !p.scan {
				l = append(l, v)
			}
			continue
		}
		v, err := p.scalar(rest)
		if err != nil {
			return nil, err
		}
		if !p.scan {
			l = append(l, v)
		}
		p.next()
		if p.indent > indent {
			return nil, ErrNotFast
		}
	}
	return l, nil
}

// splitKey splits "key: rest" (or "key:") into the key, resolved as
// yaml.v2 resolves it, and the rest (empty when only a comment follows).
func splitKey(s string) (key any, rest string, err error) {
	text, quoted, rest, err := splitKeyText(s)
	switch {
	case err != nil:
		return nil, "", err
	case quoted:
		return text, rest, nil
	}
	if key, err = resolvePlain(text); err != nil {
		return nil, "", err
	}
	return key, rest, nil
}

// splitKeyText is splitKey with the key unresolved: the text of a plain
// key, or, quoted, the string a quoted key is.
func splitKeyText(s string) (key string, quoted bool, rest string, err error) {
	var after string
	switch s[0] {
	case '"', '\'':
		if key, after, err = quotedScalar(s); err != nil {
			return "", false, "", err
		}
		quoted = true
	default:
		if !plainStart(s) {
			return "", false, "", ErrNotFast
		}
		i := 0
		for ; i < len(s); i++ {
			if s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ') {
				break
			}
			if s[i] == '#' && s[i-1] == ' ' {
				return "", false, "", ErrNotFast // a comment before any ':'
			}
		}
		if i == len(s) {
			return "", false, "", ErrNotFast // no key
		}
		key = strings.TrimRight(s[:i], " ")
		after = s[i:]
	}
	if after == "" || after[0] != ':' || (len(after) > 1 && after[1] != ' ') {
		return "", false, "", ErrNotFast
	}
	if len(s)-len(after) > 1000 {
		return "", false, "", ErrNotFast // longer than yaml.v2 lets a simple key be
	}
	rest = strings.TrimLeft(after[1:], " ")
	if rest != "" && rest[0] == '#' {
		rest = ""
	}
	return key, quoted, rest, nil
}

// scalarOf reads a value written on one line: a quoted or plain scalar,
// or {} or [], with perhaps a comment after it; with scan, a scalar that
// is a string is read as nil (a string in an interface costs an
// allocation).
func scalarOf(s string, scan bool) (any, error) {
	switch s[0] {
	case '"', '\'':
		v, after, err := quotedScalar(s)
		if err != nil {
			return nil, err
		}
		if !onlyComment(after) {
			return nil, ErrNotFast
		}
		return v, nil
	case '{', '[':
		if s[0] == '[' && !strings.HasPrefix(s, "[]") {
			return flowSequence(s, scan)
		}
		if len(s) < 2 || !onlyComment(s[2:]) {
			return nil, ErrNotFast
		}
		switch s[:2] {
		case "{}":
			return yaml.MapSlice(nil), nil
		case "[]":
			return []any{}, nil
		}
		return nil, ErrNotFast
	}
	if !plainStart(s) {
		return nil, ErrNotFast
	}
	end := len(s)
	for i := 1; i < len(s); i++ {
		if s[i] == '#' && s[i-1] == ' ' {
			end = i
			break
		}
		if s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ') {
			return nil, ErrNotFast // "a: b: c"
		}
	}
	if s[0] == ':' {
		return nil, ErrNotFast
	}
	text := strings.TrimRight(s[:end], " ")
	v, isString, err := resolvePlainValue(text)
	if isString && !scan {
		return text, err
	}
	return v, err
}

// flowSequence reads a flow sequence of scalars that ends on its line,
// perhaps followed by a comment: "[a, 'b', \"c\"]". Its entries are
// quoted scalars, or plain ones holding none of the flow indicators, no
// ':', '#', quote or tab, resolved as yaml.v2 resolves them. Anything else
// (a nested collection, a mapping entry, an empty entry or a trailing
// comma, a sequence going on past the line) gives ErrNotFast. With
// scan, the entries are checked (a NaN or an infinity gives ErrNotFast)
// and not kept.
func flowSequence(s string, scan bool) (any, error) {
	var l []any
	if !scan {
		l = []any{}
	}
	i := 1 // after '[' or ','
	for {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i == len(s) {
			return nil, ErrNotFast
		}
		var v any
		switch c := s[i]; {
		case c == '\'' || c == '"':
			text, after, err := quotedScalar(s[i:])
			if err != nil {
				return nil, err
			}
			v, i = text, len(s)-len(after)
		case plainStart(s[i:]) && !(s[i] == '-' && strings.IndexByte(",[]{}", s[i+1]) >= 0):
			end := i
			for end < len(s) && s[end] != ',' && s[end] != ']' {
				if strings.IndexByte("[]{}:#'\"\t", s[end]) >= 0 {
					return nil, ErrNotFast
				}
				end++
			}
			text := strings.TrimRight(s[i:end], " ")
			r, isString, err := resolvePlainValue(text)
			switch {
			case err != nil:
				return nil, err
			case isString:
				v = text
			default:
				v = r
			}
			i = end
		default:
			return nil, ErrNotFast
		}
		if f, isFloat := v.(float64); isFloat && scan && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return nil, ErrNotFast
		}
		if !scan {
			l = append(l, v)
		}
		for i < len(s) && s[i] == ' ' {
			i++
		}
		switch {
		case i == len(s):
			return nil, ErrNotFast
		case s[i] == ']':
			if !onlyComment(s[i+1:]) {
				return nil, ErrNotFast
			}
			return l, nil
		case s[i] != ',':
			return nil, ErrNotFast
		}
		i++
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i < len(s) && s[i] == ']' {
			return nil, ErrNotFast // a trailing comma
		}
	}
}

// onlyComment reports whether what follows a scalar on its line is
// nothing, or spaces and a comment.
func onlyComment(after string) bool {
	if after == "" {
		return true
	}
	rest := strings.TrimLeft(after, " ")
	return len(rest) < len(after) && (rest == "" || rest[0] == '#')
}

// plainStart reports whether a plain scalar may start s: not with an
// indicator, but "-x" is a plain scalar.
func plainStart(s string) bool {
	switch c := s[0]; c {
	case '-':
		return len(s) > 1 && s[1] != ' '
	case '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	}
	return true
}

// quotedScalar reads a single- or double-quoted scalar that ends on the same
// line, and returns it and what follows its closing quote.
func quotedScalar(s string) (string, string, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case q == '\'' && c == '\'':
			if i+1 < len(s) && s[i+1] == '\'' {
				b.WriteByte('\'')
				i++
				continue
			}
			return b.String(), s[i+1:], nil
		case q == '"' && c == '"':
			return b.String(), s[i+1:], nil
		case q == '"' && c == '\\':
			if i+1 == len(s) {
				return "", "", ErrNotFast // an escaped line break
			}
			i++
			switch e := s[i]; e {
			case '\\', '"', '\'':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'e':
				b.WriteByte(0x1B)
			case 'f':
				b.WriteByte('\f')
			case 'v':
				b.WriteByte('\v')
			case ' ':
				b.WriteByte(' ')
			case 'x', 'u', 'U':
				n := 2
				if e == 'u' {
					n = 4
				} else if e == 'U' {
					n = 8
				}
				if i+n >= len(s) {
					return "", "", ErrNotFast
				}
				v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
				if err != nil || (v >= 0xD800 && v <= 0xDFFF) || v > 0x10FFFF {
					return "", "", ErrNotFast
				}
				b.WriteRune(rune(v))
				i += n
			default:
				return "", "", ErrNotFast
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", ErrNotFast // the scalar goes on past the line
}

// resolvePlain resolves a plain scalar as yaml.v2's resolve does for an
// untagged scalar decoded into interface{} (timestamps stay strings).
func resolvePlain(in string) (any, error) {
	v, isString, err := resolvePlainValue(in)
	if isString {
		return in, err
	}
	return v, err
}

// resolvePlainValue is resolvePlain, but for a scalar that is a string it
// returns nil and isString (a string in an interface costs an allocation).
func resolvePlainValue(in string) (v any, isString bool, err error) {
	if in == "" {
		return nil, false, nil
	}
	switch c := in[0]; {
	case c == '+' || c == '-' || c >= '0' && c <= '9':
		if v, ok := plainSpecial[in]; ok {
			return v, false, nil
		}
		plain := strings.ReplaceAll(in, "_", "")
		if v, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return int(v), false, nil
		}
		if v, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return v, false, nil
		}
		if yamlStyleFloat.MatchString(plain) {
			if v, err := strconv.ParseFloat(plain, 64); err == nil {
				return v, false, nil
			}
		}
		if strings.HasPrefix(plain, "0b") {
			if v, err := strconv.ParseInt(plain[2:], 2, 64); err == nil {
				return int(v), false, nil
			}
			if v, err := strconv.ParseUint(plain[2:], 2, 64); err == nil {
				return v, false, nil
			}
		} else if strings.HasPrefix(plain, "-0b") {
			if v, err := strconv.ParseInt("-"+plain[3:], 2, 64); err == nil {
				return int(v), false, nil
			}
		}
	case c == '.':
		if v, ok := plainSpecial[in]; ok {
			return v, false, nil
		}
		if v, err := strconv.ParseFloat(in, 64); err == nil {
			return v, false, nil
		}
	case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		if v, ok := plainSpecial[in]; ok {
			return v, false, nil
		}
	case c == '<':
		if in == "<<" {
			return nil, false, ErrNotFast // a merge key
		}
	}
	return nil, true, nil
}

var yamlStyleFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// plainSpecial are the plain scalars yaml.v2 resolves by name.
var plainSpecial = func() map[string]any {
	m := map[string]any{}
	for v, names := range map[any][]string{
		true:  {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"},
		false: {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"},
	} {
		for _, n := range names {
			m[n] = v
		}
	}
	for _, n := range []string{"~", "null", "Null", "NULL"} {
		m[n] = nil
	}
	for _, n := range []string{".nan", ".NaN", ".NAN"} {
		m[n] = math.NaN()
	}
	for _, n := range []string{".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"} {
		m[n] = math.Inf(1)
	}
	for _, n := range []string{"-.inf", "-.Inf", "-.INF"} {
		m[n] = math.Inf(-1)
	}
	return m
}()
