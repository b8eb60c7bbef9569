package schema

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/strata-dev/strata/internal/document"
)

// A Resolver returns a schema file an x-extend or a $ref names: its
// content, and its source name for error messages and cycle detection.
// name is a slash-separated path below the resolver's root, already joined
// to the directory of the file that names it; it may start with ".." when a
// reference leaves the root, which a resolver should refuse.
type Resolver func(name string) (data []byte, source string, err error)

// DirResolver resolves names as slash-separated paths relative to dir.
// Names that leave dir (absolute, "..", or through a symbolic link) are
// refused.
func DirResolver(dir string) Resolver {
	return func(name string) ([]byte, string, error) {
		rel := filepath.FromSlash(name)
		if !filepath.IsLocal(rel) {
			return nil, "", fmt.Errorf("%s is not a path inside %s: schemas may read only files inside it", name, dir)
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, "", err
		}
		defer root.Close()
		f, err := root.Open(rel)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", &fs.PathError{Op: "open", Path: filepath.Join(dir, rel), Err: fs.ErrNotExist}
		}
		if err != nil {
			if strings.Contains(err.Error(), "escapes") {
				return nil, "", fmt.Errorf("%s leads out of %s through a symbolic link: schemas may read only files inside it", name, dir)
			}
			return nil, "", err
		}
		defer f.Close()
		data, err := document.ReadAll(f, MaxSchemaSize, filepath.Join(dir, rel))
		if err != nil {
			return nil, "", err
		}
		return data, filepath.Join(dir, rel), nil
	}
}

// A loadChain loads a document and, through x-extend, the documents it
// extends.
type loadChain struct {
	resolve Resolver
	sources []string // cleaned source names being loaded, outermost first
}

// load loads a document and merges into it the schema it extends, if any.
// name is the document's path below the resolver's root.
func (c *loadChain) load(data []byte, source, name string) (*schemaDoc, error) {
	c.sources = append(c.sources, filepath.Clean(source))
	defer func() { c.sources = c.sources[:len(c.sources)-1] }()
	doc, err := loadDocument(data, source)
	if err != nil {
		return nil, err
	}
	ext, ok := doc.root[xExtend].(obj)
	if !ok {
		return doc, nil
	}
	delete(doc.root, xExtend)
	loc := document.Path{document.Key(xExtend), document.Key("schema")}
	pname := path.Join(path.Dir(name), ext["schema"].(string))
	parent, err := c.parent(doc, ext["schema"].(string), pname, loc)
	if err != nil {
		return nil, err
	}
	mergeParent(doc, parent, path.Dir(pname), path.Dir(name))
	return doc, nil
}

// parent resolves and loads the schema an x-extend names (written as
// written, at name below the resolver's root).
func (c *loadChain) parent(doc *schemaDoc, written, name string, loc document.Path) (*schemaDoc, error) {
	if c.resolve == nil {
		return nil, doc.errorAt(loc, errors.New("x-extend needs a resolver (Options.Resolve)"))
	}
	if len(c.sources) > MaxExtendDepth {
		return nil, doc.errorAt(loc, fmt.Errorf("x-extend chain longer than %d", MaxExtendDepth))
	}
	data, source, err := c.resolve(name)
	if err != nil {
		return nil, doc.errorAt(loc, fmt.Errorf("x-extend %q: %w", written, err))
	}
	if source == "" {
		source = name
	}
	if i := slices.Index(c.sources, filepath.Clean(source)); i >= 0 {
		chain := append(c.sources[i:len(c.sources):len(c.sources)], filepath.Clean(source))
		return nil, doc.errorAt(loc, fmt.Errorf("x-extend cycle: %s", strings.Join(chain, " -> ")))
	}
	return c.load(data, source, name)
}

// mergeParent pulls from the extended (parent) schema into doc's root:
// properties, patternProperties, definitions, required, title, description
// and every x-* key. Doc's own entries win; required lists are unioned,
// the parent's names first. The $refs to other files in what is pulled are
// rewritten from the parent's directory (from) to doc's (to).
func mergeParent(doc, parent *schemaDoc, from, to string) {
	root, proot := doc.root, parent.root
	for _, kw := range []string{"properties", "patternProperties", "definitions"} {
		pm, _ := proot[kw].(obj)
		for _, name := range slices.Sorted(maps.Keys(pm)) {
			m, _ := root[kw].(obj)
			if m == nil {
				m = obj{}
				root[kw] = m
			}
			if _, ok := m[name]; !ok {
				if s, ok := pm[name].(obj); ok {
					rebaseRefs(s, from, to)
				}
				m[name] = pm[name]
				copyPos(doc, parent, document.Path{document.Key(kw), document.Key(name)})
			}
		}
	}
	if req := unionRequired(proot["required"], root["required"]); req != nil {
		root["required"] = req
	}
	for _, k := range slices.Sorted(maps.Keys(proot)) {
		if k != xExtend && (isExtension(k) || k == "title" || k == "description") {
			if _, ok := root[k]; !ok {
				root[k] = proot[k]
				copyPos(doc, parent, document.Path{document.Key(k)})
			}
		}
	}
}

func unionRequired(parent, own any) []any {
	p, _ := parent.([]any)
	o, _ := own.([]any)
	if p == nil && o == nil {
		return nil
	}
	out := slices.Clone(p)
	for _, name := range o {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// copyPos copies the positions of a pulled entry and everything below it.
func copyPos(doc, parent *schemaDoc, loc document.Path) {
	prefix := loc.String()
	for k, p := range parent.pos {
		if k == prefix || strings.HasPrefix(k, prefix+".") || strings.HasPrefix(k, prefix+"[") {
			doc.pos[k] = p
		}
	}
}
