package appset

import (
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// pathspecMatch reports whether the repository path name (slash
// separated, relative to the root) is selected by pattern as
// `git ls-files -- PATTERN` selects it, which is how Argo CD's repo-server
// lists the files of a git files generator by default:
//   - a pattern naming a path exactly, or a directory above it, matches
//     (apps matches apps/a/config.json);
//   - otherwise the pattern is a wildmatch glob in which * and ? match any
//     character, / included, so apps/*.yaml matches apps/a/b.yaml and **
//     is no different from *; [...] is a bracket expression (! or ^
//     negates, ranges, [:alpha:] classes); \ escapes.
//
// A leading "./" is dropped and "." (or nothing) matches every path.
func pathspecMatch(pattern, name string) bool {
	for strings.HasPrefix(pattern, "./") {
		pattern = strings.TrimLeft(pattern[2:], "/")
	}
	if pattern == "." || pattern == "" {
		return true
	}
	lit := strings.TrimSuffix(pattern, "/")
	if name == lit || strings.HasPrefix(name, lit+"/") {
		return true
	}
	if !strings.ContainsAny(pattern, `*?[\`) {
		return false
	}
	return wildmatch(pattern, name)
}

// wildmatch matches text against a glob in which * and ? match any
// character, / included (git's wildmatch without WM_PATHNAME). It runs in
// O(len(pattern)·len(text)): a mismatch after a * retries from the last *
// only, which suffices because * matches every character.
func wildmatch(pattern, text string) bool {
	p, t := 0, 0
	starP, starT := -1, -1
	for t < len(text) {
		if p < len(pattern) {
			switch pattern[p] {
			case '*':
				for p < len(pattern) && pattern[p] == '*' {
					p++
				}
				if p == len(pattern) {
					return true
				}
				starP, starT = p, t
				continue
			case '?':
				p++
				t++
				continue
			case '[':
				if ok, next, valid := matchBracket(pattern, p, text[t]); valid {
					if ok {
						p, t = next, t+1
						continue
					}
				} else if text[t] == '[' { // an unclosed [ is itself
					p, t = p+1, t+1
					continue
				}
			case '\\':
				if p+1 < len(pattern) && pattern[p+1] == text[t] {
					p, t = p+2, t+1
					continue
				}
			default:
				if pattern[p] == text[t] {
					p, t = p+1, t+1
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starT++
		p, t = starP, starT
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// matchBracket matches c against the bracket expression at pattern[p]
// ('['). valid is false when the expression is not closed.
func matchBracket(pattern string, p int, c byte) (ok bool, next int, valid bool) {
	i := p + 1
	negate := false
	if i < len(pattern) && (pattern[i] == '!' || pattern[i] == '^') {
		negate = true
		i++
	}
	matched := false
	first := true
	for i < len(pattern) {
		ch := pattern[i]
		if ch == ']' && !first {
			return matched != negate, i + 1, true
		}
		first = false
		if ch == '[' && i+1 < len(pattern) && pattern[i+1] == ':' {
			if end := strings.Index(pattern[i+2:], ":]"); end >= 0 {
				class := pattern[i+2 : i+2+end]
				if inClass(class, c) {
					matched = true
				}
				i += end + 4
				continue
			}
		}
		if ch == '\\' && i+1 < len(pattern) {
			i++
			ch = pattern[i]
		}
		lo := ch
		i++
		if i+1 < len(pattern) && pattern[i] == '-' && pattern[i+1] != ']' {
			hi := pattern[i+1]
			if hi == '\\' && i+2 < len(pattern) {
				hi = pattern[i+2]
				i++
			}
			i += 2
			if lo <= c && c <= hi {
				matched = true
			}
			continue
		}
		if c == lo {
			matched = true
		}
	}
	return false, 0, false
}

func inClass(class string, c byte) bool {
	switch class {
	case "alnum":
		return isAlpha(c) || isDigit(c)
	case "alpha":
		return isAlpha(c)
	case "blank":
		return c == ' ' || c == '\t'
	case "cntrl":
		return c < 0x20 || c == 0x7f
	case "digit":
		return isDigit(c)
	case "graph":
		return c > 0x20 && c < 0x7f
	case "lower":
		return c >= 'a' && c <= 'z'
	case "print":
		return c >= 0x20 && c < 0x7f
	case "punct":
		return c > 0x20 && c < 0x7f && !isAlpha(c) && !isDigit(c)
	case "space":
		return c == ' ' || (c >= '\t' && c <= '\r')
	case "upper":
		return c >= 'A' && c <= 'Z'
	case "xdigit":
		return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
	}
	return false
}

func isAlpha(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// doublestarMatch is the repo-server's newer file globbing (the controller's
// --enable-new-git-file-globbing): the pattern, cleaned, is a doublestar
// glob in which * stays inside one path segment and ** spans any number of
// them, zero included.
func doublestarMatch(pattern, name string) (bool, error) {
	return doublestar.Match(path.Clean(pattern), name)
}
