package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/strata-dev/strata/internal/hookexec"
	"github.com/strata-dev/strata/internal/operator/config"
	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/store"
	"github.com/strata-dev/strata/internal/values"
)

// changes tells what a hook run changed.
type changes struct {
	global  bool // global values
	enabled bool // *Enabled flags (by a global hook's patch)
	module  bool // the hook's module's values
	config  config.Change
	// response is what a webhook run wrote to its response file.
	response []byte
}

// runHook runs one hook with contexts and stores what it returned: the
// values patch (validated, then stored), the config patch (written back
// to the config store), metrics. rec, when set, collects the history
// line instead of the engine.
func (e *Engine) runHook(ctx context.Context, he *hookEntry, b hook.BindingType, contexts []hook.BindingContext, queueName, activation string, rec func(string)) (changes, error) {
	var ch changes
	key := store.GlobalKey
	var enabledModules []string
	if he.module != "" {
		key = he.h.ModuleKey
		// Module hooks see global.enabledModules too (the seed's rule).
		enabledModules = e.enabledModules()
	}
	vals := e.back.values.HookValues(key, enabledModules)
	cfgVals := e.back.values.ConfigValues(key)
	vjson, err := json.Marshal(vals)
	if err != nil {
		return ch, fmt.Errorf("%s: encoding values: %w", he.label(), err)
	}
	cjson, err := json.Marshal(cfgVals)
	if err != nil {
		return ch, fmt.Errorf("%s: encoding config values: %w", he.label(), err)
	}
	e.mu.Lock()
	kube := he.kube // replaced when the module is disabled
	e.mu.Unlock()
	filled := kube.Fill(contexts)
	binding := string(b)
	if len(contexts) > 0 && contexts[0].Binding != "" {
		binding = contexts[0].Binding
	}
	line := he.label() + " " + string(b)
	if b == hook.Kubernetes || b == hook.Schedule || b == hook.KubernetesValidating || b == hook.KubernetesConversion {
		line += " " + binding
		if len(contexts) > 0 && contexts[0].Type != "" {
			line += " " + string(contexts[0].Type)
		}
		if len(contexts) > 1 {
			line += fmt.Sprintf(" (%d contexts)", len(contexts))
		}
	}
	if rec == nil {
		rec = e.record
	}
	rec(line)
	start := time.Now()
	out, err := e.runner.Run(ctx, he.h, hook.Input{Version: he.cfg.Version, Contexts: filled, Values: vjson, ConfigValues: cjson})
	took := time.Since(start)
	var usage *hookexec.Usage
	var failed *hook.FailedError
	switch {
	case out != nil:
		usage = &out.Usage
	case errors.As(err, &failed):
		usage = failed.Usage
	}
	e.observeHook(he, binding, activation, queueName, took, usage, err)
	// One line per hook run at info, as addon-operator logs them.
	if err != nil {
		e.log.Info("hook run", "hook", he.label(), "binding", binding, "type", string(b), "queue", queueName,
			"duration", took.Round(time.Millisecond).String(), "outcome", "failed", "error", oneLine(err.Error()))
	} else {
		e.log.Info("hook run", "hook", he.label(), "binding", binding, "type", string(b), "queue", queueName,
			"duration", took.Round(time.Millisecond).String(), "outcome", "ok")
	}
	if err != nil {
		if failed != nil && len(failed.StatusPatches) > 0 {
			if perr := e.back.patcher.Apply(ctx, he.label(), failed.StatusPatches); perr != nil {
				e.log.Error("applying the status patches (ignoreHookError) of a failed hook", "hook", he.label(), "error", perr)
			}
		}
		return ch, err
	}
	ch.response = out.Response
	if len(out.Stderr) > 0 || len(out.Stdout) > 0 {
		e.log.Debug("hook output", "hook", he.label(), "stdout", string(out.Stdout), "stderr", string(out.Stderr))
	}
	// Config patch first (it can still be refused), then the values patch:
	// a refused values patch must leave the config as it was, so the
	// config patch is checked against the store's schemas before either
	// is stored, and written last.
	cfgOps, valuesOps := out.ConfigValuesPatch, out.ValuesPatch
	if he.module == "" {
		// As addon-operator: a global hook's config patch sets
		// <moduleKey>Enabled flags the way its values patch does (in
		// memory, before the values patch); they are not written to the
		// config store.
		var flags hook.Patch
		cfgOps, flags = splitEnabledOps(cfgOps)
		if len(flags) > 0 {
			valuesOps = append(flags, valuesOps...)
		}
	}
	var cfgPatch *values.JSONPatch
	if len(cfgOps) > 0 {
		cfgPatch, err = values.NewJSONPatch(cfgOps.Maps(), he.label()+" $CONFIG_VALUES_JSON_PATCH_PATH", nil)
		if err != nil {
			return ch, fmt.Errorf("%s: config values patch: %w", he.label(), err)
		}
		if _, err := e.back.values.Config().Apply(cfgPatch); err != nil {
			return ch, fmt.Errorf("%s: config values patch: %w", he.label(), err)
		}
	}
	if len(valuesOps) > 0 {
		res, err := e.back.values.ApplyPatch(store.Patch{Scope: key, Hook: he.h.Name, Binding: binding, Time: start,
			Ops: valuesOps, Source: "values patch ($VALUES_JSON_PATCH_PATH)"})
		if err != nil {
			return ch, fmt.Errorf("%s: %w", he.label(), err)
		}
		if he.module == "" {
			ch.global = res.Changed
			ch.enabled = len(res.Enabled) > 0
		} else {
			ch.module = res.Changed
		}
	}
	if cfgPatch != nil {
		cc, err := e.back.patchConfig(ctx, cfgPatch)
		if err != nil {
			return ch, fmt.Errorf("%s: writing the config patch back: %w", he.label(), err)
		}
		ch.config = cc
		ch.global = ch.global || cc.Global
		ch.enabled = ch.enabled || len(cc.Enabled) > 0
		if he.module != "" {
			for _, k := range cc.Modules {
				if k == key {
					ch.module = true
				}
			}
		}
	}
	if len(out.Metrics) > 0 {
		var err error
		if he.module != "" {
			err = e.hookMets.ApplyModule(he.module, he.h.Name, out.Metrics)
		} else {
			err = e.hookMets.Apply(he.h.Name, out.Metrics)
		}
		if err != nil {
			return ch, fmt.Errorf("%s: $METRICS_PATH: %w", he.label(), err)
		}
	}
	if len(out.KubernetesPatch) > 0 {
		if err := e.back.patcher.Apply(ctx, he.label(), out.KubernetesPatch); err != nil {
			return ch, fmt.Errorf("%s: $KUBERNETES_PATCH_PATH: %w", he.label(), err)
		}
	}
	e.observeValues(key)
	return ch, nil
}

// observeHook updates the hook run metrics; usage is nil when the hook's
// process did not start (or its outputs were refused after it ran).
func (e *Engine) observeHook(he *hookEntry, binding, activation, queueName string, took time.Duration, usage *hookexec.Usage, err error) {
	allow := allowFailure(he.cfg, binding)
	if he.module == "" {
		l := []string{he.h.Name, binding, activation, queueName}
		e.m.globalHookSeconds.WithLabelValues(l...).Observe(took.Seconds())
		if usage != nil {
			e.m.globalHookSysCPU.WithLabelValues(l...).Observe(usage.SystemTime.Seconds())
			e.m.globalHookUserCPU.WithLabelValues(l...).Observe(usage.UserTime.Seconds())
			e.m.globalHookMaxRSS.WithLabelValues(l...).Set(float64(usage.MaxRSS))
		}
		switch {
		case err == nil:
			e.m.globalHookSuccesses.WithLabelValues(l...).Inc()
		case allow:
			e.m.globalHookAllowed.WithLabelValues(l...).Inc()
		default:
			e.m.globalHookErrors.WithLabelValues(l...).Inc()
		}
		return
	}
	l := []string{he.module, he.h.Name, binding, activation, queueName}
	e.m.moduleHookSeconds.WithLabelValues(l...).Observe(took.Seconds())
	if usage != nil {
		e.m.moduleHookSysCPU.WithLabelValues(l...).Observe(usage.SystemTime.Seconds())
		e.m.moduleHookUserCPU.WithLabelValues(l...).Observe(usage.UserTime.Seconds())
		e.m.moduleHookMaxRSS.WithLabelValues(l...).Set(float64(usage.MaxRSS))
	}
	switch {
	case err == nil:
		e.m.moduleHookSuccesses.WithLabelValues(l...).Inc()
	case allow:
		e.m.moduleHookAllowed.WithLabelValues(l...).Inc()
	default:
		e.m.moduleHookErrors.WithLabelValues(l...).Inc()
	}
}

// allowFailure reports whether the schedule or kubernetes binding called
// binding allows failure.
func allowFailure(c *hook.Config, binding string) bool {
	for _, s := range c.Schedules {
		if s.Name == binding {
			return s.AllowFailure
		}
	}
	if k := c.KubernetesBinding(binding); k != nil {
		return k.AllowFailure
	}
	return false
}

func (e *Engine) observeValues(key string) {
	v := e.back.values.Values(key)
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	if key == store.GlobalKey {
		e.m.globalValuesBytes.Set(float64(len(data)))
		return
	}
	if m := e.moduleByKey(key); m != nil {
		e.m.moduleValuesBytes.WithLabelValues(m.Name).Set(float64(len(data)))
	}
}

// enabledModules returns the enabled modules, in order.
func (e *Engine) enabledModules() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string{}, e.enabled...)
}

// splitEnabledOps splits a global hook's config patch into the operations
// on config sections and those on /<moduleKey>Enabled flags.
func splitEnabledOps(p hook.Patch) (sections, flags hook.Patch) {
	for _, o := range p {
		root, _, _ := strings.Cut(strings.TrimPrefix(o.Path, "/"), "/")
		if len(root) > len(module.EnabledSuffix) && strings.HasSuffix(root, module.EnabledSuffix) {
			flags = append(flags, o)
			continue
		}
		sections = append(sections, o)
	}
	return sections, flags
}
