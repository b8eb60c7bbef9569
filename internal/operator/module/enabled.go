package module

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/strata-dev/strata/internal/hookexec"
)

// Defaults of Resolver.
const (
	DefaultScriptTimeout = 10 * time.Minute
	// DefaultMaxScriptOutput bounds the stdout of an enabled script and
	// the files it writes.
	DefaultMaxScriptOutput = 1 << 20
)

// Environment variables an enabled script gets.
const (
	EnvValuesPath    = "VALUES_PATH"
	EnvConfigPath    = "CONFIG_VALUES_PATH"
	EnvEnabledResult = "MODULE_ENABLED_RESULT"
	EnvEnabledReason = "MODULE_ENABLED_REASON"
)

// An EnabledSource gives the Resolver what it needs about a module.
// The values store implements it.
type EnabledSource interface {
	// EnabledFlag returns the merged `<key>Enabled` flag of m — false,
	// then modules/values.yaml, the module's values.yaml, global hooks'
	// patches, the config store, the last one set winning (addon-operator's
	// extenders in their order) — and the
	// name of the source that decided it ("default" when none did).
	EnabledFlag(m *Module) (enabled bool, from string)
	// ScriptValues returns the values (VALUES_PATH) and config values
	// (CONFIG_VALUES_PATH) of m's enabled script: {global, <key>}, with
	// enabledBefore as global.enabledModules in values.
	ScriptValues(m *Module, enabledBefore []string) (values, config map[string]any)
}

// A Decision is whether one module is enabled, and why.
type Decision struct {
	Module  *Module
	Enabled bool
	// Reason says why: the source of the flag, or the enabled script and
	// what it wrote to MODULE_ENABLED_REASON.
	Reason string
	// ScriptRan is whether the enabled script ran.
	ScriptRan bool
}

// A Resolver decides which modules are enabled. The zero value is usable.
type Resolver struct {
	// Env is the environment enabled scripts get besides the four
	// variables of the package (PATH and the like); nothing else is
	// inherited.
	Env []string
	// Timeout bounds one script; 0 means DefaultScriptTimeout, negative
	// none (the context still applies).
	Timeout time.Duration
	// Grace is hookexec.Command.Grace.
	Grace time.Duration
	// TempDir is where script workspaces are made; "" is os.TempDir().
	TempDir string
	// MaxOutput bounds a script's stdout and result files; 0 means
	// DefaultMaxScriptOutput.
	MaxOutput int64
}

// A ScriptError is an enabled script that failed or wrote a bad result.
type ScriptError struct {
	Module string
	Script string
	Err    error
}

func (e *ScriptError) Error() string {
	return fmt.Sprintf("module %s: enabled script %s: %v", e.Module, e.Script, e.Err)
}

func (e *ScriptError) Unwrap() error { return e.Err }

// Resolve decides, in the order of mods, which modules are enabled: a
// module whose merged flag is false is disabled; one whose flag is true is
// enabled unless its enabled script says false. Each script sees the
// modules enabled before it. The first script that fails stops Resolve
// with a *ScriptError (addon-operator retries the whole discovery).
func (r *Resolver) Resolve(ctx context.Context, mods []*Module, src EnabledSource) ([]Decision, error) {
	out := make([]Decision, 0, len(mods))
	var enabled []string
	for _, m := range mods {
		on, from := src.EnabledFlag(m)
		d := Decision{Module: m, Enabled: on}
		switch {
		case !on:
			d.Reason = fmt.Sprintf("%s is false in %s", EnabledKey(m.Key), from)
			if from == "" || from == "default" {
				d.Reason = fmt.Sprintf("%s is not set to true (modules are disabled by default)", EnabledKey(m.Key))
			}
		case m.EnabledScript == "":
			d.Reason = fmt.Sprintf("%s is true in %s", EnabledKey(m.Key), from)
		default:
			vals, cfg := src.ScriptValues(m, enabled)
			res, reason, err := r.RunScript(ctx, m, vals, cfg)
			if err != nil {
				return out, err
			}
			d.Enabled, d.ScriptRan = res, true
			switch {
			case res:
				d.Reason = fmt.Sprintf("%s is true in %s and the enabled script returned true", EnabledKey(m.Key), from)
			case reason != "":
				d.Reason = "the enabled script returned false: " + reason
			default:
				d.Reason = "the enabled script returned false"
			}
		}
		if d.Enabled {
			enabled = append(enabled, m.Name)
		}
		out = append(out, d)
	}
	return out, nil
}

// Workspace file names.
const (
	scriptValuesFile = "values.json"
	scriptConfigFile = "config_values.json"
	scriptResultFile = "module_enabled_result"
	scriptReasonFile = "module_enabled_reason"
)

// RunScript runs m's enabled script with values and config values, and
// returns what it wrote to MODULE_ENABLED_RESULT ("true" or "false") and,
// when false, to MODULE_ENABLED_REASON.
func (r *Resolver) RunScript(ctx context.Context, m *Module, values, config map[string]any) (enabled bool, reason string, err error) {
	fail := func(err error) (bool, string, error) {
		return false, "", &ScriptError{Module: m.Name, Script: m.EnabledScript, Err: err}
	}
	if m.EnabledScript == "" {
		return true, "", nil
	}
	ws, err := hookexec.NewWorkspace(r.TempDir)
	if err != nil {
		return fail(err)
	}
	defer ws.Close()
	for name, v := range map[string]map[string]any{scriptValuesFile: values, scriptConfigFile: config} {
		data, err := json.Marshal(v)
		if err != nil {
			return fail(fmt.Errorf("encoding %s: %w", name, err))
		}
		if err := ws.WriteFile(name, data); err != nil {
			return fail(err)
		}
	}
	for _, name := range []string{scriptResultFile, scriptReasonFile} {
		if err := ws.WriteFile(name, nil); err != nil {
			return fail(err)
		}
	}
	max := r.MaxOutput
	if max <= 0 {
		max = DefaultMaxScriptOutput
	}
	timeout := r.Timeout
	switch {
	case timeout == 0:
		timeout = DefaultScriptTimeout
	case timeout < 0:
		timeout = 0
	}
	env := append(append([]string(nil), r.Env...),
		EnvValuesPath+"="+ws.Path(scriptValuesFile),
		EnvConfigPath+"="+ws.Path(scriptConfigFile),
		EnvEnabledResult+"="+ws.Path(scriptResultFile),
		EnvEnabledReason+"="+ws.Path(scriptReasonFile),
	)
	cmd := &hookexec.Command{
		Argv:      []string{m.EnabledScript},
		Dir:       m.Path,
		Env:       env,
		Timeout:   timeout,
		Grace:     r.Grace,
		MaxStdout: max,
	}
	if _, err := cmd.Run(ctx); err != nil {
		return fail(err)
	}
	data, err := ws.ReadBounded(scriptResultFile, max)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	switch res := string(bytes.TrimSpace(data)); res {
	case "true":
		return true, "", nil
	case "false":
	case "":
		return fail(fmt.Errorf("wrote nothing to $%s; write true or false into it", EnvEnabledResult))
	default:
		return fail(fmt.Errorf("wrote %q to $%s; write true or false", clip(res, 64), EnvEnabledResult))
	}
	why, err := ws.ReadBounded(scriptReasonFile, max)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	return false, strings.TrimSpace(string(why)), nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
