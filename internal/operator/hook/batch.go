package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/strata-dev/strata/internal/hookexec"
)

// Module-sdk batch hooks (github.com/deckhouse/module-sdk): one compiled
// file, without an extension, that holds several hooks. addon-operator
// knows one by its answer to `hook list` ("Found N items:", then a line
// per hook), reads the hooks' configurations from `hook config` (JSON, see
// batchConfig), and runs hook number N with `hook run N` (the readiness
// hook with `hook ready`) and the same files and variables as any hook,
// plus MODULE_NAME. Each hook of the file is a hook of its own ("sub-hook")
// with its own bindings, queue runs, limiter, logs and metrics.

// BatchReady is Hook.Batch of a batch file's readiness hook.
const BatchReady = "ready"

// batchHookFound is what a module-sdk batch hook prints for `hook list`
// (addon-operator's test of a batch hook: 1 to 9999 items).
var batchHookFound = regexp.MustCompile(`Found [1-9][0-9]{0,3} items`)

// batchConfig is the output of `hook config` of module-sdk: version "v1",
// a configuration per hook (hook N is hooks[N]), and an optional readiness
// hook. Unknown fields are ignored, as addon-operator ignores them, so
// that hooks built with a newer module-sdk still run.
type batchConfig struct {
	Version          string            `json:"version"`
	Hooks            []batchHookConfig `json:"hooks"`
	Readiness        *batchHookConfig  `json:"readiness"`
	HasSettingsCheck bool              `json:"has_settings_check"`
}

type batchHookConfig struct {
	ConfigVersion string `json:"configVersion"`
	Metadata      struct {
		Name string `json:"name"`
		Path string `json:"path"`
	} `json:"metadata"`
	Schedule []struct {
		Name    string `json:"name"`
		Crontab string `json:"crontab"`
		Queue   string `json:"queue"`
	} `json:"schedule"`
	Kubernetes         []batchKubernetes `json:"kubernetes"`
	OnStartup          *uint             `json:"onStartup"`
	OnBeforeHelm       *uint             `json:"beforeHelm"`
	OnAfterHelm        *uint             `json:"afterHelm"`
	OnBeforeDeleteHelm *uint             `json:"beforeDeleteHelm"`
	OnAfterDeleteHelm  *uint             `json:"afterDeleteHelm"`
	Settings           *struct {
		// ExecutionMinInterval is a Go time.Duration: nanoseconds.
		ExecutionMinInterval time.Duration `json:"executionMinInterval"`
		ExecutionBurst       int           `json:"executionBurst"`
	} `json:"settings"`
}

type batchKubernetes struct {
	Name              string          `json:"name"`
	APIVersion        string          `json:"apiVersion"`
	Kind              string          `json:"kind"`
	NameSelector      json.RawMessage `json:"nameSelector"`
	NamespaceSelector json.RawMessage `json:"namespace"`
	LabelSelector     json.RawMessage `json:"labelSelector"`
	FieldSelector     json.RawMessage `json:"fieldSelector"`

	ExecuteHookOnEvents          *bool    `json:"executeHookOnEvent"`
	ExecuteHookOnSynchronization *bool    `json:"executeHookOnSynchronization"`
	WaitForSynchronization       *bool    `json:"waitForSynchronization"`
	KeepFullObjectsInMemory      *bool    `json:"keepFullObjectsInMemory"`
	JqFilter                     string   `json:"jqFilter"`
	AllowFailure                 *bool    `json:"allowFailure"`
	ResynchronizationPeriod      string   `json:"resynchronizationPeriod"`
	IncludeSnapshotsFrom         []string `json:"includeSnapshotsFrom"`
	Queue                        string   `json:"queue"`
}

// batchGroup is the group addon-operator puts every binding of a batch
// hook in: each run gets one Group binding context with the snapshots of
// all the hook's kubernetes bindings.
const batchGroup = "main"

// parseBatchConfig parses the output of `hook config` of batch hook h.
// The output is a {"version":"v1","hooks":[...]} document, or the older
// bare list of hook configurations.
func parseBatchConfig(data []byte, h *Hook) (*batchConfig, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%s: `hook config` printed nothing; a module-sdk batch hook prints its hooks' configurations as JSON", h)
	}
	var bc batchConfig
	if trimmed[0] == '[' {
		// The format before module-sdk's BatchHookConfig (addon-operator
		// still reads it).
		if err := json.Unmarshal(trimmed, &bc.Hooks); err != nil {
			return nil, fmt.Errorf("%s: `hook config` output (a list of hook configurations): %w", h, err)
		}
		bc.Version = "v1"
	} else if err := json.Unmarshal(trimmed, &bc); err != nil {
		return nil, fmt.Errorf("%s: `hook config` output: %w", h, err)
	}
	if bc.Version == "" {
		var level struct {
			Level string `json:"level"`
		}
		if json.Unmarshal(trimmed, &level) == nil && level.Level != "" {
			return nil, fmt.Errorf("%s: `hook config` printed a log line instead of the configuration: %s", h, clip(trimmed))
		}
	}
	if bc.Version != "v1" {
		return nil, fmt.Errorf("%s: `hook config` output has version %q; strata reads version \"v1\" of module-sdk's batch hook configuration", h, bc.Version)
	}
	if len(bc.Hooks) == 0 && bc.Readiness == nil {
		return nil, fmt.Errorf("%s: `hook config` lists no hooks", h)
	}
	return &bc, nil
}

func clip(b []byte) string {
	const n = 200
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// shellConfig returns c as a shell-operator configuration (what a shell
// hook prints for --config), as addon-operator converts it: lifecycle
// orders (beforeHelm and afterHelm are beforeAll and afterAll for a global
// hook), schedules and kubernetes bindings in group "main", kubernetes
// bindings executed on Synchronization and waited for unless the hook
// says otherwise, objects kept in memory only when asked, executeHookOnEvent
// false as no events.
func (c *batchHookConfig) shellConfig(k Kind) ([]byte, error) {
	out := map[string]any{}
	version := c.ConfigVersion
	if version == "" {
		version = "v1"
	}
	out["configVersion"] = version
	set := func(key string, v *uint) {
		if v != nil {
			out[key] = *v
		}
	}
	set("onStartup", c.OnStartup)
	if k == Global {
		set("beforeAll", c.OnBeforeHelm)
		set("afterAll", c.OnAfterHelm)
	} else {
		set("beforeHelm", c.OnBeforeHelm)
		set("afterHelm", c.OnAfterHelm)
		set("beforeDeleteHelm", c.OnBeforeDeleteHelm)
		set("afterDeleteHelm", c.OnAfterDeleteHelm)
	}
	if c.Settings != nil {
		out["settings"] = map[string]any{
			"executionMinInterval": c.Settings.ExecutionMinInterval.String(),
			"executionBurst":       c.Settings.ExecutionBurst,
		}
	}
	var schedules []any
	for _, s := range c.Schedule {
		m := map[string]any{"crontab": s.Crontab, "group": batchGroup}
		if s.Name != "" {
			m["name"] = s.Name
		}
		if s.Queue != "" {
			m["queue"] = s.Queue
		}
		schedules = append(schedules, m)
	}
	if schedules != nil {
		out["schedule"] = schedules
	}
	var kube []any
	for _, b := range c.Kubernetes {
		m := map[string]any{
			"name":                         b.Name,
			"kind":                         b.Kind,
			"executeHookOnSynchronization": true,
			"waitForSynchronization":       true,
			"keepFullObjectsInMemory":      false,
			"group":                        batchGroup,
		}
		if b.APIVersion != "" {
			m["apiVersion"] = b.APIVersion
		}
		raw := func(key string, v json.RawMessage) {
			if len(v) > 0 && string(v) != "null" {
				m[key] = v
			}
		}
		raw("nameSelector", b.NameSelector)
		raw("namespace", b.NamespaceSelector)
		raw("labelSelector", b.LabelSelector)
		raw("fieldSelector", b.FieldSelector)
		if b.JqFilter != "" {
			m["jqFilter"] = b.JqFilter
		}
		if b.ExecuteHookOnEvents != nil && !*b.ExecuteHookOnEvents {
			m["executeHookOnEvent"] = []string{}
		}
		if b.ExecuteHookOnSynchronization != nil {
			m["executeHookOnSynchronization"] = *b.ExecuteHookOnSynchronization
		}
		if b.WaitForSynchronization != nil {
			m["waitForSynchronization"] = *b.WaitForSynchronization
		}
		if b.KeepFullObjectsInMemory != nil {
			m["keepFullObjectsInMemory"] = *b.KeepFullObjectsInMemory
		}
		if b.AllowFailure != nil {
			m["allowFailure"] = *b.AllowFailure
		}
		if b.ResynchronizationPeriod != "" {
			m["resynchronizationPeriod"] = b.ResynchronizationPeriod
		}
		if len(b.IncludeSnapshotsFrom) > 0 {
			m["includeSnapshotsFrom"] = b.IncludeSnapshotsFrom
		}
		if b.Queue != "" {
			m["queue"] = b.Queue
		}
		kube = append(kube, m)
	}
	if kube != nil {
		out["kubernetes"] = kube
	}
	return json.Marshal(out)
}

// subHookName is the name addon-operator gives hook key (an index, or
// "ready") of batch file h: "hooks/x:NAME:N" for a module's hook,
// "x-NAME-N" for a global one, "x-readiness" for the readiness hook.
func subHookName(h *Hook, key, name string) string {
	switch {
	case key == BatchReady:
		return h.Name + "-readiness"
	case h.Kind == Global:
		return h.Name + "-" + name + "-" + key
	}
	return h.Name + ":" + name + ":" + key
}

// A Configured hook is a hook with its configuration.
type Configured struct {
	Hook   *Hook
	Config *Config
}

// Configure returns the hooks file h holds, each with its configuration:
// h itself with what `h --config` prints, or, when h is a module-sdk batch
// hook (an executable without an extension whose --config fails or does
// not parse and that answers `hook list` as those do), one hook per entry
// of its `hook config`, in their order, the readiness hook first.
//
// --config is tried first so that a shell hook is never run with other
// arguments (addon-operator runs every file without an extension with
// `hook config` and `hook list`, which runs a shell hook's body).
func (r *Runner) Configure(ctx context.Context, h *Hook) ([]Configured, error) {
	c, err := r.config(ctx, h)
	if err == nil {
		return []Configured{{Hook: h, Config: c}}, nil
	}
	if h.Batch != "" || filepath.Ext(h.Path) != "" || h.PythonVenv != "" || !r.isBatch(ctx, h) {
		return nil, err
	}
	return r.batchConfigure(ctx, h)
}

// isBatch reports whether h answers `hook list` as a module-sdk batch
// hook does.
func (r *Runner) isBatch(ctx context.Context, h *Hook) bool {
	res, err := r.command([]string{h.Path, "hook", "list"}, slices.Clip(r.Env), 64<<10).Run(ctx)
	return err == nil && batchHookFound.Match(res.Stdout)
}

func (r *Runner) batchConfigure(ctx context.Context, h *Hook) ([]Configured, error) {
	max := orDefault(r.MaxConfigBytes, DefaultMaxConfigBytes)
	res, err := r.command([]string{h.Path, "hook", "config"}, slices.Clip(r.Env), max).Run(ctx)
	if err != nil {
		if errors.Is(err, hookexec.ErrOutputTooLarge) {
			return nil, fmt.Errorf("%s (a module-sdk batch hook): `hook config` printed more than %d bytes: %w", h, max, err)
		}
		return nil, fmt.Errorf("%s (a module-sdk batch hook): running `hook config`: %w", h, err)
	}
	bc, err := parseBatchConfig(res.Stdout, h)
	if err != nil {
		return nil, err
	}
	var out []Configured
	var errs []error
	add := func(key string, hc *batchHookConfig) {
		sub := *h
		sub.Batch = key
		sub.Name = subHookName(h, key, hc.Metadata.Name)
		doc, err := hc.shellConfig(h.Kind)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", &sub, err))
			return
		}
		c, err := ParseConfig(doc, h.Kind, sub.Name)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (hook %s of module-sdk batch hook %s): %w", &sub, key, h.Name, err))
			return
		}
		out = append(out, Configured{Hook: &sub, Config: c})
	}
	if bc.Readiness != nil {
		add(BatchReady, bc.Readiness)
	}
	for i := range bc.Hooks {
		add(strconv.Itoa(i), &bc.Hooks[i])
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// batchArgs returns the arguments that run sub-hook h of a batch file.
func batchArgs(h *Hook) []string {
	if h.Batch == BatchReady {
		return []string{"hook", "ready"}
	}
	return []string{"hook", "run", h.Batch}
}

// batchEnv returns what a batch sub-hook gets besides the files:
// MODULE_NAME (the module's name, "global" for a global hook) and the
// application variables addon-operator sets empty for a module.
func batchEnv(h *Hook) []string {
	name := h.Module
	if h.Kind == Global {
		name = "global"
	}
	return []string{"MODULE_NAME=" + name, "APPLICATION_NAME=", "APPLICATION_NAMESPACE="}
}
