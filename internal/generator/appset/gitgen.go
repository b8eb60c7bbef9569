package appset

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/strata-dev/strata/internal/document"
)

// The git generator, as Argo CD's: directories of a repository, or the
// contents of JSON/YAML files in it, each becoming a parameter set.

type gitDoc struct {
	RepoURL             string            `json:"repoURL"`
	Revision            string            `json:"revision"`
	Directories         []gitItemDoc      `json:"directories"`
	Files               []gitItemDoc      `json:"files"`
	PathParamPrefix     string            `json:"pathParamPrefix"`
	Values              map[string]string `json:"values"`
	RequeueAfterSeconds *int64            `json:"requeueAfterSeconds"`
	Template            *templateDoc      `json:"template"`
}

type gitItemDoc struct {
	Path    string `json:"path"`
	Exclude bool   `json:"exclude"`
}

// checkGit checks what the API server and the controller check of a git
// generator before it runs.
func (a *ApplicationSet) checkGit(g *generator, body map[string]any) error {
	kpos := g.pos.Key("git")
	d := g.git
	if strings.TrimSpace(d.RepoURL) == "" {
		return invalidf(a.Source, kpos, "%s.repoURL is empty: name the repository, as its Argo CD repository URL", g.path)
	}
	if _, ok := body["revision"]; !ok {
		return invalidf(a.Source, kpos, "%s.revision is missing: the ApplicationSet CRD requires it; use HEAD for the default branch", g.path)
	}
	if len(d.Directories) == 0 && len(d.Files) == 0 {
		return invalidf(a.Source, kpos, "%s has neither directories nor files: give one of them", g.path)
	}
	if len(d.Directories) > 0 && len(d.Files) > 0 {
		a.warnf("%s.files is ignored: a git generator with directories reads only those, as Argo CD does", g.path)
	}
	for i, it := range d.Directories {
		if _, err := path.Match(it.Path, ""); err != nil {
			return invalidf(a.Source, kpos.Key("directories").Item(i), "%s.directories[%d].path %q is not a valid pattern (%v); Argo CD matches directories with Go's path.Match: *, ?, [...] and \\ escapes", g.path, i, it.Path, err)
		}
	}
	return nil
}

func (x *run) gitParams(ctx context.Context, g *generator) ([]map[string]any, error) {
	d := g.git
	if x.r.Repos == nil {
		return nil, fmt.Errorf("%s.repoURL %q: %w; map it with --repo %s=DIR, DIR a checkout or a git repository", g.path, d.RepoURL, ErrRepoNotMapped, d.RepoURL)
	}
	if len(d.Directories) > 0 {
		return x.gitDirectoryParams(ctx, g)
	}
	return x.gitFileParams(ctx, g)
}

func (x *run) repoError(g *generator, err error) error {
	if errors.Is(err, ErrRepoNotMapped) {
		return fmt.Errorf("%s.repoURL: %w", g.path, err)
	}
	return fmt.Errorf("%s: %w", g.path, err)
}

func (x *run) gitDirectoryParams(ctx context.Context, g *generator) ([]map[string]any, error) {
	d := g.git
	all, err := x.r.Repos.Directories(ctx, d.RepoURL, d.Revision)
	if err != nil {
		return nil, x.repoError(g, err)
	}
	var sets []map[string]any
	for _, dir := range all {
		include, exclude := false, false
		for _, it := range d.Directories {
			ok, err := path.Match(it.Path, dir)
			if err != nil {
				return nil, fmt.Errorf("%s.directories: pattern %q: %w", g.path, it.Path, err)
			}
			if ok && it.Exclude {
				exclude = true
			} else if ok {
				include = true
			}
		}
		if !include || exclude {
			continue
		}
		p := map[string]any{}
		if x.a.GoTemplate {
			segs := strings.Split(dir, "/")
			segments := make([]any, len(segs))
			for i, s := range segs {
				segments[i] = s
			}
			pp := map[string]any{
				"path":               dir,
				"basename":           path.Base(dir),
				"basenameNormalized": sanitizeName(path.Base(dir)),
				"segments":           segments,
			}
			putPathParam(p, d.PathParamPrefix, pp)
		} else {
			name := pathParamName(d.PathParamPrefix)
			p[name] = dir
			p[name+".basename"] = path.Base(dir)
			p[name+".basenameNormalized"] = sanitizeName(path.Base(dir))
			putSegments(p, name, dir)
		}
		if err := x.appendValues(g, d.Values, p, len(sets)); err != nil {
			return nil, err
		}
		sets = append(sets, p)
		if len(sets) > x.lim.MaxParamSets {
			return nil, fmt.Errorf("%w: %s selects more than %d directories (--max-applications)", ErrTooLarge, g.path, x.lim.MaxParamSets)
		}
	}
	return sets, nil
}

func pathParamName(prefix string) string {
	if prefix != "" {
		return prefix + ".path"
	}
	return "path"
}

func putPathParam(p map[string]any, prefix string, pp map[string]any) {
	if prefix != "" {
		p[prefix] = map[string]any{"path": pp}
	} else {
		p["path"] = pp
	}
}

// putSegments adds name[N] for every non-empty segment N of dir.
func putSegments(p map[string]any, name, dir string) {
	for i, s := range strings.Split(dir, "/") {
		if s != "" {
			p[name+"["+strconv.Itoa(i)+"]"] = s
		}
	}
}

// appendValues renders a generator's values with the parameter set and
// adds them: values.<key> in plain mode, a map of strings under values
// in goTemplate mode. Each value sees the set without the other values.
func (x *run) appendValues(g *generator, vals map[string]string, p map[string]any, set int) error {
	if len(vals) == 0 {
		return nil
	}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	rendered := make(map[string]string, len(vals))
	for _, k := range keys {
		s, err := x.eng.replace(vals[k], p)
		if err != nil {
			return fmt.Errorf("%s.values.%s, parameter set %d: %w", g.path, k, set, err)
		}
		rendered[k] = s
	}
	if x.a.GoTemplate {
		p["values"] = rendered
		return nil
	}
	for k, v := range rendered {
		p["values."+k] = v
	}
	return nil
}

func (x *run) gitFileParams(ctx context.Context, g *generator) ([]map[string]any, error) {
	d := g.git
	contents := map[string][]byte{}
	var excludes []string
	for i, it := range d.Files {
		if it.Exclude && !x.v.atLeast(3, 1, 0) {
			x.warnf("%s.files[%d].exclude is ignored: Argo CD %d.%d has no exclude for files (3.1 added it), so the API server drops the field and the pattern includes files", g.path, i, x.v.Major, x.v.Minor)
		} else if it.Exclude {
			excludes = append(excludes, it.Path)
			continue
		}
		files, err := x.r.Repos.Files(ctx, d.RepoURL, d.Revision, it.Path)
		if err != nil {
			return nil, x.repoError(g, fmt.Errorf("files[%d] %q: %w", i, it.Path, err))
		}
		for k, v := range files {
			contents[k] = v
		}
	}
	for _, pat := range excludes {
		files, err := x.r.Repos.Files(ctx, d.RepoURL, d.Revision, pat)
		if err != nil {
			return nil, x.repoError(g, fmt.Errorf("excluded files %q: %w", pat, err))
		}
		for k := range files {
			delete(contents, k)
		}
	}
	names := make([]string, 0, len(contents))
	for k := range contents {
		names = append(names, k)
	}
	sort.Strings(names)
	var sets []map[string]any
	for _, name := range names {
		objects, err := parseGitFile(contents[name], name, !x.v.atLeast(3, 2, 0))
		if err != nil {
			return nil, fmt.Errorf("%s: file %s of %s: %w", g.path, name, d.RepoURL, err)
		}
		for _, obj := range objects {
			p, err := x.gitFileSet(g, name, obj, len(sets))
			if err != nil {
				return nil, err
			}
			sets = append(sets, p)
			if len(sets) > x.lim.MaxParamSets {
				return nil, fmt.Errorf("%w: %s produces more than %d parameter sets (--max-applications)", ErrTooLarge, g.path, x.lim.MaxParamSets)
			}
		}
	}
	return sets, nil
}

func (x *run) gitFileSet(g *generator, name string, obj map[string]any, set int) (map[string]any, error) {
	d := g.git
	dir := path.Dir(name)
	p := map[string]any{}
	if x.a.GoTemplate {
		for k, v := range obj {
			p[k] = v
		}
		segs := strings.Split(dir, "/")
		segments := make([]any, len(segs))
		for i, s := range segs {
			segments[i] = s
		}
		putPathParam(p, d.PathParamPrefix, map[string]any{
			"path":               dir,
			"basename":           path.Base(dir),
			"filename":           path.Base(name),
			"basenameNormalized": sanitizeName(path.Base(dir)),
			"filenameNormalized": sanitizeName(path.Base(name)),
			"segments":           segments,
		})
	} else {
		for k, v := range flatten(obj, false) {
			p[k] = v
		}
		pn := pathParamName(d.PathParamPrefix)
		p[pn] = dir
		p[pn+".basename"] = path.Base(dir)
		p[pn+".filename"] = path.Base(name)
		p[pn+".basenameNormalized"] = sanitizeName(path.Base(dir))
		p[pn+".filenameNormalized"] = sanitizeName(path.Base(name))
		putSegments(p, pn, dir)
	}
	if err := x.appendValues(g, d.Values, p, set); err != nil {
		return nil, err
	}
	return p, nil
}

// gitFileLimits bound one file of a repository as a YAML or JSON document.
var gitFileLimits = document.Limits{MaxBytes: 4 << 20, MaxDepth: 128, MaxNodes: 1 << 20}

// parseGitFile reads a git generator's file as the controller does
// (sigs.k8s.io/yaml: YAML 1.1, JSON types): a map is one parameter set, a
// list of maps one per item, an empty file or null one empty set. Before
// 3.2 (emptyListIsOne), an empty list is one empty set too. Anything else
// is an error; so is a second YAML document, which the controller would
// silently ignore.
func parseGitFile(data []byte, name string, emptyListIsOne bool) ([]map[string]any, error) {
	v, _, err := parseOneYAML11(data, name, gitFileLimits, false)
	if err != nil {
		return nil, err
	}
	switch t := jsonValue(v).(type) {
	case nil:
		return []map[string]any{{}}, nil
	case map[string]any:
		return []map[string]any{t}, nil
	case []any:
		if len(t) == 0 && emptyListIsOne {
			return []map[string]any{{}}, nil
		}
		out := make([]map[string]any, 0, len(t))
		for i, e := range t {
			switch m := e.(type) {
			case nil:
				out = append(out, map[string]any{})
			case map[string]any:
				out = append(out, m)
			default:
				return nil, fmt.Errorf("item %d is %s; a file holds a map of parameters or a list of such maps", i, document.Describe(e))
			}
		}
		return out, nil
	default:
		return nil, fmt.Errorf("the file holds %s; it must hold a map of parameters or a list of such maps (JSON or YAML)", document.Describe(v))
	}
}
