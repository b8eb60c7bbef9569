package helmplugin

import "strings"

// expand substitutes build environment variables in s, as Argo CD does in
// --set values and file-parameter paths: $NAME and ${NAME} are replaced by
// the variable's value, and $$ by a single $. Unlike Argo CD, which
// replaces an unknown variable with nothing, a $NAME or ${NAME} that names
// no build environment variable is left as written, so that a value such as
// a password holding "$x" reaches the chart intact.
func expand(s string, env map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		switch next := s[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i += 2
		case next == '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := env[name]; ok && isName(name) {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 3 + end
		case isNameByte(next):
			j := i + 1
			for j < len(s) && isNameByte(s[j]) {
				j++
			}
			if v, ok := env[s[i+1:j]]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i:j])
			}
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}
