package helmplugin

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// A valuesFile is one values file of the values-files parameter after
// expansion: the entry as given, the field naming it in errors, and its
// path inside the repository.
type valuesFile struct {
	given, field, rel string
}

// errTooMany stops a glob walk at the values files limit.
var errTooMany = errors.New("too many matches")

// valuesFiles expands the values-files parameter as Argo CD's Helm source
// expands valueFiles: build environment variables are substituted in each
// entry (see expand), the path is resolved (relative to the application's
// directory, an absolute one to the repository's root), and an entry
// holding a glob pattern (*, ?, [, and ** across directories, by the
// doublestar rules Argo CD uses) is replaced in place by the files it
// matches, in doublestar's walk order (lexical within a directory, a
// directory's files before its subdirectories'). A file that another entry
// names explicitly is left out of a pattern's matches, so the explicit
// entry keeps its position, and a file is passed once, where it first
// appears. A pattern that matches nothing is an error unless
// ignore-missing-value-files is set.
func (j *job) valuesFiles() ([]valuesFile, error) {
	s := j.s
	resolved := make([]string, len(s.valuesFiles))
	explicit := map[string]bool{}
	for i, f := range s.valuesFiles {
		rel, err := j.resolve(expand(f, j.env))
		if err != nil {
			return nil, &paramError{name: ParamValuesFiles, field: fmt.Sprintf("array[%d]", i), err: err}
		}
		resolved[i] = rel
		if !isGlob(rel) {
			explicit[rel] = true
		}
	}
	var out []valuesFile
	seen := map[string]bool{}
	add := func(vf valuesFile) error {
		if seen[vf.rel] {
			return nil
		}
		if len(out) >= j.lim.MaxValuesFiles {
			return &paramError{name: ParamValuesFiles, field: vf.field, msg: fmt.Sprintf("more than the limit of %d values files once the patterns are expanded", j.lim.MaxValuesFiles)}
		}
		seen[vf.rel] = true
		out = append(out, vf)
		return nil
	}
	for i, f := range s.valuesFiles {
		field, rel := fmt.Sprintf("array[%d]", i), resolved[i]
		if !isGlob(rel) {
			if err := add(valuesFile{given: f, field: field, rel: rel}); err != nil {
				return nil, err
			}
			continue
		}
		if !doublestar.ValidatePattern(rel) {
			return nil, &paramError{name: ParamValuesFiles, field: field, msg: fmt.Sprintf("values file pattern %q is not a valid glob pattern", f)}
		}
		matched := 0
		err := doublestar.GlobWalk(j.root.FS(), rel, func(match string, _ fs.DirEntry) error {
			matched++
			if explicit[match] {
				return nil
			}
			if len(out) >= j.lim.MaxValuesFiles && !seen[match] {
				return errTooMany
			}
			return add(valuesFile{given: match, field: field, rel: match})
		})
		if errors.Is(err, errTooMany) {
			return nil, &paramError{name: ParamValuesFiles, field: field, msg: fmt.Sprintf("values file pattern %q matches more than the limit of %d values files", f, j.lim.MaxValuesFiles)}
		}
		if err != nil {
			return nil, &paramError{name: ParamValuesFiles, field: field, msg: fmt.Sprintf("values file pattern %q", f), err: err}
		}
		if matched == 0 {
			if s.ignoreMissing {
				j.p.log.Info("values file pattern matches no file; skipped (ignore-missing-value-files)", "app", j.req.AppName, "pattern", rel)
				continue
			}
			return nil, &paramError{name: ParamValuesFiles, field: field, msg: fmt.Sprintf("values file pattern %q matches no file in the repository (%s); fix the pattern (relative to the chart's directory) or set %s", f, rel, ParamIgnoreMissingValueFiles)}
		}
	}
	return out, nil
}

// isGlob tells whether a values file path is a pattern, as Argo CD tells.
func isGlob(p string) bool { return strings.ContainsAny(p, "*?[") }
