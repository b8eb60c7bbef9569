package generator_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/generator"
)

const header = "apiVersion: strata.dev/v1alpha1\nkind: GeneratorConfig\n"

func TestParseConfig(t *testing.T) {
	cfg, err := generator.ParseConfig([]byte(header+`listen: 0.0.0.0:8080
metricsListen: :9090
tls: {certFile: /etc/tls/tls.crt, keyFile: tls.key}
readTimeout: 5s
shutdownGrace: 10
plugins:
- name: clusters
  token: {file: token}
  requestTimeout: 20
  cache: {ttl: 1m, maxEntries: 10}
  backend:
    command:
      argv: [./clusters.sh, --env, prod]
      env: {B: "2", A: "1"}
      passEnv: [KUBECONFIG]
      timeout: 15s
      maxOutputBytes: 4096
- name: static
  path: /
  token: {env: STATIC_TOKEN}
  concurrency: 0
  maxQueue: 0
  cache: {collapse: false}
  backend:
    static: {files: ["data/**/*.yaml"]}
`), "gen.yaml", "/conf")
	if err != nil {
		t.Fatal(err)
	}
	want := &generator.Config{
		Source: "gen.yaml", Listen: "0.0.0.0:8080", MetricsListen: ":9090",
		TLS:             &generator.TLSConfig{CertFile: "/etc/tls/tls.crt", KeyFile: "/conf/tls.key"},
		MaxRequestBytes: generator.DefaultMaxRequestBytes,
		ReadTimeout:     5 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: generator.DefaultIdleTimeout,
		ShutdownGrace: 10 * time.Second, ReloadInterval: generator.DefaultReloadInterval,
		Plugins: []*generator.PluginConfig{
			{
				Name: "clusters", Path: "/clusters", Token: &generator.TokenSource{File: "/conf/token"},
				RequestTimeout: 20 * time.Second, Concurrency: 2 * runtime.NumCPU(), MaxQueue: generator.DefaultMaxQueue,
				Cache: generator.CacheConfig{TTL: time.Minute, MaxEntries: 10, Collapse: true},
				Backend: &generator.CommandBackend{Argv: []string{"./clusters.sh", "--env", "prod"}, Dir: "/conf",
					Env: []string{"A=1", "B=2"}, PassEnv: []string{"KUBECONFIG"}, Timeout: 15 * time.Second, MaxOutputBytes: 4096},
			},
			{
				Name: "static", Path: "", Token: &generator.TokenSource{Env: "STATIC_TOKEN"},
				RequestTimeout: generator.DefaultRequestTimeout, MaxQueue: 0,
				Cache:   generator.CacheConfig{MaxEntries: generator.DefaultCacheMaxEntries},
				Backend: &generator.StaticBackend{Files: []string{"data/**/*.yaml"}, Dir: "/conf"},
			},
		},
	}
	if diff := cmp.Diff(want, cfg, cmp.Comparer(func(a, b *generator.StaticBackend) bool { return cmp.Equal(a.Files, b.Files) && a.Dir == b.Dir })); diff != "" {
		t.Errorf("ParseConfig() mismatch (-want +got):\n%s", diff)
	}
}

func TestParseConfigErrors(t *testing.T) {
	const ok = "  allowUnauthenticated: true\n  backend: {static: {files: [s.yaml]}}\n"
	tests := []struct {
		name, yaml, want string
		is               error
	}{
		{"empty", "", "gen.yaml:1: the file is empty; it must hold a GeneratorConfig (apiVersion strata.dev/v1alpha1)", generator.ErrInvalidConfig},
		{"not a map", "[]", "gen.yaml:1: the document must be a map (a GeneratorConfig), but it is a list", generator.ErrInvalidConfig},
		{"wrong kind", "apiVersion: v1\nkind: ConfigMap\n", `gen.yaml:1:1: apiVersion "v1", kind "ConfigMap": this file must say apiVersion: strata.dev/v1alpha1 and kind: GeneratorConfig`, generator.ErrInvalidConfig},
		{"unknown field", header + "plugins:\n- name: p\n  tokn: {env: X}\n" + ok, `gen.yaml:5:3: unknown field "plugins[0].tokn"; known fields here: allowUnauthenticated, backend, cache, concurrency, maxQueue, name, path, requestTimeout, token`, document.ErrUnknownField},
		{"syntax", header + "plugins: [\n", "gen.yaml:4", document.ErrSyntax},
		{"wrong type", header + "maxRequestBytes: lots\nplugins:\n- name: p\n" + ok, "gen.yaml:3:1: maxRequestBytes: expected an integer, got a JSON string", document.ErrSyntax},
		{"no plugins", header, "gen.yaml:1:1: plugins: no plugins: list at least one under plugins", generator.ErrInvalidConfig},
		{"bad name", header + "plugins:\n- name: My_Plugin\n" + ok, `gen.yaml:4:3: plugins[0].name: "My_Plugin" is not a valid plugin name`, generator.ErrInvalidConfig},
		{"duplicate name", header + "plugins:\n- name: p\n" + ok + "- name: p\n  path: /q\n" + ok, `gen.yaml:7:3: plugins[1].name: plugin name "p" is already used by plugins[0]`, generator.ErrInvalidConfig},
		{"duplicate path", header + "plugins:\n- name: p\n  path: /x\n" + ok + "- name: q\n  path: /x/\n" + ok, `gen.yaml:9:3: plugins[1].path: path "/x" is already used by plugins[0]`, generator.ErrInvalidConfig},
		{"bad path", header + "plugins:\n- name: p\n  path: x y\n" + ok, `gen.yaml:5:3: plugins[0].path: "x y" is not a valid base path`, generator.ErrInvalidConfig},
		{"path with the API", header + "plugins:\n- name: p\n  path: /p/api/v1/getparams.execute\n" + ok, "must be the base path only", generator.ErrInvalidConfig},
		{"no token", header + "plugins:\n- name: p\n  backend: {static: {files: [s.yaml]}}\n", "gen.yaml:4:3: plugins[0]: no token: set token.file or token.env", generator.ErrInvalidConfig},
		{"token and unauthenticated", header + "plugins:\n- name: p\n  token: {env: T}\n" + ok, "plugins[0].allowUnauthenticated: set either token or allowUnauthenticated, not both", generator.ErrInvalidConfig},
		{"token both sources", header + "plugins:\n- name: p\n  token: {env: T, file: f}\n  backend: {static: {files: [s.yaml]}}\n", "gen.yaml:5:3: plugins[0].token: set exactly one of file and env", generator.ErrInvalidConfig},
		{"token bad env", header + "plugins:\n- name: p\n  token: {env: 1X}\n  backend: {static: {files: [s.yaml]}}\n", `plugins[0].token.env: "1X" is not an environment variable name`, generator.ErrInvalidConfig},
		{"no backend", header + "plugins:\n- name: p\n  allowUnauthenticated: true\n", "gen.yaml:4:3: plugins[0].backend: set exactly one backend: command or static", generator.ErrInvalidConfig},
		{"two backends", header + "plugins:\n- name: p\n  allowUnauthenticated: true\n  backend: {command: {argv: [x]}, static: {files: [s]}}\n", "plugins[0].backend: set exactly one backend", generator.ErrInvalidConfig},
		{"empty argv", header + "plugins:\n- name: p\n  allowUnauthenticated: true\n  backend: {command: {argv: []}}\n", "plugins[0].backend.command.argv: no command", generator.ErrInvalidConfig},
		{"argv a string", header + "plugins:\n- name: p\n  allowUnauthenticated: true\n  backend: {command: {argv: ./x.sh --a}}\n", "gen.yaml:6:23: plugins[0].backend.command.argv: must be a list: the command and its arguments, e.g. argv: [./params.sh, --flag]; it never runs through a shell", generator.ErrInvalidConfig},
		{"bad env name", header + "plugins:\n- name: p\n  allowUnauthenticated: true\n  backend: {command: {argv: [x], env: {A-B: c}}}\n", `"A-B" is not an environment variable name`, generator.ErrInvalidConfig},
		{"bad duration", header + "plugins:\n- name: p\n  requestTimeout: soon\n" + ok, `gen.yaml:5:3: plugins[0].requestTimeout: "soon" is not a duration`, generator.ErrInvalidConfig},
		{"negative duration", header + "readTimeout: -1s\nplugins:\n- name: p\n" + ok, `readTimeout: "-1s" is not a duration`, generator.ErrInvalidConfig},
		{"zero request timeout", header + "plugins:\n- name: p\n  requestTimeout: 0\n" + ok, "plugins[0].requestTimeout: must be more than 0", generator.ErrInvalidConfig},
		{"write timeout too short", header + "writeTimeout: 10s\nplugins:\n- name: p\n" + ok, "writeTimeout: 10s is not longer than the longest requestTimeout (25s)", generator.ErrInvalidConfig},
		{"short reload interval", header + "reloadInterval: 1ms\nplugins:\n- name: p\n" + ok, "reloadInterval: 1ms is too short", generator.ErrInvalidConfig},
		{"tls half", header + "tls: {certFile: c}\nplugins:\n- name: p\n" + ok, "gen.yaml:3:1: tls: set both certFile and keyFile", generator.ErrInvalidConfig},
		{"bad listen", header + "listen: localhost\nplugins:\n- name: p\n" + ok, `listen: "localhost" is not a host:port address`, generator.ErrInvalidConfig},
		{"bad concurrency", header + "plugins:\n- name: p\n  concurrency: -2\n" + ok, "plugins[0].concurrency: -2 is out of range: use 1 to 10000, 0 (the default) or -1 (no bound)", generator.ErrInvalidConfig},
		{"bad maxEntries", header + "plugins:\n- name: p\n  cache: {maxEntries: 0}\n" + ok, "plugins[0].cache.maxEntries: 0 is out of range", generator.ErrInvalidConfig},
		{"bad glob", header + "plugins:\n- name: p\n  allowUnauthenticated: true\n  backend: {static: {files: [\"[\"]}}\n", `plugins[0].backend.static.files[0]: "[" is not a valid glob`, generator.ErrInvalidConfig},
		{"no files", header + "plugins:\n- name: p\n  allowUnauthenticated: true\n  backend: {static: {}}\n", "plugins[0].backend.static.files: no files", generator.ErrInvalidConfig},
		{"small body limit", header + "maxRequestBytes: 10\nplugins:\n- name: p\n" + ok, "maxRequestBytes: 10 is out of range", generator.ErrInvalidConfig},
		{"duplicate key", header + "listen: :1\nlisten: :2\n", "duplicate key", document.ErrDuplicateKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := generator.ParseConfig([]byte(tc.yaml), "gen.yaml", "/conf")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseConfig() = %v, want an error containing %q", err, tc.want)
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("ParseConfig() = %v, want it to match %v", err, tc.is)
			}
		})
	}
}

// TestParseConfigConcurrency: 0 is the default (twice the CPUs for a
// command backend, no bound for a static one), -1 is no bound.
func TestParseConfigConcurrency(t *testing.T) {
	const header = "apiVersion: strata.dev/v1alpha1\nkind: GeneratorConfig\nplugins:\n- name: p\n  allowUnauthenticated: true\n"
	const command = "  backend: {command: {argv: [./p.sh]}}\n"
	const static = "  backend: {static: {files: [s.yaml]}}\n"
	tests := []struct {
		name, yaml string
		want       int
	}{
		{"command, absent", header + command, 2 * runtime.NumCPU()},
		{"command, 0", header + "  concurrency: 0\n" + command, 2 * runtime.NumCPU()},
		{"command, -1", header + "  concurrency: -1\n" + command, -1},
		{"command, 3", header + "  concurrency: 3\n" + command, 3},
		{"static, absent", header + static, 0},
		{"static, 0", header + "  concurrency: 0\n" + static, 0},
		{"static, -1", header + "  concurrency: -1\n" + static, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := generator.ParseConfig([]byte(tc.yaml), "gen.yaml", "/conf")
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Plugins[0].Concurrency; got != tc.want {
				t.Errorf("Concurrency = %d, want %d", got, tc.want)
			}
		})
	}
}
