package hook

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/strata-dev/strata/internal/hookexec"
)

// The files of a run, in its workspace.
const (
	fileContext      = "binding-context.json"
	fileValues       = "values.json"
	fileConfigValues = "config-values.json"
	fileValuesPatch  = "values-patch.json"
	fileConfigPatch  = "config-values-patch.json"
	fileMetrics      = "metrics.json"
	fileKubePatch    = "kubernetes-patch.json"
	fileResponse     = "response.json" // a webhook run's answer
)

func orDefault(n, def int64) int64 {
	if n <= 0 {
		return def
	}
	return n
}

// argv returns the command line of hook h with args.
func argv(h *Hook, args ...string) []string {
	if h.PythonVenv != "" {
		return append([]string{filepath.Join(h.PythonVenv, "bin", "python3"), h.Path}, args...)
	}
	return append([]string{h.Path}, args...)
}

// hookEnv returns env with what h needs besides.
func hookEnv(h *Hook, env []string) []string {
	if h.PythonVenv != "" {
		return append(env, "PYTHONHOME="+h.PythonVenv)
	}
	return env
}

func (r *Runner) command(argv []string, env []string, maxStdout int64) *hookexec.Command {
	return &hookexec.Command{
		Argv:      argv,
		Env:       env,
		Timeout:   r.Timeout,
		Grace:     r.Grace,
		MaxStdout: maxStdout,
	}
}

// acquire returns the runs' directory (made on first use) and the prefix
// of a run's files there, apart from those of the runs going on. The
// input files of a prefix are left for the next run that gets it, which
// removes them just before writing its own.
func (r *Runner) acquire() (*hookexec.Workspace, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ws == nil {
		ws, err := hookexec.NewWorkspace(r.TempDir)
		if err != nil {
			return nil, "", err
		}
		r.ws = ws
	}
	if n := len(r.free); n > 0 {
		p := r.free[n-1]
		r.free = r.free[:n-1]
		return r.ws, p, nil
	}
	return r.ws, strconv.FormatUint(r.runs.Add(1), 10) + "-", nil
}

// release removes a run's output files and gives its prefix back.
func (r *Runner) release(ws *hookexec.Workspace, prefix string) {
	for _, f := range []string{fileValuesPatch, fileConfigPatch, fileMetrics, fileKubePatch, fileResponse} {
		_ = os.RemoveAll(ws.Path(prefix + f))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ws == ws {
		r.free = append(r.free, prefix)
	}
}

func (r *Runner) config(ctx context.Context, h *Hook) (*Config, error) {
	cmd := r.command(argv(h, "--config"), hookEnv(h, slices.Clip(r.Env)), orDefault(r.MaxConfigBytes, DefaultMaxConfigBytes))
	res, err := cmd.Run(ctx)
	if err != nil {
		if errors.Is(err, hookexec.ErrOutputTooLarge) {
			return nil, fmt.Errorf("%s: --config printed more than %d bytes; print only the bindings: %w", h, orDefault(r.MaxConfigBytes, DefaultMaxConfigBytes), err)
		}
		return nil, fmt.Errorf("%s: getting its configuration: %w", h, err)
	}
	return ParseConfig(res.Stdout, h.Kind, h.Name)
}

func (r *Runner) run(ctx context.Context, h *Hook, in Input) (*Output, error) {
	if h.Kind == Module && h.ModuleKey == "" {
		return nil, fmt.Errorf("%s: a module hook needs its ModuleKey", h)
	}
	version := in.Version
	if version == "" {
		version = "v1"
	}
	bc, err := EncodeContexts(version, in.Contexts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h, err)
	}
	ws, prefix, err := r.acquire()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h, err)
	}
	name := func(f string) string { return prefix + f }
	defer r.release(ws, prefix)
	for _, f := range []struct {
		name string
		data []byte
	}{{fileContext, bc}, {fileValues, in.Values}, {fileConfigValues, in.ConfigValues}} {
		data := f.data
		if data == nil {
			data = []byte("{}")
		}
		// The file of the last run is removed, not truncated: ext4
		// flushes a file truncated and written again (auto_da_alloc),
		// which costs milliseconds; and the last hook may have left
		// something else in its place.
		p := ws.Path(name(f.name))
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			_ = os.RemoveAll(p)
		}
		if err := ws.WriteFile(name(f.name), data); err != nil {
			return nil, fmt.Errorf("%s: %w", h, err)
		}
	}
	env := make([]string, 0, len(r.Env)+8)
	env = append(env, r.Env...)
	env = append(env,
		"BINDING_CONTEXT_PATH="+ws.Path(name(fileContext)),
		"VALUES_PATH="+ws.Path(name(fileValues)),
		"CONFIG_VALUES_PATH="+ws.Path(name(fileConfigValues)),
		"VALUES_JSON_PATCH_PATH="+ws.Path(name(fileValuesPatch)),
		"CONFIG_VALUES_JSON_PATCH_PATH="+ws.Path(name(fileConfigPatch)),
		"METRICS_PATH="+ws.Path(name(fileMetrics)),
		"KUBERNETES_PATCH_PATH="+ws.Path(name(fileKubePatch)),
	)
	env = append(env, responseEnv(in.Contexts, ws.Path(name(fileResponse)))...)
	args := argv(h)
	if h.Batch != "" {
		args = append([]string{h.Path}, batchArgs(h)...)
		env = append(env, batchEnv(h)...)
	}
	cmd := r.command(args, hookEnv(h, env), orDefault(r.MaxLogBytes, DefaultMaxLogBytes))
	res, err := cmd.Run(ctx)
	if err != nil {
		fe := &FailedError{Err: fmt.Errorf("%s failed: %w", h, err)}
		if res != nil {
			fe.Usage = &res.Usage
		}
		// Status patches marked ignoreHookError are applied although the
		// hook failed, as shell-operator does; a file that does not parse
		// gives none (the hook's failure is the error reported).
		if data, rerr := ws.ReadBounded(prefix+fileKubePatch, orDefault(r.MaxOutputBytes, DefaultMaxOutputBytes)); rerr == nil {
			if ops, perr := ParseKubernetesPatch(data, "kubernetes patch ($KUBERNETES_PATCH_PATH)"); perr == nil {
				fe.StatusPatches = StatusPatchesOnError(ops)
			}
		}
		return nil, fe
	}
	out := &Output{Stdout: res.Stdout, Stderr: res.Stderr, Duration: res.Duration, Usage: res.Usage}
	max := orDefault(r.MaxOutputBytes, DefaultMaxOutputBytes)
	read := func(name, role string) ([]byte, string, error) {
		source := role
		data, err := ws.ReadBounded(prefix+name, max)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, source, nil
		}
		if err != nil {
			return nil, source, fmt.Errorf("%s: %s: %w", h, role, err)
		}
		return data, source, nil
	}
	if data, src, err := read(fileValuesPatch, "values patch ($VALUES_JSON_PATCH_PATH)"); err != nil {
		return nil, err
	} else if out.ValuesPatch, err = ParsePatch(data, src); err != nil {
		return nil, fmt.Errorf("%s: %w", h, err)
	} else if err := r.checkPatch(h, out.ValuesPatch, src); err != nil {
		return nil, fmt.Errorf("%s: %w", h, err)
	}
	if data, src, err := read(fileConfigPatch, "config values patch ($CONFIG_VALUES_JSON_PATCH_PATH)"); err != nil {
		return nil, err
	} else if out.ConfigValuesPatch, err = ParsePatch(data, src); err != nil {
		return nil, fmt.Errorf("%s: %w", h, err)
	} else if err := r.checkPatch(h, out.ConfigValuesPatch, src); err != nil {
		return nil, fmt.Errorf("%s: %w", h, err)
	}
	if data, src, err := read(fileMetrics, "metrics ($METRICS_PATH)"); err != nil {
		return nil, err
	} else if out.Metrics, err = ParseMetrics(data, src); err != nil {
		return nil, fmt.Errorf("%s: %w", h, err)
	}
	if data, src, err := read(fileKubePatch, "kubernetes patch ($KUBERNETES_PATCH_PATH)"); err != nil {
		return nil, err
	} else if out.KubernetesPatch, err = ParseKubernetesPatch(data, src); err != nil {
		return nil, fmt.Errorf("%s: %w", h, err)
	}
	if len(responseEnv(in.Contexts, "")) > 0 {
		if out.Response, _, err = read(fileResponse, "webhook response"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkPatch checks a patch of h with CheckPatch, when it is set.
func (r *Runner) checkPatch(h *Hook, p Patch, source string) error {
	if r.CheckPatch == nil || len(p) == 0 {
		return nil
	}
	return r.CheckPatch(h, p, source)
}
