package hook

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Kind says whose hook it is: the operator's (global) or a module's.
type Kind int

// The kinds of hooks.
const (
	Global Kind = iota + 1
	Module
)

func (k Kind) String() string {
	switch k {
	case Global:
		return "global"
	case Module:
		return "module"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// BindingType is a kind of binding in a hook's configuration.
type BindingType string

// The binding types of addon-operator's hooks. OnStartup, Schedule and
// Kubernetes are for both kinds of hooks; BeforeAll and AfterAll only for
// global hooks; BeforeHelm, AfterHelm, BeforeDeleteHelm and AfterDeleteHelm
// only for module hooks.
const (
	OnStartup        BindingType = "onStartup"
	BeforeAll        BindingType = "beforeAll"
	AfterAll         BindingType = "afterAll"
	BeforeHelm       BindingType = "beforeHelm"
	AfterHelm        BindingType = "afterHelm"
	BeforeDeleteHelm BindingType = "beforeDeleteHelm"
	AfterDeleteHelm  BindingType = "afterDeleteHelm"
	Schedule         BindingType = "schedule"
	Kubernetes       BindingType = "kubernetes"
)

// Lifecycle reports whether b is one of the bindings that take an order
// (onStartup, beforeAll, afterAll, beforeHelm, afterHelm, beforeDeleteHelm,
// afterDeleteHelm).
func (b BindingType) Lifecycle() bool {
	switch b {
	case OnStartup, BeforeAll, AfterAll, BeforeHelm, AfterHelm, BeforeDeleteHelm, AfterDeleteHelm:
		return true
	}
	return false
}

// A Hook is an executable file found by DiscoverGlobal or DiscoverModule.
type Hook struct {
	// Name is the hook's name as addon-operator gives it in logs and
	// metrics: the path relative to the global hooks directory, or
	// "hooks/..." for a module hook. Always with slashes.
	Name string
	// Path is the absolute path of the executable.
	Path string
	// Kind is Global or Module.
	Kind Kind
	// ModuleKey is a module hook's values key (camelCase module name):
	// its values patches may touch only /<ModuleKey>/... "" for a global
	// hook.
	ModuleKey string
	// PythonVenv, for a *.py module hook whose module has a Python
	// virtual environment in hooks/venv (with bin/python3), is that
	// directory: the hook runs as venv/bin/python3 HOOK with PYTHONHOME
	// set to it, as addon-operator runs it. "" runs the file itself.
	PythonVenv string
	// Batch is, for one hook of a module-sdk batch file (Runner.Configure),
	// its key there: its index ("0", "1", ...), run as `Path hook run N`,
	// or BatchReady, run as `Path hook ready`. "" for any other hook.
	Batch string
	// Module is a module hook's module name, given to a batch hook as
	// MODULE_NAME. "" for a global hook.
	Module string
}

func (h *Hook) String() string {
	if h.Kind == Module && h.ModuleKey != "" {
		return "module " + h.ModuleKey + " hook " + h.Name
	}
	return h.Kind.String() + " hook " + h.Name
}

// DiscoverGlobal lists the global hooks under dir: dir/hooks when that
// directory exists (addon-operator's layout), else dir itself. A missing
// dir has no hooks. skipped lists the files that look like hooks but are
// not executable, for a warning.
func DiscoverGlobal(dir string) (hooks []*Hook, skipped []string, err error) {
	if dir == "" {
		return nil, nil, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("global hooks directory %s: %w", dir, err)
	}
	root := abs
	if fi, err := os.Stat(filepath.Join(abs, "hooks")); err == nil && fi.IsDir() {
		root = filepath.Join(abs, "hooks")
	}
	paths, skipped, err := executables(root, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("global hooks directory %s: %w", dir, err)
	}
	for _, p := range paths {
		rel, _ := filepath.Rel(root, p)
		hooks = append(hooks, &Hook{Name: filepath.ToSlash(rel), Path: p, Kind: Global})
	}
	return hooks, skipped, nil
}

// DiscoverModule lists the hooks of the module in moduleDir: the
// executables under moduleDir/hooks (venv/ and lib/ skipped). key is the
// module's values key. A module without hooks/ has no hooks.
func DiscoverModule(moduleDir, key string) (hooks []*Hook, skipped []string, err error) {
	abs, err := filepath.Abs(moduleDir)
	if err != nil {
		return nil, nil, fmt.Errorf("module %s: %w", moduleDir, err)
	}
	root := filepath.Join(abs, "hooks")
	paths, skipped, err := executables(root, []string{"venv"})
	if err != nil {
		return nil, nil, fmt.Errorf("module %s hooks: %w", moduleDir, err)
	}
	venv := ""
	if fi, err := os.Stat(filepath.Join(root, "venv", "bin", "python3")); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		venv = filepath.Join(root, "venv")
	}
	for _, p := range paths {
		rel, _ := filepath.Rel(abs, p)
		h := &Hook{Name: filepath.ToSlash(rel), Path: p, Kind: Module, ModuleKey: key}
		if filepath.Ext(p) == ".py" {
			h.PythonVenv = venv
		}
		hooks = append(hooks, h)
	}
	return hooks, skipped, nil
}

// executables walks root (following a symbolic link at the root itself)
// and returns the executable files, sorted, and the non-executable ones
// that would otherwise be hooks.
func executables(root string, excluded []string) (paths, skipped []string, err error) {
	fi, err := os.Stat(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if !fi.IsDir() {
		return nil, nil, fmt.Errorf("%s is not a directory", root)
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || name == "lib" || slices.Contains(excluded, name)) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(name, ".") {
			return nil
		}
		switch filepath.Ext(name) {
		case ".yaml", ".yml", ".json", ".md", ".txt":
			return nil
		}
		// A symbolic link to a file counts as the file it points to.
		info, err := os.Stat(p)
		if err != nil {
			if d.Type()&fs.ModeSymlink != 0 {
				return nil // a dangling link is not a hook
			}
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		if info.Mode().Perm()&0o111 == 0 {
			skipped = append(skipped, p)
			return nil
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(paths)
	return paths, skipped, nil
}
