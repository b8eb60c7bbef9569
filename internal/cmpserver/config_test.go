package cmpserver_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/params"
)

// fullConfig is the proposal's example 2 with every field of plugin.yaml set.
const fullConfig = `apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: kustomize-helm-proxy-cmp
  labels:
    team: platform
spec:
  version: v1.0
  init:
    command: [sh, -c]
    args: ["helm dependency build"]
  generate:
    command: [/home/argocd/generate.sh]
  discover:
    fileName: "./kustomization.yaml"
  parameters:
    static:
      - name: version
        title: VERSION
        string: v4.3.0
      - name: name-prefix
        title: NAME PREFIX
      - name: name-suffix
        title: NAME SUFFIX
    dynamic:
      command: [/home/argocd/get-parameters.sh]
  preserveFileMode: true
  provideGitCreds: true
`

// cfgHead starts a configuration whose spec the case writes.
const cfgHead = `apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: p
`

// cfgGen is a valid spec.generate, for cases about other fields.
const cfgGen = cfgHead + `spec:
  generate:
    command: [sh]
`

func stringAnnouncement(name, title, value string) params.Announcement {
	return params.Announcement{Name: name, Title: title, String: value,
		ItemType: params.ItemString, CollectionType: params.CollectionString}
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  *cmpserver.Config
	}{
		{
			name:  "full",
			input: fullConfig,
			want: &cmpserver.Config{
				Source:   "plugin.yaml",
				Name:     "kustomize-helm-proxy-cmp",
				Version:  "v1.0",
				Init:     cmpserver.Command{Command: []string{"sh", "-c"}, Args: []string{"helm dependency build"}},
				Generate: cmpserver.Command{Command: []string{"/home/argocd/generate.sh"}},
				Discover: cmpserver.Discover{FileName: "./kustomization.yaml"},
				Parameters: cmpserver.Parameters{
					Static: []params.Announcement{
						stringAnnouncement("version", "VERSION", "v4.3.0"),
						stringAnnouncement("name-prefix", "NAME PREFIX", ""),
						stringAnnouncement("name-suffix", "NAME SUFFIX", ""),
					},
					Dynamic: cmpserver.Command{Command: []string{"/home/argocd/get-parameters.sh"}},
				},
				PreserveFileMode: true,
				ProvideGitCreds:  true,
			},
		},
		{
			name:  "minimal",
			input: cfgGen,
			want:  &cmpserver.Config{Source: "plugin.yaml", Name: "p", Generate: cmpserver.Command{Command: []string{"sh"}}},
		},
		{
			name: "argo find command",
			input: cfgGen + `  discover:
    find:
      command: [sh, -c]
      args: ["find . -name env.yaml"]
`,
			want: &cmpserver.Config{Source: "plugin.yaml", Name: "p", Generate: cmpserver.Command{Command: []string{"sh"}},
				Discover: cmpserver.Discover{Find: cmpserver.Find{Command: cmpserver.Command{Command: []string{"sh", "-c"}, Args: []string{"find . -name env.yaml"}}}}},
		},
		{
			name: "shadowed discovery and ignored fields",
			input: cfgGen + `  allowConcurrency: true
  lockRepo: false
  discover:
    fileName: a.yaml
    find:
      glob: "**/b.yaml"
      command: [c]
`,
			want: &cmpserver.Config{Source: "plugin.yaml", Name: "p", Generate: cmpserver.Command{Command: []string{"sh"}},
				Discover: cmpserver.Discover{FileName: "a.yaml", Find: cmpserver.Find{Glob: "**/b.yaml", Command: cmpserver.Command{Command: []string{"c"}}}},
				Warnings: []string{
					"plugin.yaml:13: spec.discover.find.glob is ignored: spec.discover.fileName is set, and only the first of fileName, find.glob and find.command is used",
					"plugin.yaml:14: spec.discover.find.command is ignored: spec.discover.fileName is set, and only the first of fileName, find.glob and find.command is used",
					"plugin.yaml:8: spec.allowConcurrency is ignored, as Argo CD ignores it in a sidecar plugin's configuration; remove it",
					"plugin.yaml:9: spec.lockRepo is ignored, as Argo CD ignores it in a sidecar plugin's configuration; remove it",
				}},
		},
		{
			// Argo CD's sidecar never reads apiVersion; its own tests
			// load a plugin.yaml without one.
			name:  "no apiVersion",
			input: "kind: ConfigManagementPlugin\nmetadata:\n  name: name\nspec:\n  generate:\n    command: [command]\n",
			want: &cmpserver.Config{Source: "plugin.yaml", Name: "name", Generate: cmpserver.Command{Command: []string{"command"}},
				Warnings: []string{"plugin.yaml:1: apiVersion is missing; add apiVersion: argoproj.io/v1alpha1 (Argo CD ignores it, as strata does)"}},
		},
		{
			name:  "other apiVersion",
			input: "apiVersion: argoproj.io/v1\nkind: ConfigManagementPlugin\nmetadata:\n  name: name\nspec:\n  generate:\n    command: [command]\n",
			want: &cmpserver.Config{Source: "plugin.yaml", Name: "name", Generate: cmpserver.Command{Command: []string{"command"}},
				Warnings: []string{`plugin.yaml:1: apiVersion is the string "argoproj.io/v1", not argoproj.io/v1alpha1; it is ignored, as Argo CD ignores it: correct it`}},
		},
		{
			// Argo CD matches it with filepath.Glob, where ** is *.
			name:  "fileName with **",
			input: cfgGen + "  discover:\n    fileName: \"**/Chart.yaml\"\n",
			want: &cmpserver.Config{Source: "plugin.yaml", Name: "p", Generate: cmpserver.Command{Command: []string{"sh"}},
				Discover: cmpserver.Discover{FileName: "**/Chart.yaml"},
				Warnings: []string{`plugin.yaml:9: spec.discover.fileName "**/Chart.yaml" uses **, which fileName does not support: it matches like * (one directory level), as in Argo CD; use spec.discover.find.glob for patterns that reach into subdirectories`}},
		},
		{
			// YAML 1.1 booleans, as Argo CD reads them.
			name:  "yes and on",
			input: cfgGen + "  preserveFileMode: yes\n  provideGitCreds: on\n",
			want:  &cmpserver.Config{Source: "plugin.yaml", Name: "p", Generate: cmpserver.Command{Command: []string{"sh"}}, PreserveFileMode: true, ProvideGitCreds: true},
		},
		{
			name:  "empty discover",
			input: cfgGen + "  discover: {}\n",
			want: &cmpserver.Config{Source: "plugin.yaml", Name: "p", Generate: cmpserver.Command{Command: []string{"sh"}},
				Warnings: []string{"plugin.yaml:8: spec.discover sets none of fileName, find.glob and find.command; the plugin is used only for Applications that name it"}},
		},
		{
			name: "repaired announcements",
			input: cfgGen + `  parameters:
    static:
    - name: images
      collectionType: map
      array: [a]
    - name: images
`,
			want: &cmpserver.Config{Source: "plugin.yaml", Name: "p", Generate: cmpserver.Command{Command: []string{"sh"}},
				Parameters: cmpserver.Parameters{Static: []params.Announcement{{Name: "images", ItemType: params.ItemString, CollectionType: params.CollectionMap}}},
				Warnings: []string{
					`plugin.yaml:12: announcement [0] "images": array: ignored, because collectionType is map; remove it, or set collectionType: array`,
					`plugin.yaml:13: announcement [1] "images": the name is already used by announcement [0]; this one is ignored, give it another name`,
				}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cmpserver.ParseConfig([]byte(tc.input), "plugin.yaml")
			if err != nil {
				t.Fatalf("ParseConfig() error: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseConfig() differs (-want +got):\n%s", diff)
			}
		})
	}
}

// configErrorCases are plugin.yaml files that ParseConfig refuses, with the
// exact message.
var configErrorCases = []struct {
	name, input, want string
}{
	{"empty", "", "plugin.yaml: the file is empty; it must hold a plugin configuration: apiVersion: argoproj.io/v1alpha1, kind: ConfigManagementPlugin, metadata.name and spec.generate"},
	{"list", "- a\n", "plugin.yaml:1:1: the file holds a list; it must hold a map: a plugin configuration with apiVersion: argoproj.io/v1alpha1, kind: ConfigManagementPlugin, metadata and spec"},
	{"syntax", "apiVersion: [\n", "plugin.yaml:2: did not find expected node content"},
	// As in Argo CD's own tests: a kind that is not ConfigManagementPlugin,
	// none (whatever apiVersion says), and YAML with a tab after a key.
	{"no kind", "kind:\nmetadata:\n  name: name\n",
		"plugin.yaml:1:1: kind is missing; a plugin configuration starts with apiVersion: argoproj.io/v1alpha1 and kind: ConfigManagementPlugin"},
	{"invalid kind after a tab", "\nkind: invalid\nmetadata:\t\n  name: name\n",
		`plugin.yaml:2:1: kind is the string "invalid"; a plugin configuration has kind: ConfigManagementPlugin`},
	{"apiVersion not a string", "apiVersion: 1\nkind: ConfigManagementPlugin\n",
		"plugin.yaml:1:1: apiVersion must be a string, not the integer 1; write apiVersion: argoproj.io/v1alpha1"},
	// YAML 1.1, as Argo CD reads plugin.yaml: an unquoted yes is a boolean.
	{"unquoted yes in a command", cfgHead + "spec:\n  generate:\n    command: [echo, yes]\n",
		"plugin.yaml:7:21: spec.generate.command[1] must be a string, not the boolean true; quote it"},
	{"wrong kind", "apiVersion: argoproj.io/v1alpha1\nkind: ConfigMap\nspec: {template: {}}\n",
		`plugin.yaml:2:1: kind is the string "ConfigMap"; a plugin configuration has kind: ConfigManagementPlugin`},
	{"no name", "apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\nmetadata:\n  labels: {a: b}\n",
		"plugin.yaml:3:1: metadata.name is missing; name the plugin: the name makes its socket file (<name>.sock) and Applications choose the plugin by it"},
	{"name with slash", "apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\nmetadata:\n  name: a/b\n",
		`plugin.yaml:4:3: metadata.name "a/b" contains a slash; it becomes part of the socket's file name: use letters, digits, '-', '_' and '.'`},
	{"name dot dot", "apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\nmetadata:\n  name: ..\n",
		`plugin.yaml:4:3: metadata.name ".." is not a file name; it becomes part of the socket's file name: use letters, digits, '-', '_' and '.'`},
	{"name number", "apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\nmetadata:\n  name: 42\n",
		"plugin.yaml:4:3: metadata.name must be a string, not the integer 42; quote the value"},
	{"version with space", cfgHead + "spec:\n  version: \"v 1\"\n",
		`plugin.yaml:6:3: spec.version "v 1" contains the character ' '; it becomes part of the socket's file name: use letters, digits, '-', '_' and '.'`},
	{"version number", cfgHead + "spec:\n  version: 1.0\n",
		"plugin.yaml:6:3: spec.version must be a string, not the number 1; quote the value"},
	{"socket name too long", "apiVersion: argoproj.io/v1alpha1\nkind: ConfigManagementPlugin\nmetadata:\n  name: " + strings.Repeat("n", 56) + "\nspec:\n  version: v1.0\n",
		`plugin.yaml:4:3: metadata.name and spec.version make the socket file name "` + strings.Repeat("n", 56) + `-v1.0.sock", 66 bytes long; it may be at most 64 bytes, for the socket's path must fit in 108 bytes: shorten the name or the version`},
	{"no spec", cfgHead,
		`plugin.yaml:1:1: spec.generate.command is missing; set the command that prints the manifests, such as command: [sh, -c] and args: ["kustomize build ."]`},
	{"no generate", cfgHead + "spec:\n  version: v1\n",
		`plugin.yaml:5:1: spec.generate.command is missing; set the command that prints the manifests, such as command: [sh, -c] and args: ["kustomize build ."]`},
	{"generate without command", cfgHead + "spec:\n  generate:\n    args: [x]\n",
		`plugin.yaml:6:3: spec.generate.command is missing; set the command that prints the manifests, such as command: [sh, -c] and args: ["kustomize build ."]`},
	{"command line as a string", cfgHead + "spec:\n  generate:\n    command: \"kustomize build .\"\n",
		`plugin.yaml:7:5: spec.generate.command must be a list of strings, such as [sh, -c, "kustomize build ."], not the string "kustomize build .": the command is run directly, never through a shell`},
	{"number argument", cfgHead + "spec:\n  generate:\n    command: [sh, -c]\n    args: [--replicas, 3]\n",
		"plugin.yaml:8:24: spec.generate.args[1] must be a string, not the integer 3; quote it"},
	{"empty program", cfgHead + "spec:\n  generate:\n    command: [\"\", -c]\n",
		"plugin.yaml:7:15: spec.generate.command[0] is empty; it must name the program to run"},
	{"NUL in argument", cfgHead + "spec:\n  generate:\n    command: [sh, \"-c\\0\"]\n",
		"plugin.yaml:7:19: spec.generate.command[1] contains a NUL character, which no command argument can hold; remove it"},
	{"unknown spec field", cfgGen + "  timeout: 30s\n",
		`plugin.yaml:8:3: unknown field "spec.timeout"; known fields here: allowConcurrency, discover, generate, init, lockRepo, parameters, preserveFileMode, provideGitCreds, version`},
	{"unknown command field", cfgGen + "    env: [A=b]\n",
		`plugin.yaml:8:5: unknown field "spec.generate.env"; known fields here: args, command`},
	{"unknown top-level field", cfgGen + "status: {}\n",
		`plugin.yaml:8:1: unknown field "status"; known fields here: apiVersion, kind, metadata, spec`},
	{"wrong type", cfgGen + "  preserveFileMode: \"yes\"\n",
		"plugin.yaml:8:3: spec.preserveFileMode: expected a boolean, got a JSON string"},
	{"init without command", cfgGen + "  init: {}\n",
		"plugin.yaml:8:3: spec.init.command is missing; set the command to run, or remove spec.init"},
	{"dynamic without command", cfgGen + "  parameters:\n    dynamic:\n      args: [x]\n",
		"plugin.yaml:9:5: spec.parameters.dynamic.command is missing; set the command to run, or remove spec.parameters.dynamic"},
	{"parameters command as in the proposal's example 1", cfgGen + "  parameters:\n    command: [sh, -c, \"echo '[]'\"]\n",
		`plugin.yaml:9:5: unknown field "spec.parameters.command": the command that announces parameters goes under spec.parameters.dynamic (dynamic: {command: [...], args: [...]})`},
	{"static announcement without name", cfgGen + "  parameters:\n    static:\n    - title: Values\n",
		"plugin.yaml:10: announcement [0]: name: the name is missing or empty; every announcement needs one, such as \"name\": \"values-files\""},
	{"fileName outside", cfgGen + "  discover:\n    fileName: \"a/../../x.yaml\"\n",
		`plugin.yaml:9:5: spec.discover.fileName "a/../../x.yaml" reaches outside the application's directory; patterns are relative to it`},
	{"fileName bad pattern", cfgGen + "  discover:\n    fileName: \"[x\"\n",
		`plugin.yaml:9:5: spec.discover.fileName "[x" is not a valid glob pattern (syntax error in pattern); see https://pkg.go.dev/path/filepath#Match`},
	{"glob bad pattern", cfgGen + "  discover:\n    find:\n      glob: \"{a\"\n",
		`plugin.yaml:10:7: spec.discover.find.glob "{a" is not a valid glob pattern; see https://github.com/bmatcuk/doublestar#patterns`},
	{"glob outside", cfgGen + "  discover:\n    find:\n      glob: \"../**\"\n",
		`plugin.yaml:10:7: spec.discover.find.glob "../**" reaches outside the application's directory; patterns are relative to it`},
	{"find command nested", cfgGen + "  discover:\n    find:\n      command:\n        command: [x]\n",
		`plugin.yaml:10:7: spec.discover.find.command must be a list of strings, such as [sh, -c, "kustomize build ."], not a map: the command is run directly, never through a shell`},
	{"find args without command", cfgGen + "  discover:\n    find:\n      args: [x]\n",
		"plugin.yaml:10:7: spec.discover.find.args is set but spec.discover.find.command is not; set the command, or remove the args"},
	{"two documents", cfgGen + "---\na: 1\n", "plugin.yaml:9: a second YAML document starts here; this input holds exactly one document"},
	{"duplicate key", cfgGen + "metadata: {}\n", `plugin.yaml:8:1: duplicate key "metadata" (first defined at line 3); remove one of them`},
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range configErrorCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cmpserver.ParseConfig([]byte(tc.input), "plugin.yaml")
			if err == nil {
				t.Fatalf("ParseConfig() = %+v, want error %q", got, tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("ParseConfig() error\n got: %s\nwant: %s", err, tc.want)
			}
			checkConfigError(t, err)
		})
	}
}

// checkConfigError checks that err is one of ParseConfig's typed errors.
func checkConfigError(t *testing.T, err error) {
	t.Helper()
	var le *document.LoadError
	var pe *params.Error
	switch {
	case errors.As(err, &le):
		if le.Source == "" {
			t.Errorf("error %q has no source", err)
		}
	case errors.As(err, &pe):
		if pe.Source == "" {
			t.Errorf("error %q has no source", err)
		}
	default:
		t.Errorf("error %v is %T, want *document.LoadError or *params.Error", err, err)
	}
}

func TestParseConfigErrorKinds(t *testing.T) {
	_, err := cmpserver.ParseConfig([]byte(cfgHead), "plugin.yaml")
	if !errors.Is(err, cmpserver.ErrInvalidConfig) {
		t.Errorf("missing generate: error %v does not match ErrInvalidConfig", err)
	}
	_, err = cmpserver.ParseConfig([]byte(cfgGen+"  x: 1\n"), "plugin.yaml")
	if !errors.Is(err, document.ErrUnknownField) {
		t.Errorf("unknown field: error %v does not match document.ErrUnknownField", err)
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plugin.yaml")
	if err := os.WriteFile(path, []byte(fullConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := cmpserver.LoadConfig(path)
	if err != nil {
		t.Fatalf("LoadConfig() error: %v", err)
	}
	if cfg.Source != path || cfg.Name != "kustomize-helm-proxy-cmp" {
		t.Errorf("LoadConfig() = source %q name %q, want %q and kustomize-helm-proxy-cmp", cfg.Source, cfg.Name, path)
	}
	info := cfg.Info()
	want := cmpserver.Info{Name: "kustomize-helm-proxy-cmp", Version: "v1.0", DiscoveryConfigured: true, ProvideGitCreds: true, PreserveFileMode: true}
	if info != want {
		t.Errorf("Info() = %+v, want %+v", info, want)
	}
	if got := info.SocketName(); got != "kustomize-helm-proxy-cmp-v1.0.sock" {
		t.Errorf("SocketName() = %q", got)
	}

	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(fullConfig+"#"+strings.Repeat("x", cmpserver.MaxConfigBytes)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = cmpserver.LoadConfig(big)
	if !errors.Is(err, document.ErrTooLarge) {
		t.Errorf("LoadConfig(big) error = %v, want document.ErrTooLarge", err)
	}
	if _, err := cmpserver.LoadConfig(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadConfig(missing) error = %v, want os.ErrNotExist", err)
	}
}
