package config_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/golden"
	"github.com/strata-dev/strata/internal/operator/config"
	"github.com/strata-dev/strata/internal/values"
)

// describe prints a config (or the error reading it) for golden files.
func describe(c *config.Config, err error) string {
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	var b bytes.Buffer
	show := func(name string, s *config.Section) {
		fmt.Fprintf(&b, "%s (line %d):\n", name, s.Line)
		var v bytes.Buffer
		document.Encode(&v, s.Values, document.YAML)
		for _, l := range strings.Split(strings.TrimRight(v.String(), "\n"), "\n") {
			fmt.Fprintf(&b, "  %s\n", l)
		}
		if s.Pos != nil {
			for _, k := range slices.Sorted(maps.Keys(s.Values)) {
				if p := s.Pos.Key(k); p != nil {
					fmt.Fprintf(&b, "  # %s at line %d\n", k, p.Line)
				}
			}
		}
	}
	if c.Global != nil {
		show("global", c.Global)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Modules)) {
		show("module "+k, c.Modules[k])
	}
	for _, k := range slices.Sorted(maps.Keys(c.Enabled)) {
		fmt.Fprintf(&b, "%sEnabled: %v\n", k, c.Enabled[k])
	}
	for _, k := range slices.Sorted(maps.Keys(c.Maintenance)) {
		fmt.Fprintf(&b, "%sMaintenance: unmanaged %v\n", k, c.Maintenance[k])
	}
	return b.String()
}

func TestParseGolden(t *testing.T) {
	golden.Run(t, "testdata/parse/*.txtar", func(t *testing.T, c golden.Case) {
		in, _ := c.Section("config.yaml")
		cfg, err := config.Parse([]byte(in), "config.yaml", config.Limits{})
		golden.Check(t, c.Path, "want", describe(cfg, err))
	})
}

func FuzzParse(f *testing.F) {
	for _, c := range golden.Cases(f, "testdata/parse/*.txtar") {
		in, _ := c.Section("config.yaml")
		f.Add([]byte(in))
	}
	f.Add([]byte("fooEnabled: yes\n"))
	f.Add([]byte("global: \"a: [\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse(data, "fuzz.yaml", config.Limits{MaxBytes: 1 << 16})
		if err != nil {
			var le *document.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Parse error %v (%T) is not a *document.LoadError", err, err)
			}
			return
		}
		// What Parse accepts, Encode writes so that it reads back the same.
		out, err := config.Encode(c)
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		back, err := config.Parse(out, "encoded.yaml", config.Limits{})
		if err != nil {
			t.Fatalf("Parse(Encode(c)): %v\n%s", err, out)
		}
		if !config.Equal(c, back) {
			t.Fatalf("Parse(Encode(c)) differs: %v\n%s", config.Diff(c, back), out)
		}
	})
}

func TestDiff(t *testing.T) {
	base := "global: |\n  a: 1\nfoo: |\n  x: 1\nbar: |\n  y: 1\nfooEnabled: \"true\"\n"
	for _, tc := range []struct {
		name, next string
		want       config.Change
		reloadAll  bool
	}{
		{"same", base, config.Change{}, false},
		{"same, reformatted", "bar: {y: 1}\nfooEnabled: true\nfoo:\n  x: 1\nglobal: \"a: 1\"\n", config.Change{}, false},
		{"global", strings.Replace(base, "a: 1", "a: 2", 1), config.Change{Global: true}, true},
		{"module section", strings.Replace(base, "x: 1", "x: 2", 1), config.Change{Modules: []string{"foo"}}, false},
		{"two module sections", strings.Replace(strings.Replace(base, "x: 1", "x: 2", 1), "y: 1", "y: 2", 1), config.Change{Modules: []string{"bar", "foo"}}, false},
		{"module section removed", strings.Replace(base, "bar: |\n  y: 1\n", "", 1), config.Change{Modules: []string{"bar"}}, false},
		{"enabled flipped", strings.Replace(base, `fooEnabled: "true"`, `fooEnabled: "false"`, 1), config.Change{Enabled: []string{"foo"}}, true},
		{"enabled added", base + "barEnabled: \"false\"\n", config.Change{Enabled: []string{"bar"}}, true},
		{"enabled removed", strings.Replace(base, "fooEnabled: \"true\"\n", "", 1), config.Change{Enabled: []string{"foo"}}, true},
		{"maintenance set", base + "fooMaintenance: NoResourceReconciliation\n", config.Change{Maintenance: []string{"foo"}}, false},
		{"maintenance empty is no change", base + "fooMaintenance: \"\"\n", config.Change{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, err := config.Parse([]byte(base), "a", config.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			next, err := config.Parse([]byte(tc.next), "b", config.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			got := config.Diff(old, next)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Diff (-want +got):\n%s", diff)
			}
			if got.ReloadAll() != tc.reloadAll {
				t.Errorf("ReloadAll() = %v, want %v", got.ReloadAll(), tc.reloadAll)
			}
		})
	}
}

func jsonPatch(t *testing.T, ops ...map[string]any) *values.JSONPatch {
	t.Helper()
	list := make([]any, len(ops))
	for i, o := range ops {
		list[i] = o
	}
	p, err := values.NewJSONPatch(list, "patch", nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFilePatchKeepsTextAndComments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	orig := "# the operator's config\nglobal: |\n  # keep me\n  a: 1\nfoo: |\n  x: 1\nfooEnabled: \"true\"\n"
	if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	f := config.NewFile(path)
	c, err := f.Patch(context.Background(), jsonPatch(t,
		map[string]any{"op": "add", "path": "/foo/y", "value": "new"},
		map[string]any{"op": "add", "path": "/bar/z", "value": int64(1)},
	), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Section("bar"); !cmp.Equal(got, map[string]any{"z": int64(1)}) {
		t.Errorf("bar = %v, want the section created", got)
	}
	data, _ := os.ReadFile(path)
	want := "# the operator's config\nglobal: |\n  # keep me\n  a: 1\nfoo: |\n  x: 1\n  \"y\": new\nfooEnabled: \"true\"\nbar: |\n  z: 1\n"
	if string(data) != want {
		t.Errorf("file after Patch:\n%s\nwant:\n%s", data, want)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after Patch = %v, want 0600 kept", fi.Mode().Perm())
	}
}

func TestFilePatchErrorsStoreNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	orig := "foo: |\n  x: 1\n"
	os.WriteFile(path, []byte(orig), 0o644)
	f := config.NewFile(path)
	for _, tc := range []struct {
		name  string
		patch *values.JSONPatch
		check func(*config.Config) error
	}{
		{"remove missing", jsonPatch(t, map[string]any{"op": "remove", "path": "/foo/nope"}), nil},
		{"flag not a bool", jsonPatch(t, map[string]any{"op": "add", "path": "/fooEnabled", "value": "on"}), nil},
		{"not a key", jsonPatch(t, map[string]any{"op": "add", "path": "/cert-manager/x", "value": 1}), nil},
		{"check fails", jsonPatch(t, map[string]any{"op": "add", "path": "/foo/y", "value": 1}), func(*config.Config) error { return errors.New("invalid") }},
	} {
		if _, err := f.Patch(context.Background(), tc.patch, tc.check); err == nil {
			t.Errorf("%s: Patch succeeded", tc.name)
		}
		if data, _ := os.ReadFile(path); string(data) != orig {
			t.Errorf("%s: file changed to %q", tc.name, data)
		}
	}
}

// An edit made while a patch is being prepared is kept: the patch is
// applied to the edited file.
func TestFilePatchKeepsConcurrentEdit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(path, []byte("foo: |\n  x: 1\n"), 0o644)
	f := config.NewFile(path)
	edits := 0
	check := func(c *config.Config) error {
		if edits < 2 {
			edits++
			// The user saves the file while the hook's patch is checked.
			return os.WriteFile(path, []byte(fmt.Sprintf("foo: |\n  x: 1\n  edit%d: true\nglobal: |\n  user: %d\n", edits, edits)), 0o644)
		}
		return nil
	}
	c, err := f.Patch(context.Background(), jsonPatch(t, map[string]any{"op": "add", "path": "/foo/fromHook", "value": "h"}), check)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"x": int64(1), "edit2": true, "fromHook": "h"}
	if diff := cmp.Diff(want, c.Section("foo")); diff != "" {
		t.Errorf("foo after Patch (-want +got):\n%s", diff)
	}
	loaded, err := f.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, loaded.Section("foo")); diff != "" {
		t.Errorf("foo in the file (-want +got):\n%s", diff)
	}
	if got := loaded.Section("global")["user"]; got != int64(2) {
		t.Errorf("global.user = %v, want the user's edit 2", got)
	}
}

func TestFileMissingIsEmpty(t *testing.T) {
	f := config.NewFile(filepath.Join(t.TempDir(), "absent.yaml"))
	c, err := f.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !config.Diff(nil, c).Empty() {
		t.Errorf("missing file loaded as %v", describe(c, nil))
	}
}

func TestFileWatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	os.WriteFile(path, []byte("foo: |\n  x: 1\n"), 0o644)
	f := &config.File{Path: path, Debounce: 10 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := f.Load(ctx); err != nil {
		t.Fatal(err)
	}
	events, err := f.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := func() config.Event {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10s")
		}
		return config.Event{}
	}
	// Edits are written whole (a new file renamed over the old one): a
	// plain rewrite truncates first, and on a loaded machine the watcher
	// may read the empty file in between and rightly report it.
	write := func(data string) {
		t.Helper()
		tmp := filepath.Join(dir, "edit")
		if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	// A module section: that module.
	write("foo: |\n  x: 2\n")
	if ev := next(); ev.Err != nil || !cmp.Equal(ev.Change, config.Change{Modules: []string{"foo"}}) {
		t.Errorf("after editing foo: event %+v", ev)
	}
	// Our own patch is not reported; the next user edit is, diffed
	// against the patched content.
	if _, err := f.Patch(ctx, jsonPatch(t, map[string]any{"op": "add", "path": "/foo/y", "value": int64(1)}), nil); err != nil {
		t.Fatal(err)
	}
	// A broken file: an error event, the last good config stays.
	write("foo: \"false\"\n")
	ev := next()
	if !errors.Is(ev.Err, config.ErrFalseSection) {
		t.Errorf("after writing foo: \"false\": event %+v, want ErrFalseSection", ev)
	}
	// Replaced by rename, as editors do: enabled flag → reload all.
	tmp := filepath.Join(dir, "tmp")
	os.WriteFile(tmp, []byte("foo: |\n  x: 2\n  y: 1\nfooEnabled: \"false\"\n"), 0o644)
	os.Rename(tmp, path)
	ev = next()
	if ev.Err != nil || !cmp.Equal(ev.Change, config.Change{Enabled: []string{"foo"}}) || !ev.Change.ReloadAll() {
		t.Errorf("after setting fooEnabled: event %+v, want only the flag changed", ev)
	}
	cancel()
	for range events {
	}
}

func TestFilePatchThroughLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "real.yaml")
	link := filepath.Join(dir, "config.yaml")
	os.WriteFile(target, []byte("foo: |\n  x: 1\n"), 0o644)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	f := config.NewFile(link)
	if _, err := f.Patch(context.Background(), jsonPatch(t, map[string]any{"op": "add", "path": "/foo/y", "value": int64(2)}), nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", fi, err)
	}
	data, _ := os.ReadFile(target)
	if !strings.Contains(string(data), `"y": 2`) {
		t.Errorf("target after Patch: %s", data)
	}
}

// TestFilePatchConfigMap checks that a hook's config patch lands under the
// data of addon-operator's ConfigMap manifest, the rest of it kept.
func TestFilePatchConfigMap(t *testing.T) {
	for _, tc := range []struct{ name, orig, want string }{
		{"data", "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: addon-operator # keep\ndata:\n  global: \"\"\n  foo: |\n    x: 1\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: addon-operator # keep\ndata:\n  global: \"\"\n  foo: |\n    x: 1\n    \"y\": new\n"},
		{"no data", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: addon-operator\n",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: addon-operator\ndata:\n  foo: |\n    \"y\": new\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cm.yaml")
			if err := os.WriteFile(path, []byte(tc.orig), 0o600); err != nil {
				t.Fatal(err)
			}
			f := config.NewFile(path)
			if _, err := f.Patch(context.Background(), jsonPatch(t, map[string]any{"op": "add", "path": "/foo/y", "value": "new"}), nil); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(path)
			if string(data) != tc.want {
				t.Errorf("file after Patch:\n%s\nwant:\n%s", data, tc.want)
			}
			c, err := f.Load(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Section("foo"); got["y"] != "new" {
				t.Errorf("foo after Patch = %v, want y: new", got)
			}
		})
	}
}
