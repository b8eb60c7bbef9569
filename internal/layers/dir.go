package layers

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
	"github.com/strata-dev/strata/internal/limits"
)

// Limits bound what reading a directory of Kubernetes YAML may cost.
type Limits struct {
	MaxFiles      int   // YAML and JSON files read
	MaxFileBytes  int64 // size of one file
	MaxTotalBytes int64 // size of all files together
	MaxObjects    int   // relevant objects in all files
}

// DefaultLimits returns the limits ReadDir uses for zero fields.
func DefaultLimits() Limits {
	return Limits{MaxFiles: 10000, MaxFileBytes: 16 << 20, MaxTotalBytes: 256 << 20, MaxObjects: 100000}
}

func (l Limits) withDefaults() Limits { return limits.Or(l, DefaultLimits()) }

// DirSource serves the ConfigMaps, Secrets and Catalogs written in the
// Kubernetes YAML and JSON files of a directory tree. Objects are decoded
// strictly when asked for: an unknown field is an error with its file and
// line. An object without metadata.namespace is in DefaultNamespace.
type DirSource struct {
	dir     string
	objects map[objectKey][]*object
	// Skipped lists the files that could not be parsed as YAML or JSON.
	// They are not an error, since a repository holds other YAML (Helm
	// templates, for instance), but a lookup that finds nothing names them.
	Skipped []error
}

type objectKey struct{ kind, namespace, name string }

var (
	_ Source  = (*DirSource)(nil)
	_ Locator = (*DirSource)(nil)
)

// ReadDir reads every *.yaml, *.yml and *.json file under dir (hidden
// directories and symbolic links skipped).
func ReadDir(ctx context.Context, dir string, lim Limits) (*DirSource, error) {
	lim = lim.withDefaults()
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("reading objects: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("reading objects: %s is not a directory", dir)
	}
	s := &DirSource{dir: dir, objects: map[objectKey][]*object{}}
	var files int
	var total int64
	var count int
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			if path != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		files++
		if files > lim.MaxFiles {
			return fmt.Errorf("%s holds more than %d YAML and JSON files: point --from at the directory of the App's objects", dir, lim.MaxFiles)
		}
		data, err := document.ReadFile(path, lim.MaxFileBytes)
		if err != nil {
			return err
		}
		total += int64(len(data))
		if total > lim.MaxTotalBytes {
			return fmt.Errorf("the YAML and JSON files under %s hold more than %d bytes: point --from at the directory of the App's objects", dir, lim.MaxTotalBytes)
		}
		objs, err := readObjects(data, path, lim.MaxFileBytes)
		if err != nil {
			s.Skipped = append(s.Skipped, err)
			return nil
		}
		for _, o := range objs {
			count++
			if count > lim.MaxObjects {
				return fmt.Errorf("the files under %s hold more than %d ConfigMaps, Secrets, Apps and Catalogs", dir, lim.MaxObjects)
			}
			k := objectKey{o.kind, o.namespace, o.name}
			s.objects[k] = append(s.objects[k], o)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// lookup returns the one object of a kind, namespace and name.
func (s *DirSource) lookup(kind, namespace, name string) (*object, error) {
	objs := s.objects[objectKey{kind, namespace, name}]
	switch len(objs) {
	case 0:
		return nil, s.notFound(kind, namespace, name)
	case 1:
		return objs[0], nil
	}
	var at []string
	for _, o := range objs {
		at = append(at, o.loc.where(nil))
	}
	return nil, fmt.Errorf("%s %s/%s is defined %d times under %s (%s): keep one", kind, namespace, name, len(objs), s.dir, strings.Join(at, ", "))
}

func (s *DirSource) notFound(kind, namespace, name string) error {
	msg := fmt.Sprintf("%s %s/%s: %v under %s", kind, namespace, name, ErrNotFound, s.dir)
	var elsewhere []string
	for k, objs := range s.objects {
		if k.kind == kind && k.name == name {
			for _, o := range objs {
				elsewhere = append(elsewhere, fmt.Sprintf("namespace %s at %s", k.namespace, o.loc.where(nil)))
			}
		}
	}
	sort.Strings(elsewhere)
	if len(elsewhere) > 0 {
		msg += fmt.Sprintf(" (a %s named %s exists in %s; objects without metadata.namespace are in namespace %s)",
			kind, name, strings.Join(elsewhere, ", "), DefaultNamespace)
	}
	if n := len(s.Skipped); n > 0 {
		msg += fmt.Sprintf(" (%d files could not be parsed; the first: %v)", n, s.Skipped[0])
	}
	return &notFoundError{msg: msg}
}

type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }
func (e *notFoundError) Unwrap() error { return ErrNotFound }

// ConfigMap implements Source.
func (s *DirSource) ConfigMap(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	o, err := s.lookup(KindConfigMap, namespace, name)
	if err != nil {
		return nil, err
	}
	return o.configMap()
}

// Secret implements Source.
func (s *DirSource) Secret(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	o, err := s.lookup(KindSecret, namespace, name)
	if err != nil {
		return nil, err
	}
	return o.secret()
}

// Catalog implements Source.
func (s *DirSource) Catalog(_ context.Context, namespace, name string) (*v1alpha1.Catalog, error) {
	o, err := s.lookup(KindCatalog, namespace, name)
	if err != nil {
		return nil, err
	}
	return o.catalog()
}

// Locate implements Locator.
func (s *DirSource) Locate(kind, namespace, name string) *Location {
	objs := s.objects[objectKey{kind, namespace, name}]
	if len(objs) != 1 {
		return nil
	}
	return objs[0].loc
}

// Apps returns the Apps under the directory, sorted by namespace and name.
func (s *DirSource) Apps() ([]AppDoc, error) {
	var keys []objectKey
	for k := range s.objects {
		if k.kind == KindApp {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].namespace != keys[j].namespace {
			return keys[i].namespace < keys[j].namespace
		}
		return keys[i].name < keys[j].name
	})
	var out []AppDoc
	for _, k := range keys {
		o, err := s.lookup(k.kind, k.namespace, k.name)
		if err != nil {
			return nil, err
		}
		a, err := o.app()
		if err != nil {
			return nil, err
		}
		out = append(out, AppDoc{App: a, Location: o.loc})
	}
	return out, nil
}
