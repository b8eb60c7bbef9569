package generator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/strata-dev/strata/internal/document"
)

// Limits of a StaticBackend's data.
const (
	MaxStaticFileBytes = 16 << 20
	MaxStaticFiles     = 1000
	MaxStaticSets      = 100000
)

// A StaticBackend answers every request with the parameter sets read from
// its files, whatever the input: YAML or JSON files each holding a list of
// objects, concatenated in the order of Files, the files of one glob in
// lexical order. Reload reads them again when they changed; a failed
// reload keeps the data of the last good one.
type StaticBackend struct {
	// Files are paths or globs ("**" allowed), relative to Dir.
	Files []string
	// Dir is the directory relative paths start from; messages show the
	// paths under it relative to it.
	Dir string

	mu    sync.Mutex // serializes Reload
	stamp string
	data  atomic.Pointer[[]map[string]any]
}

// ErrNotLoaded is returned by a StaticBackend that never loaded.
var ErrNotLoaded = errors.New("the parameter files were never loaded")

// GetParams returns the sets last loaded. They are shared: callers must not
// modify them.
func (b *StaticBackend) GetParams(ctx context.Context, _ Request) ([]map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := b.data.Load()
	if p == nil {
		return nil, ErrNotLoaded
	}
	return *p, nil
}

// Reload reads the files again if the set of files a glob matches, or one
// of their sizes, modification times or inodes, changed since the last
// successful load. It reports whether it loaded new data; on error the
// data of the last good load stays.
func (b *StaticBackend) Reload() (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	paths, err := b.expand()
	if err != nil {
		return false, err
	}
	stamp := fileStamp(paths)
	if stamp == b.stamp && b.data.Load() != nil {
		return false, nil
	}
	var sets []map[string]any
	for _, p := range paths {
		s, err := readSets(p, b.show(p))
		if err != nil {
			return false, err
		}
		if len(sets)+len(s) > MaxStaticSets {
			return false, fmt.Errorf("the parameter files hold more than %d parameter sets", MaxStaticSets)
		}
		sets = append(sets, s...)
	}
	if sets == nil {
		sets = []map[string]any{}
	}
	b.data.Store(&sets)
	b.stamp = stamp
	return true, nil
}

// expand lists the files the globs match; a glob that matches nothing is an
// error (a file was renamed or a volume is not mounted: answering zero
// parameter sets would prune Applications).
func (b *StaticBackend) expand() ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, g := range b.Files {
		if !filepath.IsAbs(g) && b.Dir != "" {
			g = filepath.Join(b.Dir, g)
		}
		matches, err := doublestar.FilepathGlob(g, doublestar.WithFilesOnly())
		if err != nil {
			return nil, fmt.Errorf("glob %q: %w", g, err)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("%s matches no file", b.show(g))
		}
		slices.Sort(matches)
		for _, m := range matches {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
		if len(out) > MaxStaticFiles {
			return nil, fmt.Errorf("the globs match more than %d files", MaxStaticFiles)
		}
	}
	return out, nil
}

// show names a path for messages: relative to Dir when under it.
func (b *StaticBackend) show(path string) string {
	if b.Dir == "" {
		return path
	}
	if rel, err := filepath.Rel(b.Dir, path); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return path
}

// readSets reads one file: a list of objects. name is the path to show.
func readSets(path, name string) ([]map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: the file is gone", name)
		}
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	defer f.Close()
	data, err := document.ReadAll(f, MaxStaticFileBytes, name)
	if err != nil {
		return nil, err
	}
	tree, pos, err := document.Loader{Positions: true}.ParseAny(data, name)
	if err != nil {
		return nil, err
	}
	list, ok := tree.([]any)
	if !ok {
		line := 1
		if pos != nil && pos.Line > 0 {
			line = pos.Line
		}
		if tree == nil {
			return nil, &document.LoadError{Source: name, Line: line, Err: ErrBadOutput, Msg: "the file is empty; write a list of parameter sets ([] for none)"}
		}
		return nil, &document.LoadError{Source: name, Line: line, Err: ErrBadOutput,
			Msg: fmt.Sprintf("the file must hold a list of parameter sets (objects), but it holds %s", document.Describe(tree))}
	}
	sets := make([]map[string]any, 0, len(list))
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			le := &document.LoadError{Source: name, Err: ErrBadOutput,
				Msg: fmt.Sprintf("item %d must be an object (one parameter set), but it is %s", i, document.Describe(e))}
			if p := pos.Item(i); p != nil {
				le.Line = p.Line
			}
			return nil, le
		}
		if err := checkFloats(m); err != nil {
			le := &document.LoadError{Source: name, Err: ErrBadOutput, Msg: fmt.Sprintf("item %d: %v", i, err)}
			if p := pos.Item(i); p != nil {
				le.Line = p.Line
			}
			return nil, le
		}
		sets = append(sets, m)
	}
	return sets, nil
}
