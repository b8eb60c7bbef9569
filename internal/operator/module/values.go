package module

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/schema"
)

// A Global is the global section's static part: its values from the
// modules directories' values.yaml files and its schemas from
// $GLOBAL_HOOKS_DIR/openapi.
type Global struct {
	// Static are the `global` sections of the values.yaml files, one per
	// MODULES_DIR path that has one, in path order.
	Static []StaticValues
	// ConfigSchema validates the global config section
	// (openapi/config-values.yaml); nil when absent.
	ConfigSchema *schema.Schema
	// ValuesSchema validates the effective global values
	// (openapi/values.yaml); nil when absent.
	ValuesSchema *schema.Schema
	// Dir is GLOBAL_HOOKS_DIR; "" when none was given.
	Dir string
}

// StaticValues is a section of a values.yaml file.
type StaticValues struct {
	File   string
	Values map[string]any
	Pos    *document.Pos
}

type globalStatic struct {
	file   string
	values map[string]any
	pos    *document.Pos
}

func loadGlobal(dir string, static []globalStatic, opts Options) (*Global, error) {
	g := &Global{Dir: dir}
	for _, s := range static {
		g.Static = append(g.Static, StaticValues{File: s.file, Values: s.values, Pos: s.pos})
	}
	if dir == "" {
		return g, nil
	}
	var err error
	if g.ConfigSchema, g.ValuesSchema, err = loadSchemas(dir, opts); err != nil {
		return nil, fmt.Errorf("global: %w", err)
	}
	return g, nil
}

// readValuesFile reads a values.yaml; a missing file is an empty one.
func readValuesFile(path string, max int64) (map[string]any, *document.Pos, error) {
	data, err := document.ReadFile(path, max)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, nil
		}
		return nil, nil, err
	}
	return parseValues(data, path, max)
}

// parseValues parses the content of a values.yaml, reading unquoted YAML
// 1.1 booleans (yes, no, on, off, y, n) as booleans, as addon-operator does.
func parseValues(data []byte, path string, max int64) (map[string]any, *document.Pos, error) {
	return document.Loader{Positions: true, YAML11Bools: true, Limits: document.Limits{MaxBytes: max}}.Parse(data, path)
}

func valuesFileError(file string, pos *document.Pos, msg string) error {
	line, col := pos.At()
	return &document.LoadError{Source: file, Line: line, Column: col, Err: document.ErrSyntax, Msg: msg}
}

// section returns the map under key in a values file's tree.
func section(tree map[string]any, pos *document.Pos, key, file string) (map[string]any, *document.Pos, error) {
	v, ok := tree[key]
	if !ok || v == nil {
		return nil, nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil, valuesFileError(file, pos.Key(key),
			fmt.Sprintf("%s must be a map of the module's values, not %s", key, document.Describe(v)))
	}
	return m, pos.Key(key), nil
}

// flag returns the boolean under key in a values file's tree.
func flag(tree map[string]any, pos *document.Pos, key, file string) (*bool, error) {
	v, ok := tree[key]
	if !ok || v == nil {
		return nil, nil
	}
	b, ok := v.(bool)
	if !ok {
		return nil, valuesFileError(file, pos.Key(key),
			fmt.Sprintf("%s must be true or false, not %s", key, document.Describe(v)))
	}
	return &b, nil
}

// loadSchemas reads openapi/config-values.yaml and openapi/values.yaml of
// the module (or global hooks) directory dir, with addon-operator's
// options: additionalProperties false where unset, x-extend and $refs to
// other files resolved inside dir (relative to the file naming them),
// defaults not checked against their schemas (addon-operator loads such a
// schema; the default fails the values it is applied to).
func loadSchemas(dir string, opts Options) (config, values *schema.Schema, err error) {
	so := schema.Options{AdditionalPropertiesFalse: true, UncheckedDefaults: true, AddonDefaults: true, Resolve: extendResolver(dir)}
	if config, err = loadSchema(dir, path.Join(OpenAPIDir, ConfigSchemaFile), so, opts); err != nil {
		return nil, nil, err
	}
	if values, err = loadSchema(dir, path.Join(OpenAPIDir, ValuesSchemaFile), so, opts); err != nil {
		return nil, nil, err
	}
	return config, values, nil
}

// extendResolver resolves x-extend and $refs inside dir; an absent
// openapi/config-values.yaml extends nothing, as addon-operator ignores
// x-extend when the module has none.
func extendResolver(dir string) schema.Resolver {
	resolve := schema.DirResolver(dir)
	return func(name string) ([]byte, string, error) {
		data, source, err := resolve(name)
		if errors.Is(err, fs.ErrNotExist) && name == path.Join(OpenAPIDir, ConfigSchemaFile) {
			return []byte("{}"), filepath.Join(dir, filepath.FromSlash(name)) + " (absent)", nil
		}
		return data, source, err
	}
}

// loadSchema reads the schema at name (slash-separated) below dir.
func loadSchema(dir, name string, so schema.Options, opts Options) (*schema.Schema, error) {
	file := filepath.Join(dir, filepath.FromSlash(name))
	so.Path = name
	max := opts.maxFile()
	if max < 0 || max > schema.MaxSchemaSize {
		max = schema.MaxSchemaSize
	}
	data, err := document.ReadFile(file, max)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	return schema.Parse(data, file, so)
}
