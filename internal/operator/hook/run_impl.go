package hook

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

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
)

func orDefault(n, def int64) int64 {
	if n <= 0 {
		return def
	}
	return n
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

func (r *Runner) config(ctx context.Context, h *Hook) (*Config, error) {
	cmd := r.command([]string{h.Path, "--config"}, r.Env, orDefault(r.MaxConfigBytes, DefaultMaxConfigBytes))
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
	ws, err := hookexec.NewWorkspace(r.TempDir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h, err)
	}
	defer ws.Close()
	for _, f := range []struct {
		name string
		data []byte
	}{{fileContext, bc}, {fileValues, in.Values}, {fileConfigValues, in.ConfigValues}} {
		data := f.data
		if data == nil {
			data = []byte("{}")
		}
		if err := ws.WriteFile(f.name, data); err != nil {
			return nil, fmt.Errorf("%s: %w", h, err)
		}
	}
	env := make([]string, 0, len(r.Env)+7)
	env = append(env, r.Env...)
	env = append(env,
		"BINDING_CONTEXT_PATH="+ws.Path(fileContext),
		"VALUES_PATH="+ws.Path(fileValues),
		"CONFIG_VALUES_PATH="+ws.Path(fileConfigValues),
		"VALUES_JSON_PATCH_PATH="+ws.Path(fileValuesPatch),
		"CONFIG_VALUES_JSON_PATCH_PATH="+ws.Path(fileConfigPatch),
		"METRICS_PATH="+ws.Path(fileMetrics),
		"KUBERNETES_PATCH_PATH="+ws.Path(fileKubePatch),
	)
	cmd := r.command([]string{h.Path}, env, orDefault(r.MaxLogBytes, DefaultMaxLogBytes))
	res, err := cmd.Run(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s failed: %w", h, err)
	}
	out := &Output{Stdout: res.Stdout, Stderr: res.Stderr, Duration: res.Duration}
	max := orDefault(r.MaxOutputBytes, DefaultMaxOutputBytes)
	read := func(name, role string) ([]byte, string, error) {
		source := role
		data, err := ws.ReadBounded(name, max)
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
	} else if err := out.ValuesPatch.CheckScope(h.Kind, h.ModuleKey, src); err != nil {
		return nil, fmt.Errorf("%s: %w", h, err)
	}
	if data, src, err := read(fileConfigPatch, "config values patch ($CONFIG_VALUES_JSON_PATCH_PATH)"); err != nil {
		return nil, err
	} else if out.ConfigValuesPatch, err = ParsePatch(data, src); err != nil {
		return nil, fmt.Errorf("%s: %w", h, err)
	} else if err := out.ConfigValuesPatch.CheckScope(h.Kind, h.ModuleKey, src); err != nil {
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
	return out, nil
}
