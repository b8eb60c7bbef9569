package document

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxIndex bounds a list index in a path, as Helm does for --set.
const MaxIndex = 65536

// A Step is one step of a Path: a map key, or a list index when IsIndex.
type Step struct {
	Key     string
	Index   int
	IsIndex bool
}

// Key returns a step selecting a map key.
func Key(k string) Step { return Step{Key: k} }

// Index returns a step selecting a list element.
func Index(i int) Step { return Step{Index: i, IsIndex: true} }

// A Path addresses a node of a tree. The empty Path is the root.
type Path []Step

// Append returns a new path with the steps added; p is not modified.
func (p Path) Append(s ...Step) Path {
	q := make(Path, len(p), len(p)+len(s))
	copy(q, p)
	return append(q, s...)
}

// String writes the path in --set notation: `a.b[0].c\.d`.
func (p Path) String() string {
	var b strings.Builder
	for i, s := range p {
		if s.IsIndex {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.Index))
			b.WriteByte(']')
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		writeKey(&b, s.Key)
	}
	return b.String()
}

// keySpecial reports whether c must be escaped inside a key.
func keySpecial(c byte) bool {
	switch c {
	case '\\', '.', '[', '=', ',':
		return true
	}
	return false
}

func writeKey(b *strings.Builder, k string) {
	for i := 0; i < len(k); i++ {
		if keySpecial(k[i]) {
			b.WriteByte('\\')
		}
		b.WriteByte(k[i])
	}
}

// EscapeKey escapes one key for use in a path.
func EscapeKey(k string) string {
	var b strings.Builder
	writeKey(&b, k)
	return b.String()
}

// ErrBadPath is wrapped by every path syntax error.
var ErrBadPath = errors.New("invalid path")

// ParsePath parses --set notation. Every string names at least one key, so
// "" is the path of the empty key, not the root; the root has no notation.
func ParsePath(s string) (Path, error) {
	var p Path
	i := 0
	readKey := func() error {
		var key strings.Builder
		for i < len(s) {
			c := s[i]
			switch c {
			case '\\':
				if i+1 >= len(s) {
					return fmt.Errorf("%w %q: trailing backslash", ErrBadPath, s)
				}
				key.WriteByte(s[i+1])
				i += 2
				continue
			case '.', '[':
				p = append(p, Key(key.String()))
				return nil
			case '=', ',':
				return fmt.Errorf("%w %q: %q inside a key must be escaped as \\%c", ErrBadPath, s, c, c)
			}
			key.WriteByte(c)
			i++
		}
		p = append(p, Key(key.String()))
		return nil
	}
	if err := readKey(); err != nil {
		return nil, err
	}
	for i < len(s) {
		if s[i] == '.' {
			i++
			if err := readKey(); err != nil {
				return nil, err
			}
			continue
		}
		// s[i] == '['
		end := strings.IndexByte(s[i:], ']')
		if end < 0 {
			return nil, fmt.Errorf("%w %q: unclosed [", ErrBadPath, s)
		}
		digits := s[i+1 : i+end]
		n, err := strconv.Atoi(digits)
		if err != nil || n < 0 || digits == "" || digits[0] == '+' || digits[0] == '-' {
			return nil, fmt.Errorf("%w %q: list index %q is not a non-negative integer", ErrBadPath, s, digits)
		}
		if n > MaxIndex {
			return nil, fmt.Errorf("%w %q: list index %d exceeds the limit of %d", ErrBadPath, s, n, MaxIndex)
		}
		p = append(p, Index(n))
		i += end + 1
		if i < len(s) && s[i] != '.' && s[i] != '[' {
			return nil, fmt.Errorf("%w %q: expected . or [ after ]", ErrBadPath, s)
		}
	}
	return p, nil
}
