package schema

import (
	"fmt"
	"strconv"
	"strings"
)

// A ParseError reports a schema that cannot be loaded: bad YAML or JSON, an
// unknown keyword, a keyword with a value of the wrong kind, a $ref or
// x-extend that cannot be resolved, a default that does not match its own
// schema, or a size limit.
type ParseError struct {
	Source string // the schema file the problem is in
	Line   int    // 1-based line in Source; 0 when unknown
	Path   string // schema location in --set notation, e.g. properties.image.type; "" for the document
	Err    error
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.Source)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *ParseError) Unwrap() error { return e.Err }

// A FieldError is one rule broken by one value.
type FieldError struct {
	// Path of the value in --set notation (`a.b[0].c`); "" is the root.
	// For a missing required property it is the path the property would have.
	Path string
	// Rule is the schema keyword that failed: type, required, enum, pattern,
	// additionalProperties, minimum, format, anyOf, ...
	Rule    string
	Message string
}

func (e FieldError) String() string {
	p := e.Path
	if p == "" {
		p = "(root)"
	}
	return p + ": " + e.Message + " (rule: " + e.Rule + ")"
}

// A ValidationError lists every rule a value tree breaks, sorted by path
// (keys by name, list indices by number), then by rule and message.
type ValidationError struct {
	Source string // the schema the tree was validated against
	Errors []FieldError
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	if e.Source == "" {
		b.WriteString("values do not match the schema:")
	} else {
		fmt.Fprintf(&b, "values do not match schema %s:", e.Source)
	}
	for _, fe := range e.Errors {
		b.WriteString("\n  ")
		b.WriteString(fe.String())
	}
	return b.String()
}
