package document

import (
	"bytes"
	"errors"
	"fmt"
)

// The YAML library builds a node tree of a whole document (some 200 bytes
// a node, and a node can be written in two bytes: "1,") before strata can
// count anything in it. countNodes reads the text first, line by line,
// keeping nothing but a stack of block indentations, and gives an upper
// bound of the nodes that tree will hold, aliases counted once, as written
// (the converter counts their expansions as it resolves them), and map
// keys not counted, as in the tree's count (the library's tree holds at
// most one key node a value). The loader
// refuses a document over its node budget before the library sees it, so
// what a document costs to parse is bounded by the budget, and so by the
// bytes of the input.
//
// The bound is close for the block style (each value and list item
// counts once, each block map and list once, a key with nothing after it
// on its line once more) and looser in flow collections, where every comma
// colon and closing bracket counts one more node, for the empty entries
// they could stand for. Text inside quoted and block scalars counts nothing.

// scanKind is the kind of a block collection on the indentation stack.
type scanKind uint8

const (
	scanSeq scanKind = iota
	scanMap
)

type scanColl struct {
	col  int
	kind scanKind
}

// nodeScanner counts the nodes of a YAML text; see countNodes.
type nodeScanner struct {
	n       int
	aliases int        // aliases seen (an upper bound too)
	stack   []scanColl // open block collections, innermost last
	flow    int        // depth of flow collections
	quote   byte       // the quote of a quoted scalar continued on the next line, or 0
	// A block scalar (| or >) whose content lines are being skipped:
	// those more indented than parent, at or past the indentation of its
	// first line (indent, -1 until that line is seen).
	inBlock        bool
	parent, indent int
}

// countNodes returns an upper bound of the nodes of the YAML text data, or,
// as soon as the count passes max, over = true and the 1-based line where
// it did.
func countNodes(data []byte, max int) (n, line int, over bool) {
	var s nodeScanner
	return s.count(data, max)
}

func (s *nodeScanner) count(data []byte, max int) (n, line int, over bool) {
	for line = 1; len(data) > 0; line++ {
		i, size := lineBreak(data)
		s.line(data[:i])
		data = data[i+size:]
		if s.n > max {
			return s.n, line, true
		}
	}
	return s.n, line - 1, false
}

// lineBreak returns the index and the size of the first line break of
// data (the end of data, size 0, when it has none). YAML's breaks are
// CR LF, LF and CR; the YAML library also breaks lines at NEL, LS and PS.
func lineBreak(data []byte) (i, size int) {
	for i = 0; i < len(data); i++ {
		switch data[i] {
		case '\n':
			return i, 1
		case '\r':
			if i+1 < len(data) && data[i+1] == '\n' {
				return i, 2
			}
			return i, 1
		case 0xC2:
			if i+1 < len(data) && data[i+1] == 0x85 {
				return i, 2
			}
		case 0xE2:
			if i+2 < len(data) && data[i+1] == 0x80 && (data[i+2] == 0xA8 || data[i+2] == 0xA9) {
				return i, 3
			}
		}
	}
	return i, 0
}

func isBlank(b byte) bool { return b == ' ' || b == '\t' }

// sepAt reports whether ln[i] ends a token: the end of the line or a blank.
func sepAt(ln []byte, i int) bool { return i >= len(ln) || isBlank(ln[i]) }

// restEmpty reports whether nothing but blanks and a comment follows ln[i:].
func restEmpty(ln []byte, i int) bool {
	for ; i < len(ln); i++ {
		switch {
		case isBlank(ln[i]):
		case ln[i] == '#':
			return true
		default:
			return false
		}
	}
	return true
}

func indentOf(ln []byte) int {
	i := 0
	for i < len(ln) && ln[i] == ' ' {
		i++
	}
	return i
}

func (s *nodeScanner) line(ln []byte) {
	// A document marker ends everything, even a scalar (where the YAML
	// library rejects it).
	if len(ln) >= 3 && (bytes.HasPrefix(ln, []byte("---")) || bytes.HasPrefix(ln, []byte("..."))) && sepAt(ln, 3) {
		s.stack, s.flow, s.quote, s.inBlock = s.stack[:0], 0, 0, false
		if ln[0] == '.' {
			return
		}
		s.n++ // the document may be empty
		s.tokens(ln, 3)
		return
	}
	if s.inBlock {
		if len(bytes.Trim(ln, " \t")) == 0 {
			return // blank lines belong to the scalar
		}
		ind := indentOf(ln)
		switch {
		case s.indent < 0 && ind > s.parent:
			s.indent = ind
			return
		case s.indent >= 0 && ind >= s.indent:
			return
		}
		s.inBlock = false
	}
	pos := 0
	if s.quote != 0 {
		end := closeQuote(ln, 0, s.quote)
		if end < 0 {
			return
		}
		s.quote = 0
		pos = end
	} else if s.flow == 0 && len(ln) > 0 && ln[0] == '%' {
		return // a directive
	}
	s.tokens(ln, pos)
}

// closeQuote returns the index just past the quote q closing a scalar
// that continues at ln[i:], or -1 when it does not close on this line.
func closeQuote(ln []byte, i int, q byte) int {
	for ; i < len(ln); i++ {
		switch {
		case q == '"' && ln[i] == '\\':
			i++
		case ln[i] == q:
			if q == '\'' && i+1 < len(ln) && ln[i+1] == '\'' {
				i++
				continue
			}
			return i + 1
		}
	}
	return -1
}

// collection notes a block map key or list item at column col, counting
// the collection when it starts one.
func (s *nodeScanner) collection(col int, kind scanKind) {
	for len(s.stack) > 0 && s.stack[len(s.stack)-1].col > col {
		s.stack = s.stack[:len(s.stack)-1]
	}
	if len(s.stack) > 0 {
		top := s.stack[len(s.stack)-1]
		if top.col == col {
			if top.kind == kind {
				return
			}
			if top.kind == scanSeq { // a list written under a key, ended by the next key
				s.stack = s.stack[:len(s.stack)-1]
				s.collection(col, kind)
				return
			}
		}
	}
	s.stack = append(s.stack, scanColl{col: col, kind: kind})
	s.n++
}

func (s *nodeScanner) parentCol() int {
	if len(s.stack) == 0 {
		return -1
	}
	return s.stack[len(s.stack)-1].col
}

// tokens counts the nodes written in ln[pos:].
func (s *nodeScanner) tokens(ln []byte, pos int) {
	for pos < len(ln) {
		c := ln[pos]
		if isBlank(c) {
			pos++
			continue
		}
		if c == '#' && (pos == 0 || isBlank(ln[pos-1])) {
			return
		}
		if s.flow > 0 {
			pos = s.flowToken(ln, pos)
			continue
		}
		switch {
		case c == '-' && sepAt(ln, pos+1):
			s.collection(pos, scanSeq)
			pos++
			if restEmpty(ln, pos) {
				s.n++ // an empty item, or one on the next lines
			}
		case c == '?' && sepAt(ln, pos+1):
			s.collection(pos, scanMap)
			s.n += 2 // the key and the value may be empty
			pos++
		case c == ':' && sepAt(ln, pos+1):
			s.n += 3 // a map with an empty key, and a value
			pos++
		case c == '|' || c == '>':
			s.n++
			s.inBlock, s.parent, s.indent = true, s.parentCol(), -1
			return
		case c == '&' || c == '!':
			pos = propertyEnd(ln, pos)
			s.n++ // the node may be empty
		case c == '[' || c == '{':
			s.n++
			s.flow++
			pos++
		case c == '"' || c == '\'':
			s.n++
			end := closeQuote(ln, pos+1, c)
			if end < 0 {
				s.quote = c
				return
			}
			pos = s.maybeKey(ln, pos, end)
		case c == '*':
			s.n++
			s.aliases++
			pos = s.maybeKey(ln, pos, propertyEnd(ln, pos))
		default:
			// A plain scalar: to ": ", " #" or the end of the line.
			s.n++
			end := pos
			for ; end < len(ln); end++ {
				if ln[end] == ':' && sepAt(ln, end+1) || ln[end] == '#' && isBlank(ln[end-1]) {
					break
				}
			}
			if end < len(ln) && ln[end] == '#' {
				return
			}
			pos = s.maybeKey(ln, pos, end)
		}
	}
}

// propertyEnd returns the end of the anchor, alias or tag at ln[pos]: an
// anchor's or alias's name ends at a blank, a colon or a flow indicator.
func propertyEnd(ln []byte, pos int) int {
	end := pos + 1
	for end < len(ln) && !isBlank(ln[end]) {
		if ln[pos] != '!' && bytes.IndexByte([]byte(":,[]{}"), ln[end]) >= 0 {
			break
		}
		end++
	}
	return end
}

// maybeKey handles what follows a scalar written at ln[start:end]: when
// it is a key (a colon follows), it notes the map and steps over the
// colon. It returns where to go on.
func (s *nodeScanner) maybeKey(ln []byte, start, end int) int {
	i := end
	for i < len(ln) && isBlank(ln[i]) {
		i++
	}
	if i < len(ln) && ln[i] == ':' && sepAt(ln, i+1) {
		s.n-- // keys are not counted, as in the tree's count
		s.collection(start, scanMap)
		i++
		if restEmpty(ln, i) {
			s.n++ // a null value, or one on the next lines
		}
		return i
	}
	return end
}

// flowToken counts the token at ln[pos] inside a flow collection and
// returns the index after it.
func (s *nodeScanner) flowToken(ln []byte, pos int) int {
	switch c := ln[pos]; c {
	case '[', '{':
		s.n++
		s.flow++
		return pos + 1
	case ']', '}', ',', ':', '?':
		// Each may end or stand for an entry with an empty key or value.
		s.n++
		if c == ']' || c == '}' {
			s.flow--
		}
		return pos + 1
	case '"', '\'':
		s.n++
		end := closeQuote(ln, pos+1, c)
		if end < 0 {
			s.quote = c
			return len(ln)
		}
		return end
	}
	c := ln[pos]
	if c != '*' && c != '&' && c != '!' {
		s.n++ // a plain scalar; an alias counts below
	}
	if c == '*' {
		s.n++
		s.aliases++
	}
	end := pos + 1
	for ; end < len(ln); end++ {
		switch ln[end] {
		case ',', '[', ']', '{', '}':
			return end
		case ':':
			if c != '*' && (sepAt(ln, end+1) || bytes.IndexByte([]byte(",[]{}"), ln[end+1]) >= 0) {
				return end
			}
		case '#':
			if isBlank(ln[end-1]) {
				return end
			}
		case ' ', '\t':
			if c == '&' || c == '!' || c == '*' {
				return end
			}
		}
	}
	return end
}

// CheckNodes counts the maps, lists and values written in the YAML (or
// JSON) text data, before anything parses it, for readers that hand the
// text to another YAML library (Helm's): more than max (0: the default
// of DefaultLimits; negative: no limit) is a *LoadError wrapping
// ErrTooLarge that names source and the line where the count passed max.
// The count is an upper bound (see Limits), aliases counted once.
//
// When the text uses aliases, CheckNodes also resolves them as a Loader
// would, to hold what they add to the budgets of DefaultLimits
// (MaxAliasNodes, MaxAliasBytes, and max nodes in all): the other library
// resolves them its own way, unbounded in bytes. Only those errors are
// returned; what this package's reading would refuse otherwise (a
// duplicate key) is the other library's to judge.
func CheckNodes(data []byte, source string, max int) error {
	if max == 0 {
		max = DefaultLimits().MaxNodes
	}
	if max < 0 {
		return nil
	}
	var s nodeScanner
	if _, line, over := s.count(data, max); over {
		return tooManyNodes(source, line, max)
	}
	if s.aliases > 0 {
		_, err := Loader{Limits: Limits{MaxNodes: max}}.ParseDocuments(data, source)
		if errors.Is(err, ErrTooLarge) {
			return err
		}
	}
	return nil
}

func tooManyNodes(source string, line, max int) *LoadError {
	return &LoadError{Source: source, Line: line, Err: ErrTooLarge,
		Msg: fmt.Sprintf("the document holds more than %d values (maps, lists and values as written, counted before parsing, up to this line); split it, or raise the limit", max)}
}

// CountNodes returns an upper bound of the nodes the YAML text data holds,
// aliases counted once, as the loader counts them before it parses: what a
// caller needs to estimate the memory parsing data will cost (the YAML
// library's tree and strata's, some hundreds of bytes a node) before
// parsing it. It reads the text once and keeps nothing.
func CountNodes(data []byte) int {
	n, _, _ := countNodes(data, int(^uint(0)>>1))
	return n
}
