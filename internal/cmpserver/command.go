package cmpserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/hookexec"
	"github.com/strata-dev/strata/internal/manifest"
	"github.com/strata-dev/strata/internal/memlimit"
	"github.com/strata-dev/strata/internal/params"
)

// CommandOptions are the settings of a CommandPlugin that do not come from
// its plugin.yaml.
type CommandOptions struct {
	// Timeout bounds each command (init, generate, the dynamic parameters
	// command, the discovery command) on top of the request's context;
	// 0 is no bound but the context's.
	Timeout time.Duration
	// Grace is how long a stopped command has between SIGTERM and
	// SIGKILL; 0 is hookexec.DefaultGrace (5 s, as in Argo CD).
	Grace time.Duration
	// MaxOutput bounds what each command may print to stdout; 0 is
	// hookexec.DefaultMaxStdout.
	MaxOutput int64
	// MaxManifestNodes bounds the maps, lists and values of a generate
	// command's output (see ParseManifestsLimited); 0 is
	// DefaultMaxManifestNodes.
	MaxManifestNodes int
	// MaxManifestBytes bounds the manifests' JSON: they travel in one
	// gRPC message; 0 is MaxManifestBytes, which fits Argo CD's default
	// message size (see MessageSizeFromEnv).
	MaxManifestBytes int
	// Env is the sidecar's own environment (os.Environ()), the base of
	// every command's environment. Nil is an empty one.
	Env []string
	// Logger receives a line per command run and per discovery; nil
	// discards them.
	Logger *slog.Logger
	// Hidden are directories no command may reach (see
	// hookexec.Sandbox); the server hides its Store's root, which holds
	// the repository cache and the other requests' workspaces.
	Hidden []string
	// NoSandbox runs the commands unconfined, with the sidecar's own
	// access to files. Otherwise each command runs in a hookexec.Sandbox:
	// it may read and run what the system holds, write only its request's
	// copy of the repository and temporary directory, and reach nothing
	// under Hidden; on a kernel without Landlock every command then fails
	// with an error matching hookexec.ErrNoSandbox.
	NoSandbox bool
	// Observe, when set, is called after each command with its step
	// (init, generate, discover, parameters) and what hookexec's Run
	// returned (Metrics.ObserveCommand records it).
	Observe func(step string, res *hookexec.Result, err error)
}

// A CommandPlugin is a Plugin defined by a plugin.yaml: it runs the
// configuration's commands in the application's directory, the way Argo
// CD's plugin sidecar does, following the proposal for parameterized
// plugins where Argo CD does not. Its methods may be called concurrently.
//
// Every command runs as an argv, never through a shell, with this
// environment, the later entries winning:
//
//   - CommandOptions.Env, the sidecar's own;
//   - the request's (params.Request.Env): ARGOCD_APP_*, KUBE_VERSION,
//     KUBE_API_VERSIONS and ARGOCD_ENV_*, without any ARGOCD_APP_PARAMETERS
//     or PARAM_* it carries;
//   - ARGOCD_APP_PARAMETERS (verbatim as the repo-server sent it, when it
//     did: params.Request.ParametersJSON) and the PARAM_* variables of the
//     request's parameters, from params.Env: a PARAM_* variable already
//     set by the two above wins over the parameter's;
//   - of the request's variables and the parameters', those with an empty
//     value are left out, as Argo CD's sidecar leaves them out;
//   - TMPDIR and HOME, both the request's private temporary directory
//     (params.Request.TempDir) when it has one: a command's caches and
//     temporary files go with the request, not to the next one.
//
// A command's Argv[0] is looked up in the PATH of CommandOptions.Env (the
// sidecar's own; this process's when it has none), as Argo CD's sidecar
// does, never in a PATH the request sets.
//
// Unless CommandOptions.NoSandbox is set, every command is confined to
// its request's directories with Landlock: see CommandOptions.
type CommandPlugin struct {
	cfg  *Config
	opts CommandOptions
	log  *slog.Logger
	// lookupEnv is opts.Env, never nil: the request's PATH must not
	// choose the binary. hookexec does not change it.
	lookupEnv []string
}

var _ Plugin = (*CommandPlugin)(nil)

// NewCommandPlugin returns the plugin that cfg, from ParseConfig or
// LoadConfig, defines.
func NewCommandPlugin(cfg *Config, opts CommandOptions) *CommandPlugin {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("plugin", cfg.Name)
	lookupEnv := opts.Env
	if lookupEnv == nil {
		lookupEnv = []string{}
	}
	return &CommandPlugin{cfg: cfg, opts: opts, log: log, lookupEnv: lookupEnv}
}

// Hiding returns a copy of p whose commands cannot reach dirs either (see
// CommandOptions.Hidden).
func (p *CommandPlugin) Hiding(dirs ...string) *CommandPlugin {
	q := *p
	q.opts.Hidden = append(p.opts.Hidden[:len(p.opts.Hidden):len(p.opts.Hidden)], dirs...)
	return &q
}

// Info describes the plugin.
func (p *CommandPlugin) Info() Info { return p.cfg.Info() }

// Match applies the first discovery rule of spec.discover that is set:
// fileName or find.glob matches when the pattern matches a file or
// directory in the application's directory (symbolic links leading out of
// it are not followed); find.command when it exits 0 having printed
// something (a non-zero exit is no match, and is logged). Without a rule the
// plugin never matches.
func (p *CommandPlugin) Match(ctx context.Context, req *params.Request) (bool, error) {
	d := p.cfg.Discover
	method := d.Method()
	var (
		ok  bool
		err error
	)
	switch method {
	case "":
		return false, nil
	case DiscoverFileName:
		ok, err = p.matchGlob(req, d.FileName, false)
	case DiscoverFindGlob:
		ok, err = p.matchGlob(req, d.Find.Glob, true)
	case DiscoverFindCommand:
		ok, err = p.matchCommand(ctx, req)
	}
	if err != nil {
		return false, err
	}
	p.log.Debug("discovery", "method", method, "app", req.AppName, "matched", ok)
	return ok, nil
}

// errFound stops a glob walk at the first match.
var errFound = errors.New("found")

func (p *CommandPlugin) matchGlob(req *params.Request, pattern string, doubleStar bool) (bool, error) {
	field := "spec.discover.fileName"
	if doubleStar {
		field = "spec.discover.find.glob"
	}
	rel, ok := discoveryPattern(pattern)
	if !ok {
		return false, fmt.Errorf("%s %q reaches outside the application's directory", field, pattern)
	}
	// An os.Root at the repository refuses symbolic links that lead out
	// of it; links to elsewhere in the repository are followed, as Argo
	// CD's sidecar follows them (fileName; find.glob follows none).
	top, app := req.AppPath, "."
	if req.RepoRoot != "" {
		if r, err := filepath.Rel(req.RepoRoot, req.AppPath); err == nil && (r == "." || filepath.IsLocal(r)) {
			top, app = req.RepoRoot, r
		}
	}
	root, err := os.OpenRoot(top)
	if err != nil {
		return false, fmt.Errorf("discovery: %w", err)
	}
	defer root.Close()
	fsys, err := fs.Sub(root.FS(), filepath.ToSlash(app))
	if err != nil {
		return false, fmt.Errorf("discovery: %w", err)
	}
	if !doubleStar {
		matches, err := fs.Glob(fsys, rel)
		if err != nil {
			return false, fmt.Errorf("%s %q: %w", field, pattern, err)
		}
		return len(matches) > 0, nil
	}
	err = doublestar.GlobWalk(fsys, rel, func(string, fs.DirEntry) error { return errFound }, doublestar.WithNoFollow())
	switch {
	case errors.Is(err, errFound):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("%s %q: %w", field, pattern, err)
	}
	return false, nil
}

func (p *CommandPlugin) matchCommand(ctx context.Context, req *params.Request) (bool, error) {
	res, err := p.run(ctx, "discover", p.cfg.Discover.Find.Command, req)
	var exitErr *hookexec.ExitError
	if errors.As(err, &exitErr) {
		p.log.Info("discovery command failed: no match", "app", req.AppName, "error", err.Error())
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovery (spec.discover.find.command): %w", err)
	}
	// As in Argo CD: one final line break is dropped, and anything left,
	// white space too, is a match.
	return len(strings.TrimSuffix(string(res.Stdout), "\n")) > 0, nil
}

// Announce returns spec.parameters.static followed by what the
// spec.parameters.dynamic command printed (a JSON or YAML list of
// announcements), one announcement per name: a static announcement wins
// over a dynamic one of the same name. What was repaired or dropped is
// logged as a warning.
func (p *CommandPlugin) Announce(ctx context.Context, req *params.Request) ([]params.Announcement, error) {
	dyn := p.cfg.Parameters.Dynamic
	var dynamic []params.Announcement
	if dyn.IsSet() {
		res, err := p.run(ctx, "parameters", dyn, req)
		if err != nil {
			return nil, fmt.Errorf("announcing parameters (spec.parameters.dynamic): %w", err)
		}
		what := fmt.Sprintf("reading the %d bytes `%s` printed", len(res.Stdout), shortCommand(dyn.Argv()))
		if err := memlimit.Reserve(ctx, manifest.EstimateMemory(res.Stdout), what); err != nil {
			return nil, fmt.Errorf("announcing parameters (spec.parameters.dynamic): %w", err)
		}
		list, warnings, err := params.ParseAnnouncements(res.Stdout, "stdout of "+shortCommand(dyn.Argv()))
		if err != nil {
			return nil, err
		}
		for _, w := range warnings {
			p.log.Warn("parameter announcement", "app", req.AppName, "warning", w.String())
		}
		dynamic = list
	}
	out, warnings := params.Combine(p.cfg.Parameters.Static, dynamic)
	for _, w := range warnings {
		p.log.Warn("parameter announcement", "app", req.AppName, "warning", w.String())
	}
	return out, nil
}

// Generate runs spec.init, if set, and spec.generate, and returns the
// manifests the latter printed (see ParseManifests). A command that fails
// gives an error reading like Argo CD's:
//
//	`sh -c kustomize build .` failed exit status 1: Error: ...
func (p *CommandPlugin) Generate(ctx context.Context, req *params.Request) ([]string, error) {
	if p.cfg.Init.IsSet() {
		if _, err := p.run(ctx, "init", p.cfg.Init, req); err != nil {
			return nil, err
		}
	}
	res, err := p.run(ctx, "generate", p.cfg.Generate, req)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("reading the %d bytes `%s` printed", len(res.Stdout), shortCommand(p.cfg.Generate.Argv()))
	if err := memlimit.Reserve(ctx, manifest.EstimateMemory(res.Stdout), what); err != nil {
		return nil, err
	}
	return parseManifestsWithin(res.Stdout, "stdout of "+shortCommand(p.cfg.Generate.Argv()), p.opts.MaxManifestNodes, p.opts.MaxManifestBytes)
}

// run runs one of the plugin's commands in the application's directory.
func (p *CommandPlugin) run(ctx context.Context, step string, c Command, req *params.Request) (*hookexec.Result, error) {
	cmd := &hookexec.Command{
		Argv:        c.Argv(),
		Dir:         req.AppPath,
		Env:         p.Environ(req),
		LookupEnv:   p.lookupEnv,
		Timeout:     p.opts.Timeout,
		Grace:       p.opts.Grace,
		MaxStdout:   p.opts.MaxOutput,
		StderrLimit: max(p.opts.MaxOutput, hookexec.DefaultMaxStdout),
		Reserve:     memlimit.Stream(ctx, shortCommand(c.Argv())),
		Tracker:     trackerFrom(ctx),
		MaxFileSize: maxFileSize(ctx),
	}
	if !p.opts.NoSandbox {
		sb := &hookexec.Sandbox{Hidden: p.opts.Hidden}
		for _, d := range []string{req.RepoRoot, req.TempDir} {
			if d != "" {
				sb.Writable = append(sb.Writable, d)
			}
		}
		cmd.Sandbox = sb
	}
	res, err := cmd.Run(ctx)
	if p.opts.Observe != nil {
		p.opts.Observe(step, res, err)
	}
	if errors.Is(err, syscall.E2BIG) {
		err = tooBigToStart(cmd, err)
	}
	if err != nil {
		err = p.explain(ctx, c, err)
	}
	if !p.log.Enabled(ctx, slog.LevelDebug) {
		return res, err
	}
	attrs := []any{"step", step, "app", req.AppName, "command", shortCommand(cmd.Argv)}
	if res != nil {
		attrs = append(attrs, "duration", res.Duration, "stdoutBytes", len(res.Stdout))
	}
	if err != nil {
		p.log.Debug("plugin command failed", append(attrs, "error", err.Error())...)
		return res, err
	}
	if len(res.Stderr) > 0 {
		attrs = append(attrs, "stderr", document.Clip(strings.TrimSpace(string(res.Stderr)), 4<<10))
	}
	p.log.Debug("plugin command", attrs...)
	return res, nil
}

// Environ returns the environment the plugin's commands get for req, as
// CommandPlugin describes it, one entry per name.
func (p *CommandPlugin) Environ(req *params.Request) []string {
	env := make([]string, 0, len(p.opts.Env)+len(req.Env)+2*len(req.Parameters)+1)
	env = append(env, p.opts.Env...)
	for _, kv := range req.Env {
		if !isParameterVar(kv) && !emptyValue(kv) {
			env = append(env, kv)
		}
	}
	for _, kv := range params.Env(req.Parameters, env) {
		switch {
		case req.NoParametersVar && strings.HasPrefix(kv, params.ParametersVar+"="):
		case req.ParametersJSON != "" && strings.HasPrefix(kv, params.ParametersVar+"="):
			env = append(env, params.ParametersVar+"="+req.ParametersJSON)
		case !emptyValue(kv):
			env = append(env, kv)
		}
	}
	if req.TempDir != "" {
		env = append(env, "TMPDIR="+req.TempDir, "HOME="+req.TempDir)
	}
	return dedupEnv(env)
}

// emptyValue reports whether kv sets an empty value. Argo CD's sidecar
// leaves out the request's variables with empty values (an unset
// Application namespace, a parameter set to ""): the command does not
// get them at all, so the sidecar's own variable of that name, if any,
// stays.
func emptyValue(kv string) bool {
	return strings.HasSuffix(kv, "=") && strings.IndexByte(kv, '=') == len(kv)-1
}

// isParameterVar reports whether kv is one of the variables that params.Env
// makes: Argo CD's repo-server sends them itself, encoded its own way.
func isParameterVar(kv string) bool {
	name, _, _ := strings.Cut(kv, "=")
	return name == params.ParametersVar || strings.HasPrefix(name, "PARAM_")
}

// dedupEnv keeps the last entry of each name, in the place of the first.
func dedupEnv(env []string) []string {
	index := make(map[string]int, len(env))
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if i, seen := index[name]; seen {
			out[i] = kv
			continue
		}
		index[name] = len(out)
		out = append(out, kv)
	}
	return out
}

// maxArgStrlen is Linux's MAX_ARG_STRLEN: the longest argument or
// environment entry (with its NUL) that a process can be started with.
const maxArgStrlen = 128 << 10

// tooBigToStart explains an E2BIG ("argument list too long") from starting
// cmd: almost always parameters too large for the environment.
func tooBigToStart(cmd *hookexec.Command, err error) error {
	largest, size, total := "", 0, 0
	for _, kv := range cmd.Env {
		total += len(kv) + 1
		if len(kv)+1 > size {
			largest, _, _ = strings.Cut(kv, "=")
			largest, size = "the variable "+largest, len(kv)+1
		}
	}
	for i, a := range cmd.Argv {
		total += len(a) + 1
		if len(a)+1 > size {
			largest, size = fmt.Sprintf("argument %d of the command", i), len(a)+1
		}
	}
	var why string
	if size > maxArgStrlen {
		why = fmt.Sprintf("%s is %d bytes long, and Linux allows one at most %d", largest, size, maxArgStrlen)
	} else {
		why = fmt.Sprintf("its environment and arguments take %d bytes, more than Linux allows in all; the largest is %s, %d bytes long", total, largest, size)
	}
	return fmt.Errorf("%s could not start: the parameters are too large for the environment: %s. Set fewer or smaller parameters; keep large values in files in the repository and pass their names: %w",
		shortCommand(cmd.Argv), why, err)
}

// shortCommand is a command line for messages and logs: its first line,
// cut to 80 bytes, in backquotes.
func shortCommand(argv []string) string {
	s := strings.Join(argv, " ")
	cut := false
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s, cut = s[:i], true
	}
	if len(s) > 80 {
		s, cut = document.Clip(s, 80), false
	}
	if cut {
		s += "..."
	}
	return "`" + s + "`"
}

// argoCommand writes argv as Argo CD's sidecar does in its errors and
// logs: joined by spaces, an argument holding white space Go-quoted (a
// script's line breaks become \n), an empty one as "".
func argoCommand(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		switch {
		case a == "":
			out[i] = `""`
		case strings.IndexFunc(a, unicode.IsSpace) >= 0:
			out[i] = strconv.Quote(a)
		default:
			out[i] = a
		}
	}
	return strings.Join(out, " ")
}

// A commandError is the error of one of the plugin's commands with its
// message reworded: the command line as Argo CD writes it, and advice.
type commandError struct {
	msg string
	err error
}

func (e *commandError) Error() string { return e.msg }
func (e *commandError) Unwrap() error { return e.err }

// explain rewords the error of running c: the command line that starts
// hookexec's messages (`argv joined by spaces`) becomes Argo CD's, so
// that the UI shows what Argo CD's sidecar would; and a program of the
// repository that is not executable gets the reason, when it is
// preserveFileMode left off.
func (p *CommandPlugin) explain(ctx context.Context, c Command, err error) error {
	argv := c.Argv()
	msg := err.Error()
	plain := "`" + strings.Join(argv, " ") + "`"
	if strings.HasPrefix(msg, plain) {
		msg = "`" + argoCommand(argv) + "`" + msg[len(plain):]
	}
	if !p.cfg.PreserveFileMode && strings.Contains(msg, "is not an executable file") && !filepath.IsAbs(argv[0]) && strings.ContainsRune(argv[0], '/') {
		msg += " (the repository's files are unpacked with mode 0644 unless the plugin.yaml sets spec.preserveFileMode: true, as in Argo CD)"
	}
	if errors.Is(err, hookexec.ErrOutputTooLarge) && strings.Contains(msg, "bytes to stderr") {
		msg += "; print less to stderr: a command that prints without end is stopped there (the bound is the command's stdout bound)"
	} else if errors.Is(err, hookexec.ErrOutputTooLarge) {
		msg += "; print less, or split the application: a plugin's output reaches the repo-server in one gRPC message (the sidecar's ARGOCD_GRPC_MAX_SIZE_MB, default 100; a command may print twice that, at least 64 MiB)"
	}
	var exitErr *hookexec.ExitError
	if errors.As(err, &exitErr) && exitErr.Signal == syscall.SIGXFSZ {
		if budget, flag := diskBudgetOf(ctx); budget > 0 {
			msg += fmt.Sprintf(" (a file it wrote reached the disk budget of a request, %s: cmp serve %s; write less, or raise it)", mib(budget), flag)
			return &commandError{msg: msg, err: fmt.Errorf("%w: %w", ErrDiskBudget, err)}
		}
	}
	if msg == err.Error() {
		return err
	}
	return &commandError{msg: msg, err: err}
}
