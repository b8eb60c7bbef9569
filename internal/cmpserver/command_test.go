package cmpserver_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/hookexec"
	"github.com/strata-dev/strata/internal/params"
)

// newCommandPlugin parses a plugin.yaml made of cfgHead and spec, and
// returns its plugin, with a logger writing to log (if not nil).
func newCommandPlugin(t *testing.T, spec string, opts cmpserver.CommandOptions, log *syncBuffer) *cmpserver.CommandPlugin {
	t.Helper()
	cfg, err := cmpserver.ParseConfig([]byte(cfgHead+"spec:\n"+spec), "plugin.yaml")
	if err != nil {
		t.Fatalf("ParseConfig() error: %v", err)
	}
	if opts.Env == nil {
		opts.Env = []string{"PATH=" + os.Getenv("PATH")}
	}
	if log != nil {
		opts.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return cmpserver.NewCommandPlugin(cfg, opts)
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newApp returns a request for an application directory holding files
// (path to content; a path ending in "/" is a directory).
func newApp(t *testing.T, files map[string]string) *params.Request {
	t.Helper()
	root := t.TempDir()
	app := filepath.Join(root, "apps", "demo")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(app, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &params.Request{
		AppName:  "demo",
		RepoRoot: root,
		AppPath:  app,
		Env: []string{
			"ARGOCD_APP_NAME=demo",
			"ARGOCD_APP_NAMESPACE=apps",
			"ARGOCD_APP_REVISION=0123456789abcdef",
			"KUBE_VERSION=1.31.0",
			"KUBE_API_VERSIONS=v1,apps/v1",
			"ARGOCD_ENV_FOO=bar",
		},
	}
}

func strPtr(s string) *string { return &s }

// TestCommandPluginEnvironment checks the variables a command gets: the
// sidecar's, the request's, the parameters', with their precedence, and
// that the process gets exactly those.
func TestCommandPluginEnvironment(t *testing.T) {
	req := newApp(t, nil)
	// In the repository: the only place, with the request's temporary
	// directory, the sandboxed command may write.
	out := filepath.Join(req.RepoRoot, "environ")
	p := newCommandPlugin(t, `  generate:
    command: [sh, -c]
    args: ['cat /proc/$$/environ > "$OUT"; echo "{apiVersion: v1, kind: ConfigMap}"']
`, cmpserver.CommandOptions{Env: []string{
		"PATH=" + os.Getenv("PATH"),
		"OUT=" + out,
		"HOME=/home/argocd",
		"PARAM_FROM_SIDECAR=sidecar", // a build-environment variable: it wins over the parameter
		"ARGOCD_APP_NAME=overridden by the request",
	}}, nil)
	req.Env = append(req.Env,
		"ARGOCD_APP_PARAMETERS=[{\"name\":\"stale\"}]", // the repo-server's own encoding: replaced
		"PARAM_STALE=from the repo-server",             // dropped
	)
	req.Parameters = []params.Parameter{
		{Name: "values-files", Array: []string{"a.yaml", "b.yaml"}},
		{Name: "helm-parameters", Map: map[string]string{"image.tag": "0.1"}},
		{Name: "from-sidecar", String: strPtr("parameter")},
		{Name: "argocd-app-name", String: strPtr("a parameter named like a build variable")},
		{Name: "replicas", String: strPtr("1")},
		{Name: "REPLICAS", String: strPtr("2")}, // same variable: the later one wins
	}

	want := []string{
		"PATH=" + os.Getenv("PATH"),
		"OUT=" + out,
		"HOME=/home/argocd",
		"PARAM_FROM_SIDECAR=sidecar",
		"ARGOCD_APP_NAME=demo",
		"ARGOCD_APP_NAMESPACE=apps",
		"ARGOCD_APP_REVISION=0123456789abcdef",
		"KUBE_VERSION=1.31.0",
		"KUBE_API_VERSIONS=v1,apps/v1",
		"ARGOCD_ENV_FOO=bar",
		`ARGOCD_APP_PARAMETERS=[{"name":"values-files","array":["a.yaml","b.yaml"]},{"name":"helm-parameters","map":{"image.tag":"0.1"}},{"name":"from-sidecar","string":"parameter"},{"name":"argocd-app-name","string":"a parameter named like a build variable"},{"name":"replicas","string":"1"},{"name":"REPLICAS","string":"2"}]`,
		"PARAM_ARGOCD_APP_NAME=a parameter named like a build variable",
		"PARAM_HELM_PARAMETERS_IMAGE_TAG=0.1",
		"PARAM_REPLICAS=2",
		"PARAM_VALUES_FILES_0=a.yaml",
		"PARAM_VALUES_FILES_1=b.yaml",
	}
	if diff := cmp.Diff(want, p.Environ(req)); diff != "" {
		t.Errorf("Environ() differs (-want +got):\n%s", diff)
	}

	got, err := p.Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("Generate() error: %v", err)
	}
	if diff := cmp.Diff([]string{`{"apiVersion":"v1","kind":"ConfigMap"}`}, got); diff != "" {
		t.Errorf("Generate() differs (-want +got):\n%s", diff)
	}
	environ, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	gotEnv := strings.Split(strings.TrimSuffix(string(environ), "\x00"), "\x00")
	if diff := cmp.Diff(want, gotEnv); diff != "" {
		t.Errorf("the command's environment differs (-want +got):\n%s", diff)
	}
}

func TestCommandPluginNoParameters(t *testing.T) {
	p := newCommandPlugin(t, "  generate:\n    command: [sh]\n", cmpserver.CommandOptions{Env: []string{"PATH=/bin"}}, nil)
	req := newApp(t, nil)
	env := p.Environ(req)
	if !slices.Contains(env, "ARGOCD_APP_PARAMETERS=null") {
		t.Errorf("Environ() = %q, want ARGOCD_APP_PARAMETERS=null", env)
	}
}

// TestCommandPluginEnvironLikeArgoCD: what Argo CD's sidecar does with the
// request's environment entries, each case with the entries sent and the
// variables the commands get (the sidecar's own PATH and HOME left out).
func TestCommandPluginEnvironLikeArgoCD(t *testing.T) {
	p := newCommandPlugin(t, "  generate:\n    command: [sh]\n", cmpserver.CommandOptions{Env: []string{"PATH=/bin", "HOME=/home/argocd", "SIDECAR=own"}}, nil)
	tests := []struct {
		name   string
		env    []string
		ps     []params.Parameter
		psJSON string
		want   []string
	}{
		{
			name: "empty values are left out",
			env:  []string{"ARGOCD_APP_NAME=demo", "ARGOCD_APP_NAMESPACE=", "ARGOCD_ENV_EMPTY=", "SIDECAR="},
			want: []string{"SIDECAR=own", "ARGOCD_APP_NAME=demo", "ARGOCD_APP_PARAMETERS=null"},
		},
		{
			name: "a parameter set to the empty string gives no variable",
			ps:   []params.Parameter{{Name: "a", String: strPtr("")}, {Name: "l", Array: []string{"", "x"}}, {Name: "m", Map: map[string]string{"k": ""}}},
			want: []string{"SIDECAR=own", `ARGOCD_APP_PARAMETERS=[{"name":"a","string":""},{"name":"l","array":["","x"]},{"name":"m","map":{"k":""}}]`, "PARAM_L_1=x"},
		},
		{
			name:   "ARGOCD_APP_PARAMETERS as the repo-server sent it",
			ps:     []params.Parameter{{Name: "x", String: strPtr("<1>")}},
			psJSON: `[{"name":"x","string":"\u003c1\u003e"}]`,
			want:   []string{"SIDECAR=own", `ARGOCD_APP_PARAMETERS=[{"name":"x","string":"\u003c1\u003e"}]`, "PARAM_X=<1>"},
		},
		{
			name: "no ARGOCD_APP_PARAMETERS sent, none set",
			env:  []string{"ARGOCD_APP_NAME=demo"},
			want: []string{"SIDECAR=own", "ARGOCD_APP_NAME=demo"},
		},
		{
			name: "a value that is only white space is kept",
			env:  []string{"ARGOCD_ENV_SPACE= "},
			want: []string{"SIDECAR=own", "ARGOCD_ENV_SPACE= ", "ARGOCD_APP_PARAMETERS=null"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := &params.Request{Env: tc.env, Parameters: tc.ps, ParametersJSON: tc.psJSON, NoParametersVar: strings.HasPrefix(tc.name, "no ARGOCD_APP_PARAMETERS")}
			var got []string
			for _, kv := range p.Environ(req) {
				if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HOME=") {
					got = append(got, kv)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Environ() differs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCommandPluginErrorsLikeArgoCD: a failing command's error names it as
// Argo CD's sidecar does (an argument holding white space quoted, an empty
// one as ""), and a repository's program left without its mode says why.
func TestCommandPluginErrorsLikeArgoCD(t *testing.T) {
	tests := []struct {
		name, spec string
		files      map[string]string
		want       string
	}{
		{"plain arguments", "  generate:\n    command: [\"false\"]\n    args: [--x=1]\n", nil, "`false --x=1` failed exit status 1"},
		{"an empty argument", "  generate:\n    command: [sh, -c, 'exit 3', '']\n", nil, "`sh -c \"exit 3\" \"\"` failed exit status 3"},
		{"a script of several lines", "  generate:\n    command: [sh, -c]\n    args:\n    - |\n      echo \"bad\tthing\" >&2\n      exit 4\n", nil,
			"`sh -c \"echo \\\"bad\\tthing\\\" >&2\\nexit 4\\n\"` failed exit status 4: bad\tthing"},
		{"a repository script without preserveFileMode", "  generate:\n    command: [./gen.sh]\n", map[string]string{"gen.sh": "#!/bin/sh\n"},
			"is not an executable file (mode -rw-r--r--); make it executable or run it through its interpreter (the repository's files are unpacked with mode 0644 unless the plugin.yaml sets spec.preserveFileMode: true, as in Argo CD)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newCommandPlugin(t, tc.spec, cmpserver.CommandOptions{NoSandbox: true}, nil)
			req := newApp(t, tc.files)
			_, err := p.Generate(context.Background(), req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Generate() error = %v, want one holding %q", err, tc.want)
			}
		})
	}
}

// TestCommandPluginGenerate runs init then generate, in the application's
// directory, and reads YAML and JSON output.
func TestCommandPluginGenerate(t *testing.T) {
	p := newCommandPlugin(t, `  init:
    command: [sh, -c]
    args: ["echo initialised > init.txt"]
  generate:
    command: [sh, -c]
    args:
      - |
        cat <<EOF
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: $ARGOCD_APP_NAME-$PARAM_SUFFIX
        data:
          init: $(cat init.txt)
          dir: $(basename "$PWD")
          replicas: 3
        ---
        {"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "v1", "kind": "Secret"}]}
        EOF
        echo "progress goes to stderr" >&2
`, cmpserver.CommandOptions{}, nil)
	req := newApp(t, nil)
	req.Parameters = []params.Parameter{{Name: "suffix", String: strPtr("cm")}}
	got, err := p.Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("Generate() error: %v", err)
	}
	want := []string{
		`{"apiVersion":"v1","data":{"dir":"demo","init":"initialised","replicas":3},"kind":"ConfigMap","metadata":{"name":"demo-cm"}}`,
		`{"apiVersion":"v1","kind":"Secret"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Generate() differs (-want +got):\n%s", diff)
	}
}

func TestCommandPluginGenerateErrors(t *testing.T) {
	tests := []struct {
		name string
		spec string
		opts cmpserver.CommandOptions
		want string
		is   error
	}{
		{
			name: "generate fails",
			spec: "  generate:\n    command: [sh, -c]\n    args: [\"echo 'Error: chart not found' >&2; exit 1\"]\n",
			// As Argo CD writes the command: an argument with spaces quoted.
			want: "`sh -c \"echo 'Error: chart not found' >&2; exit 1\"` failed exit status 1: Error: chart not found",
		},
		{
			name: "init fails",
			spec: "  init:\n    command: [sh, -c, \"echo no credentials >&2; exit 3\"]\n  generate:\n    command: [\"true\"]\n",
			want: "`sh -c \"echo no credentials >&2; exit 3\"` failed exit status 3: no credentials",
		},
		{
			name: "not YAML",
			spec: "  generate:\n    command: [sh, -c]\n    args: [\"echo 'Fetching chart...'; echo 'apiVersion: v1'\"]\n",
			want: "stdout of `sh -c echo 'Fetching chart...'; echo 'apiVersion: v1'`:2: mapping values are not allowed in this context: " +
				`the output is not YAML or JSON manifests; it starts with "Fetching chart...\napiVersion: v1\n": print only manifests to stdout, and anything else to stderr`,
		},
		{
			name: "missing kind",
			spec: "  generate:\n    command: [sh, -c]\n    args: [\"echo 'apiVersion: v1'\"]\n",
			want: "stdout of `sh -c echo 'apiVersion: v1'`:1: document 1 has no kind; every manifest needs apiVersion and kind",
			is:   cmpserver.ErrInvalidManifest,
		},
		{
			name: "not found",
			spec: "  generate:\n    command: [no-such-program-strata]\n",
			is:   hookexec.ErrNotFound,
		},
		{
			name: "output too large",
			spec: "  generate:\n    command: [sh, -c, \"yes 'a: b'\"]\n",
			opts: cmpserver.CommandOptions{MaxOutput: 1 << 10},
			is:   hookexec.ErrOutputTooLarge,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newCommandPlugin(t, tc.spec, tc.opts, nil)
			got, err := p.Generate(context.Background(), newApp(t, nil))
			if err == nil {
				t.Fatalf("Generate() = %q, want an error", got)
			}
			if tc.want != "" && err.Error() != tc.want {
				t.Errorf("Generate() error\n got: %s\nwant: %s", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("Generate() error %v does not match %v", err, tc.is)
			}
		})
	}
}

func TestCommandPluginTimeout(t *testing.T) {
	p := newCommandPlugin(t, "  generate:\n    command: [sleep, \"10\"]\n",
		cmpserver.CommandOptions{Timeout: 200 * time.Millisecond, Grace: 100 * time.Millisecond}, nil)
	start := time.Now()
	_, err := p.Generate(context.Background(), newApp(t, nil))
	if !errors.Is(err, hookexec.ErrTimeout) {
		t.Fatalf("Generate() error = %v, want hookexec.ErrTimeout", err)
	}
	if !strings.Contains(err.Error(), "`sleep 10` timed out after") {
		t.Errorf("Generate() error = %q, want it to say the command timed out", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Generate() took %v after a timeout of 200ms", d)
	}

	// The request's deadline bounds the command too.
	p = newCommandPlugin(t, "  generate:\n    command: [sleep, \"10\"]\n", cmpserver.CommandOptions{Grace: -1}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = p.Generate(ctx, newApp(t, nil))
	if !errors.Is(err, hookexec.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Generate() error = %v, want hookexec.ErrTimeout and context.DeadlineExceeded", err)
	}
}

// TestCommandPluginParametersTooLarge: parameters that do not fit in the
// environment give a message saying so, not just E2BIG.
func TestCommandPluginParametersTooLarge(t *testing.T) {
	p := newCommandPlugin(t, "  generate:\n    command: [\"true\"]\n", cmpserver.CommandOptions{}, nil)
	req := newApp(t, nil)
	req.Parameters = []params.Parameter{{Name: "values", String: strPtr(strings.Repeat("x", 200<<10))}}
	_, err := p.Generate(context.Background(), req)
	if !errors.Is(err, syscall.E2BIG) {
		t.Fatalf("Generate() error = %v, want E2BIG", err)
	}
	for _, want := range []string{
		"`true` could not start: the parameters are too large for the environment",
		"the variable ARGOCD_APP_PARAMETERS is 204854 bytes long, and Linux allows one at most 131072",
		"Set fewer or smaller parameters",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Generate() error = %q, want it to contain %q", err, want)
		}
	}
}

func TestCommandPluginMatch(t *testing.T) {
	files := map[string]string{
		"kustomization.yaml":         "resources: []\n",
		"charts/web/Chart.yaml":      "name: web\n",
		"charts/web/templates/a.txt": "",
		"empty/":                     "",
	}
	tests := []struct {
		name     string
		discover string
		want     bool
		method   string
	}{
		{"fileName", "    fileName: ./kustomization.yaml\n", true, "fileName"},
		{"fileName glob", "    fileName: \"*.yaml\"\n", true, "fileName"},
		{"fileName in a subdirectory", "    fileName: \"charts/*/Chart.yaml\"\n", true, "fileName"},
		{"fileName no match", "    fileName: Chart.yaml\n", false, "fileName"},
		{"fileName rooted", "    fileName: /kustomization.yaml\n", true, "fileName"},
		{"find.glob", "    find:\n      glob: \"**/Chart.yaml\"\n", true, "find.glob"},
		{"find.glob at the top", "    find:\n      glob: \"**/kustomization.yaml\"\n", true, "find.glob"},
		{"find.glob no match", "    find:\n      glob: \"**/values.yaml\"\n", false, "find.glob"},
		{"find.command", "    find:\n      command: [sh, -c, \"find . -name Chart.yaml\"]\n", true, "find.command"},
		{"find.command with args", "    find:\n      command: [sh, -c]\n      args: [\"test -f kustomization.yaml && echo yes\"]\n", true, "find.command"},
		{"find.command prints nothing", "    find:\n      command: [sh, -c, \"find . -name values.yaml\"]\n", false, "find.command"},
		// As Argo CD reads it: one final line break is dropped, anything
		// left is a match, white space included.
		{"find.command prints a line break", "    find:\n      command: [echo]\n", false, "find.command"},
		{"find.command prints a space", "    find:\n      command: [printf, \" \"]\n", true, "find.command"},
		{"find.command prints two line breaks", "    find:\n      command: [printf, \"\\n\\n\"]\n", true, "find.command"},
		{"fileName with ** matches like *", "    fileName: \"**/Chart.yaml\"\n", false, "fileName"},
		{"fileName with ** one level down", "    fileName: \"**/*/Chart.yaml\"\n", true, "fileName"},
		{"find.command fails", "    find:\n      command: [sh, -c, \"echo found; echo broken >&2; exit 2\"]\n", false, "find.command"},
		{"find.command sees the request", "    find:\n      command: [sh, -c, \"test \\\"$ARGOCD_ENV_FOO\\\" = bar && echo yes\"]\n", true, "find.command"},
		// Only the first rule set counts: fileName, then find.glob, then find.command.
		{"fileName before find.glob", "    fileName: values.yaml\n    find:\n      glob: \"**/Chart.yaml\"\n", false, "fileName"},
		{"fileName before find.command", "    fileName: values.yaml\n    find:\n      command: [echo, \"yes\"]\n", false, "fileName"},
		{"find.glob before find.command", "    find:\n      glob: \"**/values.yaml\"\n      command: [echo, \"yes\"]\n", false, "find.glob"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var log syncBuffer
			p := newCommandPlugin(t, "  generate:\n    command: [\"true\"]\n  discover:\n"+tc.discover, cmpserver.CommandOptions{}, &log)
			if !p.Info().DiscoveryConfigured {
				t.Error("Info().DiscoveryConfigured = false, want true")
			}
			got, err := p.Match(context.Background(), newApp(t, files))
			if err != nil {
				t.Fatalf("Match() error: %v", err)
			}
			if got != tc.want {
				t.Errorf("Match() = %v, want %v", got, tc.want)
			}
			if want := "method=" + tc.method + " "; !strings.Contains(log.String(), want) {
				t.Errorf("log %q does not name the method (%s)", log.String(), want)
			}
		})
	}
}

func TestCommandPluginMatchWithoutDiscovery(t *testing.T) {
	p := newCommandPlugin(t, "  generate:\n    command: [\"true\"]\n", cmpserver.CommandOptions{}, nil)
	if p.Info().DiscoveryConfigured {
		t.Error("Info().DiscoveryConfigured = true, want false")
	}
	got, err := p.Match(context.Background(), newApp(t, map[string]string{"a.yaml": ""}))
	if got || err != nil {
		t.Errorf("Match() = %v, %v; want false, nil", got, err)
	}
}

// TestCommandPluginMatchStaysInside: a symbolic link out of the
// application's directory does not make a pattern match.
func TestCommandPluginMatchStaysInside(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	req := newApp(t, nil)
	if err := os.Symlink(outside, filepath.Join(req.AppPath, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(req.AppPath, "file.yaml")); err != nil {
		t.Fatal(err)
	}
	// A link inside the directory is followed.
	if err := os.Mkdir(filepath.Join(req.AppPath, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(req.AppPath, "real", "x.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(req.AppPath, "inner")); err != nil {
		t.Fatal(err)
	}
	p := newCommandPlugin(t, "  generate:\n    command: [\"true\"]\n  discover:\n    fileName: \"inner/*.yaml\"\n", cmpserver.CommandOptions{}, nil)
	if got, err := p.Match(context.Background(), req); !got || err != nil {
		t.Errorf("Match() through a link inside = %v, %v; want true", got, err)
	}
	// So is a link to elsewhere in the repository, as in Argo CD (by
	// fileName; find.glob follows no link).
	sibling := filepath.Join(req.RepoRoot, "apps", "other")
	if err := os.MkdirAll(sibling, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sibling, "y.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../other", filepath.Join(req.AppPath, "sibling")); err != nil {
		t.Fatal(err)
	}
	p = newCommandPlugin(t, "  generate:\n    command: [\"true\"]\n  discover:\n    fileName: \"sibling/*.yaml\"\n", cmpserver.CommandOptions{}, nil)
	if got, err := p.Match(context.Background(), req); !got || err != nil {
		t.Errorf("Match() through a link to elsewhere in the repository = %v, %v; want true", got, err)
	}

	for _, discover := range []string{
		"    fileName: link/secret.yaml\n",
		"    fileName: \"link/*.yaml\"\n",
		"    fileName: file.yaml\n",
		"    find:\n      glob: \"**/secret.yaml\"\n",
		"    find:\n      glob: \"link/*.yaml\"\n",
	} {
		p := newCommandPlugin(t, "  generate:\n    command: [\"true\"]\n  discover:\n"+discover, cmpserver.CommandOptions{}, nil)
		got, err := p.Match(context.Background(), req)
		if got {
			t.Errorf("Match() with %q = true, %v; want false", discover, err)
		}
	}
}

func TestCommandPluginAnnounce(t *testing.T) {
	var log syncBuffer
	p := newCommandPlugin(t, `  generate:
    command: ["true"]
  parameters:
    static:
    - name: values-files
      title: VALUES FILES
      collectionType: array
    dynamic:
      command: [sh, -c]
      args:
        - |
          echo '[{"name": "helm-parameters", "collectionType": "map", "map": {"image.tag": "'"$ARGOCD_APP_NAME"'"}},
                 {"name": "values-files", "title": "from the command"}]'
`, cmpserver.CommandOptions{}, &log)
	got, err := p.Announce(context.Background(), newApp(t, nil))
	if err != nil {
		t.Fatalf("Announce() error: %v", err)
	}
	want := []params.Announcement{
		{Name: "values-files", Title: "VALUES FILES", ItemType: params.ItemString, CollectionType: params.CollectionArray},
		{Name: "helm-parameters", ItemType: params.ItemString, CollectionType: params.CollectionMap, Map: map[string]string{"image.tag": "demo"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Announce() differs (-want +got):\n%s", diff)
	}
	if !strings.Contains(log.String(), "the dynamic announcement [1] is ignored: static announcement [0] has the same name and wins") {
		t.Errorf("log %q does not warn about the clash", log.String())
	}

	static := newCommandPlugin(t, "  generate:\n    command: [\"true\"]\n  parameters:\n    static:\n    - name: a\n", cmpserver.CommandOptions{}, nil)
	got, err = static.Announce(context.Background(), newApp(t, nil))
	if err != nil || len(got) != 1 || got[0].Name != "a" {
		t.Errorf("Announce() without dynamic = %+v, %v; want [a]", got, err)
	}
}

func TestCommandPluginAnnounceErrors(t *testing.T) {
	tests := []struct {
		name, args, want string
	}{
		{"fails", `"echo boom >&2; exit 4"`, "announcing parameters (spec.parameters.dynamic): `sh -c \"echo boom >&2; exit 4\"` failed exit status 4: boom"},
		{"not a list", `"echo '{\"name\": \"a\"}'"`, "stdout of `sh -c echo '{\"name\": \"a\"}'`:1: the announcements must be a list, not a map; put the entry in a list: [{...}]"},
		{"no name", `"echo '[{\"title\": \"a\"}]'"`, "stdout of `sh -c echo '[{\"title\": \"a\"}]'`:1: announcement [0]: name: the name is missing or empty; every announcement needs one, such as \"name\": \"values-files\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newCommandPlugin(t, "  generate:\n    command: [\"true\"]\n  parameters:\n    dynamic:\n      command: [sh, -c, "+tc.args+"]\n", cmpserver.CommandOptions{}, nil)
			_, err := p.Announce(context.Background(), newApp(t, nil))
			if err == nil || err.Error() != tc.want {
				t.Errorf("Announce() error\n got: %v\nwant: %s", err, tc.want)
			}
		})
	}
}

// TestCommandPluginConcurrent runs a plugin's methods at once (for -race).
func TestCommandPluginConcurrent(t *testing.T) {
	p := newCommandPlugin(t, `  generate:
    command: [sh, -c, "echo \"{apiVersion: v1, kind: ConfigMap, metadata: {name: $ARGOCD_APP_NAME}}\""]
  discover:
    find:
      glob: "*.yaml"
  parameters:
    dynamic:
      command: [echo, '[{"name": "a"}]']
`, cmpserver.CommandOptions{}, nil)
	req := newApp(t, map[string]string{"a.yaml": ""})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := p.Generate(context.Background(), req); err != nil {
				t.Errorf("Generate() error: %v", err)
			}
			if ok, err := p.Match(context.Background(), req); !ok || err != nil {
				t.Errorf("Match() = %v, %v", ok, err)
			}
			if _, err := p.Announce(context.Background(), req); err != nil {
				t.Errorf("Announce() error: %v", err)
			}
		})
	}
	wg.Wait()
}

// TestCommandPluginRequestPath: a PATH in the request's environment does
// not choose the binary; the sidecar's own PATH does, as in Argo CD.
func TestCommandPluginRequestPath(t *testing.T) {
	req := newApp(t, nil)
	evil := filepath.Join(req.RepoRoot, "bin")
	if err := os.MkdirAll(evil, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho '{apiVersion: v1, kind: Secret, metadata: {name: from-the-request}}'\n"
	if err := os.WriteFile(filepath.Join(evil, "cat"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(req.AppPath, "m.yaml"), []byte("{apiVersion: v1, kind: ConfigMap}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := newCommandPlugin(t, "  generate:\n    command: [cat]\n    args: [m.yaml]\n", cmpserver.CommandOptions{NoSandbox: true}, nil)
	req.Env = append(req.Env, "PATH="+evil)
	got, err := p.Generate(context.Background(), req)
	if err != nil {
		t.Fatalf("Generate() error: %v", err)
	}
	if diff := cmp.Diff([]string{`{"apiVersion":"v1","kind":"ConfigMap"}`}, got); diff != "" {
		t.Errorf("Generate() with PATH=%s in the request differs (-want +got):\n%s", evil, diff)
	}
}
