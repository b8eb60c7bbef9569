package generator

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/strata-dev/strata/internal/document"
)

// What a generator server configuration must say it is.
const (
	ConfigAPIVersion = "strata.dev/v1alpha1"
	ConfigKind       = "GeneratorConfig"
)

// Defaults of a configuration's optional fields.
const (
	DefaultListen          = ":4355"
	DefaultMaxRequestBytes = 1 << 20
	DefaultReadTimeout     = 10 * time.Second
	DefaultIdleTimeout     = 2 * time.Minute
	DefaultShutdownGrace   = 20 * time.Second
	DefaultReloadInterval  = 2 * time.Second
	// DefaultRequestTimeout is below the controller's own 30 s, so that
	// the controller reads the server's error rather than its own timeout.
	DefaultRequestTimeout  = 25 * time.Second
	DefaultMaxQueue        = 128
	DefaultCacheMaxEntries = 1024
	DefaultMaxOutputBytes  = 16 << 20
	// MaxConfigBytes bounds the size of a configuration file.
	MaxConfigBytes = 1 << 20
	// MaxPlugins bounds the plugins of one configuration.
	MaxPlugins = 256
)

// ErrInvalidConfig is wrapped by the errors of ParseConfig about what a
// configuration says, as opposed to its YAML syntax or an unknown field,
// which wrap the values package's sentinels.
var ErrInvalidConfig = errors.New("invalid generator configuration")

// A Config is a generator server's configuration, checked, with defaults
// filled in and relative paths made absolute (relative to the file).
type Config struct {
	Source string // where it was read from, for messages

	Listen          string        // listen; the address of the plugin API
	MetricsListen   string        // metricsListen; "" serves /metrics on Listen
	TLS             *TLSConfig    // tls; nil serves plain HTTP
	MaxRequestBytes int64         // maxRequestBytes
	ReadTimeout     time.Duration // readTimeout: reading a whole request
	WriteTimeout    time.Duration // writeTimeout: default the longest requestTimeout + 5 s
	IdleTimeout     time.Duration // idleTimeout of keep-alive connections
	ShutdownDelay   time.Duration // shutdownDelay: serving on, not ready, after SIGTERM
	ShutdownGrace   time.Duration // shutdownGrace: in-flight requests' time after that
	ReloadInterval  time.Duration // reloadInterval: how often watched files are checked

	Plugins []*PluginConfig
}

// TLSConfig names the certificate and key files, reloaded when they change.
type TLSConfig struct {
	CertFile string
	KeyFile  string
}

// A PluginConfig is one plugin: its path and backend, auth and limits.
type PluginConfig struct {
	Name string
	// Path is the plugin's base URL path: it serves
	// <Path>/api/v1/getparams.execute. Default "/<name>".
	Path string
	// Backend answers the requests.
	Backend Backend
	// Token is where the bearer token comes from; nil only when
	// AllowUnauthenticated.
	Token                *TokenSource
	AllowUnauthenticated bool
	// RequestTimeout bounds one backend call, waiting in the queue
	// included.
	RequestTimeout time.Duration
	// Concurrency bounds the backend calls in progress; a negative value is
	// no bound. ParseConfig fills in the config file's default (twice the
	// CPUs for a command backend; none for a static one, which is 0 here).
	Concurrency int
	// MaxQueue bounds the requests waiting for a backend slot; beyond it
	// the server answers 503.
	MaxQueue int
	Cache    CacheConfig
}

// CacheConfig is a plugin's response cache.
type CacheConfig struct {
	// TTL is how long an answer is reused; 0 turns the cache off.
	TTL        time.Duration
	MaxEntries int
	// Collapse makes concurrent identical requests share one backend
	// call, even when TTL is 0.
	Collapse bool
}

// TokenSource is where a plugin's bearer token is read: a file (re-read
// when it changes) or an environment variable.
type TokenSource struct {
	File string
	Env  string
}

func (t *TokenSource) String() string {
	if t.File != "" {
		return "file " + t.File
	}
	return "environment variable " + t.Env
}

// The shape of the file, for document.Decode.
type configFile struct {
	APIVersion      string        `json:"apiVersion"`
	Kind            string        `json:"kind"`
	Metadata        fileMetadata  `json:"metadata"`
	Listen          string        `json:"listen"`
	MetricsListen   string        `json:"metricsListen"`
	TLS             *fileTLS      `json:"tls"`
	MaxRequestBytes *int64        `json:"maxRequestBytes"`
	ReadTimeout     any           `json:"readTimeout"`
	WriteTimeout    any           `json:"writeTimeout"`
	IdleTimeout     any           `json:"idleTimeout"`
	ShutdownDelay   any           `json:"shutdownDelay"`
	ShutdownGrace   any           `json:"shutdownGrace"`
	ReloadInterval  any           `json:"reloadInterval"`
	Plugins         []*filePlugin `json:"plugins"`
}

type fileMetadata struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type fileTLS struct {
	CertFile string `json:"certFile"`
	KeyFile  string `json:"keyFile"`
}

type filePlugin struct {
	Name                 string       `json:"name"`
	Path                 *string      `json:"path"`
	Backend              *fileBackend `json:"backend"`
	Token                *fileToken   `json:"token"`
	AllowUnauthenticated bool         `json:"allowUnauthenticated"`
	RequestTimeout       any          `json:"requestTimeout"`
	Concurrency          *int         `json:"concurrency"`
	MaxQueue             *int         `json:"maxQueue"`
	Cache                *fileCache   `json:"cache"`
}

type fileBackend struct {
	Command *fileCommand `json:"command"`
	Static  *fileStatic  `json:"static"`
}

type fileCommand struct {
	Argv           []string          `json:"argv"`
	Dir            string            `json:"dir"`
	Env            map[string]string `json:"env"`
	PassEnv        []string          `json:"passEnv"`
	Timeout        any               `json:"timeout"`
	MaxOutputBytes *int64            `json:"maxOutputBytes"`
}

type fileStatic struct {
	Files []string `json:"files"`
}

type fileToken struct {
	File string `json:"file"`
	Env  string `json:"env"`
}

type fileCache struct {
	TTL        any   `json:"ttl"`
	MaxEntries *int  `json:"maxEntries"`
	Collapse   *bool `json:"collapse"`
}

// LoadConfig reads and checks a configuration file.
func LoadConfig(path string) (*Config, error) {
	data, err := document.ReadFile(path, MaxConfigBytes)
	if err != nil && !errors.Is(err, document.ErrTooLarge) {
		return nil, fmt.Errorf("reading the generator configuration: %w", err)
	}
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	return ParseConfig(data, path, filepath.Dir(abs))
}

// ParseConfig parses and checks a configuration; source names it in
// errors, and relative paths in it are relative to dir. Errors name the
// source and line.
func ParseConfig(data []byte, source, dir string) (*Config, error) {
	tree, pos, err := document.Loader{Positions: true, Limits: document.Limits{MaxBytes: MaxConfigBytes}}.ParseAny(data, source)
	if err != nil {
		return nil, err
	}
	if tree == nil {
		return nil, &document.LoadError{Source: source, Line: 1, Err: ErrInvalidConfig,
			Msg: fmt.Sprintf("the file is empty; it must hold a %s (apiVersion %s)", ConfigKind, ConfigAPIVersion)}
	}
	if _, ok := tree.(map[string]any); !ok {
		return nil, &document.LoadError{Source: source, Line: 1, Err: ErrInvalidConfig,
			Msg: fmt.Sprintf("the document must be a map (a %s), but it is %s", ConfigKind, document.Describe(tree))}
	}
	c := checker{source: source, pos: pos, dir: dir}
	if err := c.argvLists(tree); err != nil {
		return nil, err
	}
	var file configFile
	if err := document.Decode(tree, pos, source, &file); err != nil {
		return nil, err
	}
	return c.config(&file)
}

// checker turns a decoded file into a Config, with errors at lines.
type checker struct {
	source string
	pos    *document.Pos
	dir    string
}

func (c *checker) errorf(path string, format string, args ...any) error {
	p := c.pos
	if path != "" {
		if pp, err := document.ParsePath(path); err == nil {
			for i := len(pp); i >= 0; i-- { // the deepest node written down
				if q := c.pos.Lookup(pp[:i]); q != nil {
					p = q
					break
				}
			}
		}
	}
	le := &document.LoadError{Source: c.source, Err: ErrInvalidConfig, Msg: fmt.Sprintf(format, args...)}
	if p != nil {
		le.Line, le.Column = p.Line, p.Column
	}
	if path != "" {
		le.Msg = path + ": " + le.Msg
	}
	return le
}

// argvLists checks, before decoding, that every command's argv is a list of
// strings: document.Decode would report a string without its line.
func (c *checker) argvLists(tree any) error {
	plugins, _ := tree.(map[string]any)["plugins"].([]any)
	for i, p := range plugins {
		pm, _ := p.(map[string]any)
		b, _ := pm["backend"].(map[string]any)
		cmd, _ := b["command"].(map[string]any)
		argv, ok := cmd["argv"]
		if !ok || argv == nil {
			continue
		}
		at := fmt.Sprintf("plugins[%d].backend.command.argv", i)
		list, ok := argv.([]any)
		if !ok {
			return c.errorf(at, "must be a list: the command and its arguments, e.g. argv: [./params.sh, --flag]; it never runs through a shell")
		}
		for j, a := range list {
			if _, ok := a.(string); !ok {
				return c.errorf(fmt.Sprintf("%s[%d]", at, j), "must be a string, but it is %s; quote it", document.Describe(a))
			}
		}
	}
	return nil
}

func (c *checker) abs(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}

var (
	nameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	pathRE = regexp.MustCompile(`^(/[A-Za-z0-9._~-]+)*$`)
	envRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

func (c *checker) config(f *configFile) (*Config, error) {
	if f.APIVersion != ConfigAPIVersion || f.Kind != ConfigKind {
		return nil, c.errorf("", "apiVersion %q, kind %q: this file must say apiVersion: %s and kind: %s",
			f.APIVersion, f.Kind, ConfigAPIVersion, ConfigKind)
	}
	cfg := &Config{Source: c.source, Listen: f.Listen, MetricsListen: f.MetricsListen}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if err := c.address("listen", cfg.Listen); err != nil {
		return nil, err
	}
	if cfg.MetricsListen != "" {
		if err := c.address("metricsListen", cfg.MetricsListen); err != nil {
			return nil, err
		}
	}
	if f.TLS != nil {
		if f.TLS.CertFile == "" || f.TLS.KeyFile == "" {
			return nil, c.errorf("tls", "set both certFile and keyFile, or remove tls to serve plain HTTP")
		}
		cfg.TLS = &TLSConfig{CertFile: c.abs(f.TLS.CertFile), KeyFile: c.abs(f.TLS.KeyFile)}
	}
	cfg.MaxRequestBytes = DefaultMaxRequestBytes
	if f.MaxRequestBytes != nil {
		if *f.MaxRequestBytes < 1024 || *f.MaxRequestBytes > 1<<30 {
			return nil, c.errorf("maxRequestBytes", "%d is out of range: use 1024 to 1073741824 bytes", *f.MaxRequestBytes)
		}
		cfg.MaxRequestBytes = *f.MaxRequestBytes
	}
	var err error
	durations := []struct {
		field string
		raw   any
		out   *time.Duration
		def   time.Duration
	}{
		{"readTimeout", f.ReadTimeout, &cfg.ReadTimeout, DefaultReadTimeout},
		{"writeTimeout", f.WriteTimeout, &cfg.WriteTimeout, 0},
		{"idleTimeout", f.IdleTimeout, &cfg.IdleTimeout, DefaultIdleTimeout},
		{"shutdownDelay", f.ShutdownDelay, &cfg.ShutdownDelay, 0},
		{"shutdownGrace", f.ShutdownGrace, &cfg.ShutdownGrace, DefaultShutdownGrace},
		{"reloadInterval", f.ReloadInterval, &cfg.ReloadInterval, DefaultReloadInterval},
	}
	for _, d := range durations {
		if *d.out, err = c.duration(d.field, d.raw, d.def); err != nil {
			return nil, err
		}
	}
	if cfg.ReloadInterval < 100*time.Millisecond {
		return nil, c.errorf("reloadInterval", "%s is too short: use at least 100ms", cfg.ReloadInterval)
	}
	if cfg.ReadTimeout == 0 || cfg.IdleTimeout == 0 {
		return nil, c.errorf("readTimeout", "readTimeout and idleTimeout must be more than 0")
	}
	if len(f.Plugins) == 0 {
		return nil, c.errorf("plugins", "no plugins: list at least one under plugins")
	}
	if len(f.Plugins) > MaxPlugins {
		return nil, c.errorf("plugins", "%d plugins are more than the limit of %d", len(f.Plugins), MaxPlugins)
	}
	names, paths := map[string]int{}, map[string]int{}
	var longest time.Duration
	for i, fp := range f.Plugins {
		at := fmt.Sprintf("plugins[%d]", i)
		if fp == nil {
			return nil, c.errorf(at, "empty plugin entry")
		}
		p, err := c.plugin(at, fp)
		if err != nil {
			return nil, err
		}
		if j, dup := names[p.Name]; dup {
			return nil, c.errorf(at+".name", "plugin name %q is already used by plugins[%d]", p.Name, j)
		}
		names[p.Name] = i
		if j, dup := paths[p.Path]; dup {
			return nil, c.errorf(at+".path", "path %q is already used by plugins[%d]; give each plugin its own path", p.Path, j)
		}
		paths[p.Path] = i
		longest = max(longest, p.RequestTimeout)
		cfg.Plugins = append(cfg.Plugins, p)
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = longest + 5*time.Second
	} else if cfg.WriteTimeout <= longest {
		return nil, c.errorf("writeTimeout", "%s is not longer than the longest requestTimeout (%s): answers would be cut off; raise it or leave it out", cfg.WriteTimeout, longest)
	}
	return cfg, nil
}

func (c *checker) address(field, addr string) error {
	if strings.HasPrefix(addr, "unix:") {
		return nil
	}
	if i := strings.LastIndexByte(addr, ':'); i < 0 || i == len(addr)-1 {
		return c.errorf(field, "%q is not a host:port address (for example \":4355\" or \"127.0.0.1:4355\")", addr)
	}
	return nil
}

// duration reads a duration written as a Go duration string ("30s",
// "1m30s") or as an integer number of seconds, as Argo CD's requestTimeout.
func (c *checker) duration(field string, raw any, def time.Duration) (time.Duration, error) {
	switch v := raw.(type) {
	case nil:
		return def, nil
	case string:
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return 0, c.errorf(field, "%q is not a duration: write it like 30s, 2m or 1m30s, or as a number of seconds", v)
		}
		return d, nil
	case int64:
		if v < 0 || v > math.MaxInt64/int64(time.Second) {
			return 0, c.errorf(field, "%d seconds is out of range", v)
		}
		return time.Duration(v) * time.Second, nil
	case float64: // document.Decode hands numbers over as float64
		if v < 0 || v > 1e9 || math.IsNaN(v) {
			return 0, c.errorf(field, "%v seconds is out of range", v)
		}
		return time.Duration(v * float64(time.Second)), nil
	}
	return 0, c.errorf(field, "expected a duration such as 30s or a number of seconds, got %s", document.Describe(raw))
}

func (c *checker) plugin(at string, fp *filePlugin) (*PluginConfig, error) {
	if !nameRE.MatchString(fp.Name) || len(fp.Name) > 63 {
		return nil, c.errorf(at+".name", "%q is not a valid plugin name: use 1 to 63 lower-case letters, digits and '-', starting and ending with a letter or digit", fp.Name)
	}
	atf := func(field string) string { return at + "." + field }
	p := &PluginConfig{Name: fp.Name, Path: "/" + fp.Name}
	if fp.Path != nil {
		p.Path = strings.TrimRight(*fp.Path, "/")
		if !pathRE.MatchString(p.Path) || len(p.Path) > 256 {
			return nil, c.errorf(atf("path"), "%q is not a valid base path: write /segment[/segment...] with letters, digits and . _ ~ - in segments, or / for the root", *fp.Path)
		}
		if strings.HasSuffix(p.Path, APIPath) {
			return nil, c.errorf(atf("path"), "%q must be the base path only: the server adds %s itself", *fp.Path, APIPath)
		}
	}
	var err error
	if p.RequestTimeout, err = c.duration(atf("requestTimeout"), fp.RequestTimeout, DefaultRequestTimeout); err != nil {
		return nil, err
	}
	if p.RequestTimeout == 0 {
		return nil, c.errorf(atf("requestTimeout"), "must be more than 0")
	}
	switch {
	case fp.Token != nil && fp.AllowUnauthenticated:
		return nil, c.errorf(atf("allowUnauthenticated"), "set either token or allowUnauthenticated, not both")
	case fp.Token != nil:
		t := fp.Token
		switch {
		case (t.File == "") == (t.Env == ""):
			return nil, c.errorf(atf("token"), "set exactly one of file and env")
		case t.Env != "" && !envRE.MatchString(t.Env):
			return nil, c.errorf(atf("token.env"), "%q is not an environment variable name", t.Env)
		}
		p.Token = &TokenSource{File: c.abs(t.File), Env: t.Env}
	case fp.AllowUnauthenticated:
		p.AllowUnauthenticated = true
	default:
		return nil, c.errorf(at, "no token: set token.file or token.env to the token in the ApplicationSet controller's ConfigMap, or allowUnauthenticated: true to accept any caller")
	}
	if fp.Backend == nil || (fp.Backend.Command == nil) == (fp.Backend.Static == nil) {
		return nil, c.errorf(atf("backend"), "set exactly one backend: command or static")
	}
	if fp.Backend.Command != nil {
		cb, err := c.command(atf("backend.command"), fp.Backend.Command)
		if err != nil {
			return nil, err
		}
		p.Backend = cb
		p.Concurrency = 2 * runtime.NumCPU()
	} else {
		sb, err := c.static(atf("backend.static"), fp.Backend.Static)
		if err != nil {
			return nil, err
		}
		p.Backend = sb
	}
	if fp.Concurrency != nil {
		// 0 is the default set above; a negative value is no bound.
		switch n := *fp.Concurrency; {
		case n < -1 || n > 10000:
			return nil, c.errorf(atf("concurrency"), "%d is out of range: use 1 to 10000, 0 (the default) or -1 (no bound)", n)
		case n != 0:
			p.Concurrency = n
		}
	}
	p.MaxQueue = DefaultMaxQueue
	if fp.MaxQueue != nil {
		if *fp.MaxQueue < 0 || *fp.MaxQueue > 1000000 {
			return nil, c.errorf(atf("maxQueue"), "%d is out of range: use 0 (answer 503 at once when busy) to 1000000", *fp.MaxQueue)
		}
		p.MaxQueue = *fp.MaxQueue
	}
	p.Cache = CacheConfig{MaxEntries: DefaultCacheMaxEntries, Collapse: true}
	if fc := fp.Cache; fc != nil {
		if p.Cache.TTL, err = c.duration(atf("cache.ttl"), fc.TTL, 0); err != nil {
			return nil, err
		}
		if fc.MaxEntries != nil {
			if *fc.MaxEntries < 1 || *fc.MaxEntries > 1000000 {
				return nil, c.errorf(atf("cache.maxEntries"), "%d is out of range: use 1 to 1000000", *fc.MaxEntries)
			}
			p.Cache.MaxEntries = *fc.MaxEntries
		}
		if fc.Collapse != nil {
			p.Cache.Collapse = *fc.Collapse
		}
	}
	return p, nil
}

func (c *checker) command(at string, fc *fileCommand) (*CommandBackend, error) {
	if len(fc.Argv) == 0 || fc.Argv[0] == "" {
		return nil, c.errorf(at+".argv", "no command: write the command and its arguments as a list, e.g. argv: [./params.sh]")
	}
	for i, a := range fc.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, c.errorf(fmt.Sprintf("%s.argv[%d]", at, i), "contains a NUL byte")
		}
	}
	b := &CommandBackend{Argv: fc.Argv, Dir: c.dir, MaxOutputBytes: DefaultMaxOutputBytes}
	if fc.Dir != "" {
		b.Dir = c.abs(fc.Dir)
	}
	for _, name := range fc.PassEnv {
		if !envRE.MatchString(name) {
			return nil, c.errorf(at+".passEnv", "%q is not an environment variable name", name)
		}
	}
	b.PassEnv = fc.PassEnv
	for k, v := range fc.Env {
		if !envRE.MatchString(k) {
			return nil, c.errorf(at+".env."+document.EscapeKey(k), "%q is not an environment variable name", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, c.errorf(at+".env."+document.EscapeKey(k), "contains a NUL byte")
		}
		b.Env = append(b.Env, k+"="+v)
	}
	slices.Sort(b.Env)
	var err error
	if b.Timeout, err = c.duration(at+".timeout", fc.Timeout, 0); err != nil {
		return nil, err
	}
	if fc.MaxOutputBytes != nil {
		if *fc.MaxOutputBytes < 1 || *fc.MaxOutputBytes > 1<<30 {
			return nil, c.errorf(at+".maxOutputBytes", "%d is out of range: use 1 to 1073741824 bytes", *fc.MaxOutputBytes)
		}
		b.MaxOutputBytes = *fc.MaxOutputBytes
	}
	return b, nil
}

func (c *checker) static(at string, fs *fileStatic) (*StaticBackend, error) {
	if len(fs.Files) == 0 {
		return nil, c.errorf(at+".files", "no files: list the YAML or JSON files (globs allowed) holding the parameter sets")
	}
	b := &StaticBackend{Dir: c.dir}
	for i, f := range fs.Files {
		if _, err := filepath.Match(f, ""); err != nil || f == "" {
			return nil, c.errorf(fmt.Sprintf("%s.files[%d]", at, i), "%q is not a valid glob", f)
		}
		b.Files = append(b.Files, f)
	}
	return b, nil
}
