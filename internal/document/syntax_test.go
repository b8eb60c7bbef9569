package document

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"go.yaml.in/yaml/v3"
)

// yamlErrorCases pin the error strings of yaml.v3 that syntaxError reads
// lines from, one input per message: raw is the library's error as this
// version writes it, line the line strata reports. When a yaml upgrade
// changes a message or its line, TestYAMLErrorLines fails here, not
// silently in every error a user sees.
var yamlErrorCases = []struct {
	msg  string // the message after the "yaml: line N: " prefix
	in   string
	raw  string
	line int
}{
	// Parser errors: the library gives the 0-based line of the start of
	// the enclosing construct.
	{"did not find expected <document start>", "a: 1\n---\nb: 1\n...\nc\n",
		"yaml: line 4: did not find expected <document start>", 5},
	{"did not find expected node content", "a: 1\nb: [\n",
		"yaml: line 2: did not find expected node content", 3},
	{"did not find expected '-' indicator", "- a: 1\n  b: 2\n - c\n",
		"yaml: line 2: did not find expected '-' indicator", 3},
	{"did not find expected key", "a:\n  b: 1\n c: 2\n",
		"yaml: line 2: did not find expected key", 3},
	{"did not find expected ',' or ']'", "- 1\n- a: [1, 2\n",
		"yaml: line 1: did not find expected ',' or ']'", 2},
	{"did not find expected ',' or '}'", "a: 1\nb: {c: 1, d: 2\n",
		"yaml: line 1: did not find expected ',' or '}'", 2},
	{"found undefined tag handle", "a: 1\nb: !e!foo x\n",
		"yaml: line 1: found undefined tag handle", 2},
	{"found duplicate %YAML directive", "%YAML 1.1\n%YAML 1.1\n---\na: 1\n",
		"yaml: line 1: found duplicate %YAML directive", 2},
	// Line 0 of the construct: the library leaves the line out.
	{"found incompatible YAML document", "%YAML 2.0\n---\na: 1\n",
		"yaml: found incompatible YAML document", 1},
	{"found duplicate %TAG directive", "%TAG !e! tag:a,2000:\n%TAG !e! tag:b,2000:\n---\na: 1\n",
		"yaml: line 1: found duplicate %TAG directive", 2},

	// Scanner errors: the library gives the 1-based line itself.
	{"mapping values are not allowed in this context", "a: 1\nb: c: d\n",
		"yaml: line 2: mapping values are not allowed in this context", 2},
	{"found character that cannot start any token", "a: 1\nb: @x\n",
		"yaml: line 2: found character that cannot start any token", 2},
	{"could not find expected ':'", "x: 1\nfoo\n",
		"yaml: line 2: could not find expected ':'", 2},
	{"found unexpected end of stream", "a: 1\nb: \"x\n",
		"yaml: line 2: found unexpected end of stream", 2},
	{"found a tab character that violates indentation", "a: 1\n\tb: 2\n",
		"yaml: line 2: found a tab character that violates indentation", 2},

	// No line at all: strata finds the alias in the text.
	{"unknown anchor 'x' referenced", "a: 1\n\nb: *x\n",
		"yaml: unknown anchor 'x' referenced", 3},
}

func TestYAMLErrorLines(t *testing.T) {
	for _, tc := range yamlErrorCases {
		t.Run(tc.msg, func(t *testing.T) {
			if raw := rawYAMLError(tc.in); raw != tc.raw {
				t.Errorf("yaml.v3 on %q: %q, want %q (a yaml upgrade changed it: check yamlParserErrors and syntaxError)", tc.in, raw, tc.raw)
			}
			_, _, err := Loader{}.ParseAny([]byte(tc.in), "f.yaml")
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("ParseAny(%q) error = %v, want a *LoadError", tc.in, err)
			}
			if le.Line != tc.line || le.Msg != tc.msg || !errors.Is(err, ErrSyntax) {
				t.Errorf("ParseAny(%q) = line %d %q (%v), want line %d %q", tc.in, le.Line, le.Msg, le.Err, tc.line, tc.msg)
			}
		})
	}
}

// TestYAMLErrorTableCovered: every message of yamlParserErrors has a case.
func TestYAMLErrorTableCovered(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range yamlErrorCases {
		covered[tc.msg] = true
	}
	for msg := range yamlParserErrors {
		if !covered[msg] {
			t.Errorf("yamlParserErrors has %q, which no case of yamlErrorCases produces", msg)
		}
	}
}

// rawYAMLError returns the first error yaml.v3 gives decoding the stream.
func rawYAMLError(in string) string {
	dec := yaml.NewDecoder(bytes.NewReader([]byte(in)))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return ""
			}
			return err.Error()
		}
	}
}
