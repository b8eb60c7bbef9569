package module

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/schema"
)

// Defaults of Options.
const (
	// DefaultUnnumberedOrder is addon-operator's order of a module whose
	// directory has no number prefix (UNNUMBERED_MODULE_ORDER).
	DefaultUnnumberedOrder = 1
	// DefaultCRDFilterPrefixes is ADDON_OPERATOR_CRD_FILTER_PREFIXES'
	// default: crds/ files whose name starts with one are not CRDs.
	DefaultCRDFilterPrefixes = "doc-,_"
	// DefaultMaxFileSize bounds one values.yaml or schema file.
	DefaultMaxFileSize = 16 << 20
	// DefaultMaxModules bounds the modules of all MODULES_DIR paths.
	DefaultMaxModules = 10_000
)

// Well-known names inside a module directory.
const (
	ValuesFile        = "values.yaml"
	ChartFile         = "Chart.yaml"
	EnabledScriptFile = "enabled"
	HooksDir          = "hooks"
	CRDsDir           = "crds"
	OpenAPIDir        = "openapi"
	ConfigSchemaFile  = "config-values.yaml"
	ValuesSchemaFile  = "values.yaml"
)

// Options tune Discover and LoadGlobal. The zero value takes every default.
type Options struct {
	// UnnumberedOrder is the order of modules without a number prefix;
	// nil means DefaultUnnumberedOrder (so that 0 can be chosen).
	UnnumberedOrder *int
	// CRDFilterPrefixes are the prefixes of crds/ files that are skipped,
	// as ADDON_OPERATOR_CRD_FILTER_PREFIXES writes them (comma-separated);
	// "" means DefaultCRDFilterPrefixes, "-" none.
	CRDFilterPrefixes string
	// MaxFileSize bounds each values.yaml and schema file; 0 means
	// DefaultMaxFileSize, negative no limit.
	MaxFileSize int64
	// MaxModules bounds the number of modules; 0 means DefaultMaxModules,
	// negative no limit.
	MaxModules int
}

func (o Options) unnumbered() int {
	if o.UnnumberedOrder == nil {
		return DefaultUnnumberedOrder
	}
	return *o.UnnumberedOrder
}

func (o Options) maxFile() int64 {
	switch {
	case o.MaxFileSize == 0:
		return DefaultMaxFileSize
	case o.MaxFileSize < 0:
		return -1
	}
	return o.MaxFileSize
}

// CRDFilters returns the prefixes of Options.CRDFilterPrefixes, defaults
// applied.
func (o Options) CRDFilters() []string {
	s := o.CRDFilterPrefixes
	switch s {
	case "":
		s = DefaultCRDFilterPrefixes
	case "-":
		return nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// A Module is one module directory, read.
type Module struct {
	// Name is the directory name without its number prefix, kebab-case:
	// the Helm release name.
	Name string
	// Key is the values key, Name in camelCase.
	Key string
	// Order is the number prefix, or Options.UnnumberedOrder.
	Order int
	// Path is the module directory, symbolic links resolved.
	Path string
	// Found is where the module was found: MODULES_DIR path joined with
	// the entry's name (a symbolic link, when Path differs).
	Found string
	// ModulesDir is the MODULES_DIR path the module was found in.
	ModulesDir string

	// CommonValues is the module's section of ModulesDir's values.yaml,
	// CommonValuesPos its positions; nil when absent.
	CommonValues    map[string]any
	CommonValuesPos *document.Pos
	// CommonEnabled is `<key>Enabled` in the modules directories'
	// values.yaml files: every MODULES_DIR path's counts, whichever path
	// holds the module, the last path that sets it winning (as
	// addon-operator reads them); CommonEnabledFile is that file.
	CommonEnabled     *bool
	CommonEnabledFile string
	// StaticValues is the module's section of its own values.yaml,
	// StaticValuesPos its positions; nil when absent.
	StaticValues    map[string]any
	StaticValuesPos *document.Pos
	// StaticEnabled is `<key>Enabled` in the module's own values.yaml.
	StaticEnabled *bool

	// ConfigSchema validates the module's config section
	// (openapi/config-values.yaml); nil when absent.
	ConfigSchema *schema.Schema
	// ValuesSchema validates the module's effective values
	// (openapi/values.yaml); nil when absent.
	ValuesSchema *schema.Schema

	// HooksDir is the module's hooks/ directory; "" when there is none.
	HooksDir string
	// EnabledScript is the module's enabled script; "" when there is none.
	EnabledScript string
	// NonExecutableEnabledScript is the module's enabled file when it has
	// no executable bit: as addon-operator does, it is not run and the
	// module's enabled flag decides alone (the caller should warn).
	NonExecutableEnabledScript string
	// CRDs are the files of crds/ ending in .yaml or .yml whose names do
	// not start with a filter prefix, sorted by path.
	CRDs []string
	// HasChart is whether the module has a Chart.yaml; without one a
	// chart is generated from its templates/.
	HasChart bool
}

// CommonValuesFile is the modules directory's values.yaml of the module.
func (m *Module) CommonValuesFile() string { return filepath.Join(m.ModulesDir, ValuesFile) }

// ValuesFile is the module's own values.yaml.
func (m *Module) ValuesFile() string { return filepath.Join(m.Path, ValuesFile) }

// A Set is the result of Discover: the modules in order and the static
// global values.
type Set struct {
	// Modules are ordered by Order, then Name.
	Modules []*Module
	// Global is the global section: the `global` sections of every
	// MODULES_DIR path's values.yaml, merged in path order.
	Global *Global
}

// Get returns the module of a name, or nil.
func (s *Set) Get(name string) *Module {
	for _, m := range s.Modules {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// ByKey returns the module of a values key, or nil.
func (s *Set) ByKey(key string) *Module {
	for _, m := range s.Modules {
		if m.Key == key {
			return m
		}
	}
	return nil
}

// Names returns the names of the modules, in order.
func (s *Set) Names() []string {
	out := make([]string, len(s.Modules))
	for i, m := range s.Modules {
		out[i] = m.Name
	}
	return out
}

// ErrDuplicate is wrapped by the error for a module found twice.
var ErrDuplicate = errors.New("duplicate module")

// dirNameRe splits a directory name into its order and name.
var dirNameRe = regexp.MustCompile(`^(([0-9]+)-)?(.+)$`)

// SplitDirName returns the order and module name of a module directory
// name; ok is false when it has no number prefix.
func SplitDirName(dir string) (order int, name string, numbered bool) {
	m := dirNameRe.FindStringSubmatch(dir)
	if m == nil {
		return 0, dir, false
	}
	if m[2] == "" {
		return 0, m[3], false
	}
	n, err := strconv.ParseInt(m[2], 10, 32)
	if err != nil {
		// Too long a number for an order: addon-operator still strips
		// the prefix from the name and gives the module the order of
		// unnumbered modules.
		return 0, m[3], false
	}
	return int(n), m[3], true
}

// Discover finds the modules in every path of dirs (MODULES_DIR, already
// split at colons; empty entries are skipped) and the global section's
// static values, and reads each module. Entries whose names start with a
// dot are skipped, as are files that are not links to directories. globalDir is GLOBAL_HOOKS_DIR,
// whose openapi/ holds the global schemas ("" for none).
func Discover(dirs []string, globalDir string, opts Options) (*Set, error) {
	set := &Set{}
	seen := map[string]*Module{} // by name
	keys := map[string]*Module{} // by values key
	maxModules := opts.MaxModules
	if maxModules == 0 {
		maxModules = DefaultMaxModules
	}
	var globalLayers []globalStatic
	// Every path's values.yaml is read first: a `<key>Enabled` flag in any
	// of them applies to the module wherever it is.
	var commons []commonValues
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		file := filepath.Join(dir, ValuesFile)
		common, commonPos, err := readValuesFile(file, opts.maxFile())
		if err != nil {
			return nil, err
		}
		if g, ok := common[GlobalKey]; ok {
			gm, ok := g.(map[string]any)
			if !ok && g != nil {
				return nil, valuesFileError(file, commonPos.Key(GlobalKey),
					fmt.Sprintf("global must be a map of values, not %s", document.Describe(g)))
			}
			globalLayers = append(globalLayers, globalStatic{file: file, values: gm, pos: commonPos.Key(GlobalKey)})
		}
		commons = append(commons, commonValues{dir: dir, file: file, tree: common, pos: commonPos})
	}
	for _, c := range commons {
		dir, common, commonPos := c.dir, c.tree, c.pos
		entries, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("modules directory %s does not exist; check MODULES_DIR", dir)
			}
			return nil, fmt.Errorf("listing modules directory %s: %w", dir, err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue // .git and the like: never modules
			}
			found := filepath.Join(dir, e.Name())
			path, ok, err := moduleDir(found, e)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			order, name, numbered := SplitDirName(e.Name())
			if !numbered {
				order = opts.unnumbered()
			}
			if err := CheckName(name); err != nil {
				return nil, fmt.Errorf("module directory %s: %w", found, err)
			}
			key := ValuesKey(name)
			if prev := seen[name]; prev != nil {
				return nil, fmt.Errorf("%w %q: found at %s and at %s; keep one", ErrDuplicate, name, prev.Found, found)
			}
			if prev := keys[key]; prev != nil {
				return nil, fmt.Errorf("%w: %s and %s both have the values key %q; rename one", ErrDuplicate, prev.Found, found, key)
			}
			if maxModules > 0 && len(set.Modules) >= maxModules {
				return nil, fmt.Errorf("more than %d modules in %s; raise the limit of modules", maxModules, strings.Join(dirs, ":"))
			}
			m := &Module{Name: name, Key: key, Order: order, Path: path, Found: found, ModulesDir: dir}
			if err := m.load(common, commonPos, commons, opts); err != nil {
				return nil, err
			}
			seen[name] = m
			keys[key] = m
			set.Modules = append(set.Modules, m)
		}
	}
	slices.SortStableFunc(set.Modules, func(a, b *Module) int {
		if a.Order != b.Order {
			if a.Order < b.Order {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	g, err := loadGlobal(globalDir, globalLayers, opts)
	if err != nil {
		return nil, err
	}
	set.Global = g
	return set, nil
}

// moduleDir reports whether a modules directory entry is a module: a
// directory, or a symbolic link to one (followed). It returns the module's
// path with links resolved. A dangling link is an error: a module that
// vanished must not be taken for disabled.
func moduleDir(found string, e fs.DirEntry) (string, bool, error) {
	if e.IsDir() {
		return found, true, nil
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return "", false, nil
	}
	fi, err := os.Stat(found)
	if err != nil {
		return "", false, fmt.Errorf("module link %s: %w; remove the link or restore its target", found, err)
	}
	if !fi.IsDir() {
		return "", false, nil
	}
	path, err := filepath.EvalSymlinks(found)
	if err != nil {
		return "", false, fmt.Errorf("module link %s: %w", found, err)
	}
	return path, true, nil
}

// load reads the module directory.
// commonValues is the values.yaml of one MODULES_DIR path.
type commonValues struct {
	dir, file string
	tree      map[string]any
	pos       *document.Pos
}

func (m *Module) load(common map[string]any, commonPos *document.Pos, commons []commonValues, opts Options) error {
	var err error
	commonFile := m.CommonValuesFile()
	if m.CommonValues, m.CommonValuesPos, err = section(common, commonPos, m.Key, commonFile); err != nil {
		return err
	}
	for _, c := range commons {
		on, err := flag(c.tree, c.pos, EnabledKey(m.Key), c.file)
		if err != nil {
			return err
		}
		if on != nil {
			m.CommonEnabled, m.CommonEnabledFile = on, c.file
		}
	}
	own, ownPos, err := readValuesFile(m.ValuesFile(), opts.maxFile())
	if err != nil {
		return err
	}
	if m.StaticValues, m.StaticValuesPos, err = section(own, ownPos, m.Key, m.ValuesFile()); err != nil {
		return err
	}
	if m.StaticEnabled, err = flag(own, ownPos, EnabledKey(m.Key), m.ValuesFile()); err != nil {
		return err
	}
	if m.ConfigSchema, m.ValuesSchema, err = loadSchemas(m.Path, opts); err != nil {
		return fmt.Errorf("module %s: %w", m.Name, err)
	}
	if fi, err := os.Stat(filepath.Join(m.Path, HooksDir)); err == nil && fi.IsDir() {
		m.HooksDir = filepath.Join(m.Path, HooksDir)
	}
	if fi, err := os.Stat(filepath.Join(m.Path, EnabledScriptFile)); err == nil && fi.Mode().IsRegular() {
		if fi.Mode().Perm()&0o111 != 0 {
			m.EnabledScript = filepath.Join(m.Path, EnabledScriptFile)
		} else {
			m.NonExecutableEnabledScript = filepath.Join(m.Path, EnabledScriptFile)
		}
	}
	if fi, err := os.Stat(filepath.Join(m.Path, ChartFile)); err == nil && fi.Mode().IsRegular() {
		m.HasChart = true
	}
	m.CRDs, err = crdFiles(filepath.Join(m.Path, CRDsDir), opts.CRDFilters())
	if err != nil {
		return fmt.Errorf("module %s: %w", m.Name, err)
	}
	return nil
}

// crdFiles lists the CRD files under dir, recursively.
func crdFiles(dir string, filters []string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return fmt.Errorf("reading CRD files: %w", err)
		}
		if d.IsDir() {
			return nil
		}
		base := d.Name()
		if ext := filepath.Ext(base); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		for _, f := range filters {
			if strings.HasPrefix(base, f) {
				return nil
			}
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}
