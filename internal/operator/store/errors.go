package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/operator/config"
	"github.com/strata-dev/strata/internal/schema"
)

// A LocatedError is a schema validation error about values read from a
// file: each broken rule is shown with the file and line of the value.
type LocatedError struct {
	Source string
	// Lines holds the line of each of Err.Errors' values; 0 when unknown.
	Lines []int
	Err   *schema.ValidationError
}

func (e *LocatedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "values do not match schema %s:", e.Err.Source)
	for i, fe := range e.Err.Errors {
		b.WriteString("\n  ")
		if i < len(e.Lines) && e.Lines[i] > 0 {
			fmt.Fprintf(&b, "%s:%d: ", e.Source, e.Lines[i])
		}
		b.WriteString(fe.String())
	}
	return b.String()
}

func (e *LocatedError) Unwrap() error { return e.Err }

// locate adds the lines of a config section's values to a validation error.
func locate(err error, cs *config.Section) error {
	var ve *schema.ValidationError
	if cs == nil || cs.Pos == nil || !errors.As(err, &ve) {
		return err
	}
	source := cs.Source
	if i := strings.LastIndex(source, " key "); i >= 0 {
		source = source[:i]
	}
	le := &LocatedError{Source: source, Err: ve, Lines: make([]int, len(ve.Errors))}
	for i, fe := range ve.Errors {
		p, perr := document.ParsePath(fe.Path)
		if perr != nil {
			continue
		}
		// A missing key has no line: take its parent's.
		for n := len(p); n >= 0; n-- {
			if pos := cs.Pos.Lookup(p[:n]); pos != nil && pos.Line > 0 {
				le.Lines[i] = pos.Line
				break
			}
		}
	}
	return le
}
