package module_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/operator/module"
)

// writeTree writes files (path → content) under dir; files named
// "enabled" or under hooks/ are executable.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if filepath.Base(p) == "enabled" || strings.Contains(name, "/hooks/") {
			mode = 0o755
		}
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func TestValuesKey(t *testing.T) {
	for _, tc := range []struct{ name, key string }{
		{"cert-manager", "certManager"},
		{"nginx-ingress", "nginxIngress"},
		{"simple", "simple"},
		{"a-b-c", "aBC"},
		{"module1", "module1"},
		{"some-module2x", "someModule2x"},
	} {
		if got := module.ValuesKey(tc.name); got != tc.key {
			t.Errorf("ValuesKey(%q) = %q, want %q", tc.name, got, tc.key)
		}
		if got := module.NameFromKey(tc.key); got != tc.name {
			t.Errorf("NameFromKey(%q) = %q, want %q", tc.key, got, tc.name)
		}
	}
}

func TestCheckName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want string // substring of the error; "" for none
	}{
		{"cert-manager", ""},
		{"a1", ""},
		{"some-module", ""},
		{"Foo", `rename the directory to "foo"`},
		{"foo_bar", `rename the directory to "foo-bar"`},
		{"a--b", `rename the directory to "a-b"`},
		{"a-1", `rename the directory to "a1"`},
		{"fooBar", `rename the directory to "foo-bar"`},
		{"global", "reserved"},
		{"", "empty"},
	} {
		err := module.CheckName(tc.name)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckName(%q) = %v, want nil", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckName(%q) = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestSplitDirName(t *testing.T) {
	for _, tc := range []struct {
		dir      string
		order    int
		name     string
		numbered bool
	}{
		{"001-nginx-ingress", 1, "nginx-ingress", true},
		{"nginx", 0, "nginx", false},
		{"10-a", 10, "a", true},
		{"a-10", 0, "a-10", false},
		{"99999999999999999999-a", 0, "a", false},
		{"2147483647-a", 2147483647, "a", true},
		{"2147483648-a", 0, "a", false},
		{"0-a", 0, "a", true},
		{"-a", 0, "-a", false},
	} {
		order, name, numbered := module.SplitDirName(tc.dir)
		if order != tc.order || name != tc.name || numbered != tc.numbered {
			t.Errorf("SplitDirName(%q) = %d, %q, %v, want %d, %q, %v", tc.dir, order, name, numbered, tc.order, tc.name, tc.numbered)
		}
	}
}

type summary struct {
	Name, Key     string
	Order         int
	Found         string
	Common        map[string]any
	CommonEnabled *bool
	Static        map[string]any
	StaticEnabled *bool
	Hooks         bool
	Enabled       bool
	Chart         bool
	CRDs          []string
	ConfigSchema  bool
	ValuesSchema  bool
}

func summarize(root string, m *module.Module) summary {
	rel := func(p string) string {
		r, err := filepath.Rel(root, p)
		if err != nil {
			return p
		}
		return filepath.ToSlash(r)
	}
	s := summary{
		Name: m.Name, Key: m.Key, Order: m.Order, Found: rel(m.Found),
		Common: m.CommonValues, CommonEnabled: m.CommonEnabled, Static: m.StaticValues, StaticEnabled: m.StaticEnabled,
		Hooks: m.HooksDir != "", Enabled: m.EnabledScript != "", Chart: m.HasChart,
		ConfigSchema: m.ConfigSchema != nil, ValuesSchema: m.ValuesSchema != nil,
	}
	for _, c := range m.CRDs {
		s.CRDs = append(s.CRDs, rel(c))
	}
	return s
}

func ptr(b bool) *bool { return &b }

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"m1/values.yaml":                        "global:\n  a: 1\nfooEnabled: true\nfoo:\n  x: 1\n",
		"m1/010-foo/values.yaml":                "foo:\n  y: 2\nfooEnabled: false\n",
		"m1/010-foo/Chart.yaml":                 "name: foo\nversion: 0.0.1\n",
		"m1/010-foo/hooks/a.sh":                 "#!/bin/sh\n",
		"m1/010-foo/enabled":                    "#!/bin/sh\necho true > $MODULE_ENABLED_RESULT\n",
		"m1/010-foo/crds/doc-ru-x.yaml":         "kind: CustomResourceDefinition\n",
		"m1/010-foo/crds/_x.yaml":               "kind: CustomResourceDefinition\n",
		"m1/010-foo/crds/a.yaml":                "kind: CustomResourceDefinition\n",
		"m1/010-foo/crds/sub/b.yml":             "kind: CustomResourceDefinition\n",
		"m1/010-foo/crds/readme.md":             "no",
		"m1/010-foo/openapi/config-values.yaml": "type: object\nproperties:\n  x: {type: integer}\n",
		"m1/010-foo/openapi/values.yaml":        "x-extend:\n  schema: config-values.yaml\ntype: object\nproperties:\n  y: {type: integer}\n",
		"m1/002-bar/":                           "",
		"m1/baz/":                               "",
		"m1/README":                             "not a module",
		"m2/values.yaml":                        "global:\n  b: 2\n",
		"m2/003-zed/":                           "",
		"elsewhere/005-qux/values.yaml":         "qux:\n  q: true\n",
	})
	if err := os.Symlink(filepath.Join(root, "elsewhere/005-qux"), filepath.Join(root, "m2/005-qux")); err != nil {
		t.Fatal(err)
	}
	set, err := module.Discover([]string{filepath.Join(root, "m1"), "", filepath.Join(root, "m2")}, "", module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []summary
	for _, m := range set.Modules {
		got = append(got, summarize(root, m))
	}
	want := []summary{
		{Name: "baz", Key: "baz", Order: 1, Found: "m1/baz"},
		{Name: "bar", Key: "bar", Order: 2, Found: "m1/002-bar"},
		{Name: "zed", Key: "zed", Order: 3, Found: "m2/003-zed"},
		{Name: "qux", Key: "qux", Order: 5, Found: "m2/005-qux", Static: map[string]any{"q": true}},
		{
			Name: "foo", Key: "foo", Order: 10, Found: "m1/010-foo",
			Common: map[string]any{"x": int64(1)}, CommonEnabled: ptr(true),
			Static: map[string]any{"y": int64(2)}, StaticEnabled: ptr(false),
			Hooks: true, Enabled: true, Chart: true,
			CRDs:         []string{"m1/010-foo/crds/a.yaml", "m1/010-foo/crds/sub/b.yml"},
			ConfigSchema: true, ValuesSchema: true,
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Discover modules (-want +got):\n%s", diff)
	}
	qux := set.Get("qux")
	if qux.Path != filepath.Join(root, "elsewhere/005-qux") {
		t.Errorf("qux.Path = %s, want the link's target", qux.Path)
	}
	var globals []map[string]any
	for _, g := range set.Global.Static {
		globals = append(globals, g.Values)
	}
	if diff := cmp.Diff([]map[string]any{{"a": int64(1)}, {"b": int64(2)}}, globals); diff != "" {
		t.Errorf("global static values (-want +got):\n%s", diff)
	}
	// x-extend pulled x from config-values.yaml; additionalProperties
	// false refuses z.
	foo := set.Get("foo")
	if err := foo.ValuesSchema.Validate(map[string]any{"x": int64(1), "y": int64(2)}); err != nil {
		t.Errorf("values schema refused extended properties: %v", err)
	}
	if err := foo.ValuesSchema.Validate(map[string]any{"z": int64(1)}); err == nil {
		t.Error("values schema accepted an unknown property; additionalProperties should be false")
	}
	if got := set.Names(); !cmp.Equal(got, []string{"baz", "bar", "zed", "qux", "foo"}) {
		t.Errorf("Names() = %v", got)
	}

	order := 100
	set, err = module.Discover([]string{filepath.Join(root, "m1")}, "", module.Options{UnnumberedOrder: &order, CRDFilterPrefixes: "-"})
	if err != nil {
		t.Fatal(err)
	}
	if got := set.Names(); !cmp.Equal(got, []string{"bar", "foo", "baz"}) {
		t.Errorf("with UnnumberedOrder 100, Names() = %v, want [bar foo baz]", got)
	}
	if got := len(set.Get("foo").CRDs); got != 4 {
		t.Errorf("with no CRD filter, foo has %d CRD files, want 4", got)
	}
}

func TestDiscoverErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		link  [2]string
		dirs  []string
		want  []string // substrings of the error
	}{
		{
			name:  "duplicate across paths",
			files: map[string]string{"a/001-foo/": "", "b/002-foo/": ""},
			dirs:  []string{"a", "b"},
			want:  []string{"duplicate module", "a/001-foo", "b/002-foo"},
		},
		{
			name:  "not kebab-case",
			files: map[string]string{"a/001-fooBar/": ""},
			want:  []string{"a/001-fooBar", `rename the directory to "foo-bar"`},
		},
		{
			name:  "section not a map",
			files: map[string]string{"a/001-foo/values.yaml": "x: 1\nfoo: [1, 2]\n"},
			want:  []string{"001-foo/values.yaml:2", "foo must be a map"},
		},
		{
			name:  "enabled flag not a bool",
			files: map[string]string{"a/values.yaml": "fooEnabled: \"yes\"\n", "a/001-foo/": ""},
			want:  []string{"a/values.yaml:1", "fooEnabled must be true or false"},
		},
		{
			name:  "global not a map",
			files: map[string]string{"a/values.yaml": "global: 3\n"},
			want:  []string{"a/values.yaml:1", "global must be a map"},
		},
		{
			name:  "bad YAML",
			files: map[string]string{"a/001-foo/values.yaml": "foo:\n  a: 1\n a: 2\n"},
			want:  []string{"001-foo/values.yaml:"},
		},
		{
			name:  "bad schema",
			files: map[string]string{"a/001-foo/openapi/values.yaml": "type: object\nproperties:\n  x: {tpye: string}\n"},
			want:  []string{"module foo", "openapi/values.yaml:3", "tpye"},
		},
		{
			name:  "x-extend outside openapi",
			files: map[string]string{"a/001-foo/openapi/values.yaml": "x-extend: {schema: ../../values.yaml}\ntype: object\n"},
			want:  []string{"openapi/values.yaml", "not a path inside"},
		},
		{
			name:  "dangling link",
			files: map[string]string{"a/": ""},
			link:  [2]string{"nowhere", "a/001-foo"},
			want:  []string{"a/001-foo", "restore its target"},
		},
		{
			name: "missing modules dir",
			dirs: []string{"absent"},
			want: []string{"absent does not exist", "MODULES_DIR"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, tc.files)
			if tc.link[1] != "" {
				if err := os.Symlink(filepath.Join(root, tc.link[0]), filepath.Join(root, tc.link[1])); err != nil {
					t.Fatal(err)
				}
			}
			dirs := tc.dirs
			if dirs == nil {
				dirs = []string{"a"}
			}
			for i := range dirs {
				dirs[i] = filepath.Join(root, dirs[i])
			}
			_, err := module.Discover(dirs, "", module.Options{})
			if err == nil {
				t.Fatal("Discover succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Discover error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestDiscoverDuplicateIs(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{"a/001-foo/": "", "a/foo/": ""})
	_, err := module.Discover([]string{filepath.Join(root, "a")}, "", module.Options{})
	if !errors.Is(err, module.ErrDuplicate) {
		t.Errorf("Discover = %v, want ErrDuplicate", err)
	}
}

func TestDiscoverGlobalSchemas(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"modules/values.yaml":               "global:\n  project: p\n",
		"global/openapi/config-values.yaml": "type: object\nrequired: [project]\nproperties:\n  project: {type: string}\n",
		"global/openapi/values.yaml":        "x-extend: {schema: config-values.yaml}\ntype: object\nx-required-for-helm: [discovery]\nproperties:\n  discovery: {type: object, default: {}, additionalProperties: true}\n",
	})
	set, err := module.Discover([]string{filepath.Join(root, "modules")}, filepath.Join(root, "global"), module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := set.Global
	if g.ConfigSchema == nil || g.ValuesSchema == nil {
		t.Fatal("global schemas not loaded")
	}
	vals := g.ValuesSchema.ApplyDefaults(map[string]any{"project": "p"})
	if err := g.ValuesSchema.ValidateForHelm(vals); err != nil {
		t.Errorf("ValidateForHelm(defaulted) = %v", err)
	}
	if err := g.ValuesSchema.ValidateForHelm(map[string]any{"project": "p"}); err == nil {
		t.Error("ValidateForHelm without discovery succeeded; x-required-for-helm should require it")
	}
	if err := g.ValuesSchema.Validate(map[string]any{}); err == nil {
		t.Error("Validate({}) succeeded; project is required through x-extend")
	}
}

// TestDiscoverSchemaRefs: a module's openapi files and the global ones
// share definitions through $refs relative to the file holding them; a
// $ref out of the module is refused, naming the module and the file.
func TestDiscoverSchemaRefs(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"modules/001-foo/openapi/config-values.yaml": "type: object\nproperties:\n  replicas: {$ref: 'definitions.yaml#/replicas'}\n",
		"modules/001-foo/openapi/values.yaml":        "x-extend: {schema: config-values.yaml}\ntype: object\nproperties:\n  internal: {$ref: 'definitions.yaml#/internal'}\n",
		"modules/001-foo/openapi/definitions.yaml":   "replicas: {type: integer, minimum: 1}\ninternal: {type: object, properties: {replicas: {$ref: '#/replicas'}}}\n",
		"global/openapi/values.yaml":                 "type: object\nproperties:\n  project: {$ref: 'common.yaml'}\n",
		"global/openapi/common.yaml":                 "type: string\nminLength: 2\n",
	})
	set, err := module.Discover([]string{filepath.Join(root, "modules")}, filepath.Join(root, "global"), module.Options{})
	if err != nil {
		t.Fatal(err)
	}
	foo := set.Modules[0]
	err = foo.ValuesSchema.Validate(map[string]any{"replicas": int64(0), "internal": map[string]any{"replicas": int64(0)}})
	if err == nil || !strings.Contains(err.Error(), "replicas") || !strings.Contains(err.Error(), "internal.replicas") {
		t.Errorf("Validate = %v, want replicas and internal.replicas refused", err)
	}
	if err := set.Global.ValuesSchema.Validate(map[string]any{"project": "p"}); err == nil {
		t.Error("global Validate(project: p) succeeded; common.yaml's minLength should refuse it")
	}

	writeTree(t, root, map[string]string{
		"modules/002-bar/openapi/values.yaml": "type: object\nproperties:\n  a: {$ref: '../../001-foo/openapi/definitions.yaml#/replicas'}\n",
	})
	_, err = module.Discover([]string{filepath.Join(root, "modules")}, "", module.Options{})
	for _, want := range []string{"module bar", "002-bar/openapi/values.yaml:3", "is not a path inside " + filepath.Join(root, "modules", "002-bar")} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Discover error = %v, want one containing %q", err, want)
		}
	}
}
