package operator

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/strata-dev/strata/internal/operator/debug"
	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/queue"
	"github.com/strata-dev/strata/internal/operator/store"
	"github.com/strata-dev/strata/internal/values"
)

var _ debug.Source = (*Engine)(nil)

// Queues implements debug.Source.
func (e *Engine) Queues() any { return e.queues.Snapshot() }

// PatchView is a stored values patch as the debug API shows it.
type PatchView struct {
	Hook       string `json:"hook"`
	Binding    string `json:"binding,omitempty"`
	Time       string `json:"time,omitempty"`
	Operations []any  `json:"operations"`
}

// Global implements debug.Source.
func (e *Engine) Global(what string, explain bool) (any, error) {
	if e.back == nil || e.back.values == nil {
		return nil, fmt.Errorf("the operator is starting: %w", debug.ErrNotFound)
	}
	switch what {
	case "list":
		// addon-operator's answer: the global hooks' names.
		e.mu.Lock()
		names := []string{}
		for _, he := range e.global {
			names = append(names, he.h.Name)
		}
		e.mu.Unlock()
		return map[string][]string{"globalHooks": names}, nil
	case "values":
		if explain {
			return e.explain(store.GlobalKey)
		}
		return map[string]any{store.GlobalKey: nonNilMap(e.back.values.Values(store.GlobalKey))}, nil
	case "config":
		return e.back.values.ConfigValues(store.GlobalKey), nil
	case "patches":
		return patchViews(e.back.values.Patches(store.GlobalKey)), nil
	case "snapshots":
		e.mu.Lock()
		hooks := e.global
		e.mu.Unlock()
		return e.snapshots(hooks), nil
	}
	return nil, fmt.Errorf("global %s: %w", what, debug.ErrNotFound)
}

// Modules implements debug.Source.
func (e *Engine) Modules() any {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []ModuleView{}
	if e.modules == nil {
		return out
	}
	for _, m := range e.modules.Modules {
		ms := e.mods[m.Name]
		v := ModuleView{Name: m.Name, Key: m.Key, Order: m.Order, Path: m.Path, State: "disabled", Reason: ms.reason}
		if ms.enabled {
			v.State = "enabled"
		}
		if ms.lastErr != "" {
			v.State, v.Reason = "failed", firstLine(ms.lastErr)
		}
		for _, he := range ms.hooks {
			v.Hooks = append(v.Hooks, he.h.Name)
		}
		out = append(out, v)
	}
	return out
}

// Hooks implements debug.Source: the global hooks, then the hooks of
// the modules whose hooks are configured (enabled once), in module order.
func (e *Engine) Hooks() any {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []HookView{}
	view := func(he *hookEntry) {
		out = append(out, HookView{Name: he.h.Name, Module: he.module, Path: he.h.Path, Batch: he.h.Batch, Config: hookConfigView(he.cfg), Monitors: len(he.cfg.Kubernetes) > 0 && he.started})
	}
	for _, he := range e.global {
		view(he)
	}
	if e.modules != nil {
		for _, m := range e.modules.Modules {
			for _, he := range e.mods[m.Name].hooks {
				view(he)
			}
		}
	}
	return out
}

// Runs implements debug.Source: the last finished task runs.
func (e *Engine) Runs() any {
	if e.queues == nil {
		return []queue.RunInfo{}
	}
	return e.queues.History()
}

// Module implements debug.Source.
func (e *Engine) Module(ctx context.Context, name, what string, explain bool) (any, error) {
	e.mu.Lock()
	ms := e.mods[name]
	var key string
	var mod *module.Module
	if ms != nil {
		key, mod = ms.m.Key, ms.m
	}
	e.mu.Unlock()
	if ms == nil || e.back == nil || e.back.values == nil {
		return nil, fmt.Errorf("no module %q (`strata operator module list` lists them): %w", name, debug.ErrNotFound)
	}
	switch what {
	case "values":
		if explain {
			return e.explain(key)
		}
		return map[string]any{key: nonNilMap(e.back.values.Values(key))}, nil
	case "config":
		return map[string]any{key: e.back.values.ConfigValues(key)[key]}, nil
	case "patches":
		return patchViews(e.back.values.Patches(key)), nil
	case "snapshots":
		e.mu.Lock()
		hooks := ms.hooks
		e.mu.Unlock()
		return e.snapshots(hooks), nil
	case "render":
		out, err := e.renderModule(ctx, mod)
		if err != nil {
			return nil, err
		}
		return string(out), nil
	}
	return nil, fmt.Errorf("module %s: %w", what, debug.ErrNotFound)
}

func nonNilMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func patchViews(ps []store.Patch) []PatchView {
	out := []PatchView{}
	for _, p := range ps {
		v := PatchView{Hook: p.Hook, Binding: p.Binding, Operations: []any{}}
		if !p.Time.IsZero() {
			v.Time = p.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00")
		}
		if p.Ops != nil {
			v.Operations = p.Ops.Maps()
		}
		out = append(out, v)
	}
	return out
}

// snapshots returns the snapshots of hooks' kubernetes bindings, by hook
// and binding.
func (e *Engine) snapshots(hooks []*hookEntry) map[string]map[string][]hook.ObjectResult {
	out := map[string]map[string][]hook.ObjectResult{}
	for _, he := range hooks {
		if len(he.cfg.Kubernetes) == 0 {
			continue
		}
		byBinding := map[string][]hook.ObjectResult{}
		for _, b := range he.cfg.Kubernetes {
			snap := []hook.ObjectResult{}
			e.mu.Lock()
			kube := he.kube
			e.mu.Unlock()
			if m := kube.Monitor(b.Name); m != nil {
				snap = append(snap, m.Snapshot()...)
			}
			byBinding[b.Name] = snap
		}
		out[he.h.Name] = byBinding
	}
	return out
}

// explain returns the provenance of every key of a section.
func (e *Engine) explain(key string) ([]ExplainRow, error) {
	exps, err := e.back.values.Explain(key, nil)
	if err != nil {
		return nil, err
	}
	rows := make([]ExplainRow, 0, len(exps))
	for _, x := range exps {
		r := ExplainRow{Path: x.Path.String(), Value: x.Value, Layer: describe(x.Winner)}
		if x.Deleted {
			r.Value = "<removed>"
		}
		for _, o := range x.Overrode {
			v := o.Value
			if o.Deleted {
				v = "<removed>"
			}
			r.Overrode = append(r.Overrode, ExplainLost{Value: v, Layer: describe(o)})
		}
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Path < rows[j].Path })
	return rows, nil
}

// describe names a layer's write: the layer, its file and line.
func describe(s values.Setting) string {
	d := s.Layer
	if s.Source != "" && !strings.Contains(s.Layer, s.Source) {
		d += " " + s.Source
	}
	if s.Line > 0 {
		d += ":" + strconv.Itoa(s.Line)
	}
	return d
}
