package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/operator/config"
	"github.com/strata-dev/strata/internal/schema"
	"github.com/strata-dev/strata/internal/values"
)

// ErrUnknownModule is wrapped by the error for a config store key of a
// module that does not exist.
var ErrUnknownModule = errors.New("unknown module")

// A LocatedError is a schema validation error whose broken rules are
// shown with where the offending values were written (file:line).
type LocatedError struct {
	// Where holds, for each of Err.Errors, where its value was written
	// ("config.yaml:4", "modules/values.yaml:2"); "" when unknown.
	Where []string
	Err   *schema.ValidationError
}

func (e *LocatedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "values do not match schema %s:", e.Err.Source)
	for i, fe := range e.Err.Errors {
		b.WriteString("\n  ")
		if i < len(e.Where) && e.Where[i] != "" {
			b.WriteString(e.Where[i])
			b.WriteString(": ")
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
	le := &LocatedError{Err: ve, Where: make([]string, len(ve.Errors))}
	for i, fe := range ve.Errors {
		p, perr := document.ParsePath(fe.Path)
		if perr != nil {
			continue
		}
		// A missing key has no line: take its parent's.
		for n := len(p); n >= 0; n-- {
			if pos := cs.Pos.Lookup(p[:n]); pos != nil && pos.Line > 0 {
				le.Where[i] = fmt.Sprintf("%s:%d", source, pos.Line)
				break
			}
		}
	}
	return le
}

// locateValues adds to a validation error of a section's effective values
// the layer that wrote each offending value, found by a merge with
// provenance (only done on this error path).
func (sec *section) locateValues(err error, cfg *config.Config) error {
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	layers, lerr := sec.layers(cfg, true)
	if lerr != nil {
		return err
	}
	res, merr := values.Merge(layers, values.MergeOptions{Provenance: true})
	if merr != nil {
		return err
	}
	le := &LocatedError{Err: ve, Where: make([]string, len(ve.Errors))}
	for i, fe := range ve.Errors {
		p, perr := document.ParsePath(fe.Path)
		if perr != nil {
			continue
		}
		full := append(document.Path{document.Key(sec.key)}, p...)
		// A missing key was written by no one: it stays unlocated.
		exps, xerr := res.Explain(full, values.ExplainOptions{ShowSensitive: true})
		if xerr != nil || len(exps) != 1 {
			continue
		}
		w := exps[0].Winner
		file, layer := w.Source, w.Layer
		switch {
		case file != "" && w.Line > 0:
			le.Where[i] = fmt.Sprintf("%s:%d (%s)", file, w.Line, layer)
		case file != "":
			le.Where[i] = fmt.Sprintf("%s (%s)", file, layer)
		default:
			le.Where[i] = layer
		}
	}
	return le
}
