package hook_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/operator/hook"
)

func writeFiles(t *testing.T, dir string, files map[string]os.FileMode) {
	t.Helper()
	for name, mode := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func names(hs []*hook.Hook) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Name)
	}
	return out
}

func TestDiscoverModule(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]os.FileMode{
		"hooks/b.sh":            0o755,
		"hooks/a/z.py":          0o755,
		"hooks/a/readme.md":     0o755,
		"hooks/config.yaml":     0o755,
		"hooks/.hidden":         0o755,
		"hooks/.git/x":          0o755,
		"hooks/lib/helper.sh":   0o755,
		"hooks/venv/bin/python": 0o755,
		"hooks/not-exec.sh":     0o644,
		"templates/x.sh":        0o755,
	})
	if err := os.Symlink(filepath.Join(dir, "hooks/b.sh"), filepath.Join(dir, "hooks/c-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "hooks/dangling")); err != nil {
		t.Fatal(err)
	}
	hooks, skipped, err := hook.DiscoverModule(dir, "myModule")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"hooks/a/z.py", "hooks/b.sh", "hooks/c-link"}; !cmp.Equal(names(hooks), want) {
		t.Errorf("DiscoverModule names = %v, want %v", names(hooks), want)
	}
	for _, h := range hooks {
		if h.Kind != hook.Module || h.ModuleKey != "myModule" || !filepath.IsAbs(h.Path) {
			t.Errorf("hook %+v", h)
		}
	}
	if want := []string{filepath.Join(dir, "hooks/not-exec.sh")}; !cmp.Equal(skipped, want) {
		t.Errorf("skipped = %v, want %v", skipped, want)
	}
	// A module without hooks/ has none.
	hooks, _, err = hook.DiscoverModule(t.TempDir(), "x")
	if err != nil || len(hooks) != 0 {
		t.Errorf("DiscoverModule(empty) = %v, %v", hooks, err)
	}
}

func TestDiscoverGlobal(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]os.FileMode{"hooks/000-a/x": 0o755, "hooks/y": 0o755, "openapi/config-values.yaml": 0o644})
	hooks, _, err := hook.DiscoverGlobal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"000-a/x", "y"}; !cmp.Equal(names(hooks), want) {
		t.Errorf("DiscoverGlobal names = %v, want %v", names(hooks), want)
	}
	// Without a hooks/ directory, the directory itself holds the hooks.
	flat := t.TempDir()
	writeFiles(t, flat, map[string]os.FileMode{"a.sh": 0o755})
	hooks, _, err = hook.DiscoverGlobal(flat)
	if err != nil || !cmp.Equal(names(hooks), []string{"a.sh"}) || hooks[0].Kind != hook.Global {
		t.Errorf("DiscoverGlobal(flat) = %v, %v", names(hooks), err)
	}
	if hooks, _, err := hook.DiscoverGlobal(filepath.Join(dir, "missing")); err != nil || hooks != nil {
		t.Errorf("DiscoverGlobal(missing) = %v, %v", hooks, err)
	}
	if _, _, err := hook.DiscoverGlobal(filepath.Join(dir, "hooks/y")); err == nil {
		t.Error("DiscoverGlobal(a file) succeeded")
	}
}

func TestDiscoverModulePythonVenv(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]os.FileMode{"hooks/a.py": 0o755, "hooks/b.sh": 0o755, "hooks/venv/bin/python3": 0o755})
	hooks, _, err := hook.DiscoverModule(dir, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 2 || hooks[0].PythonVenv != filepath.Join(dir, "hooks/venv") || hooks[1].PythonVenv != "" {
		t.Errorf("hooks = %+v %+v", hooks[0], hooks[1])
	}
}
