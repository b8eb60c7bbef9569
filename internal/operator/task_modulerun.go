package operator

import (
	"context"
	"time"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/queue"
)

// moduleRun is a 'module run' (ModuleRun; step 5, or 14/15/16 without
// startup): the module's hooks and its Helm release.
type moduleRun struct {
	name       string
	activation string
	// doStartup runs onStartup and Synchronization if not done yet.
	doStartup bool
}

var (
	_ job            = (*moduleRun)(nil)
	_ merger         = (*moduleRun)(nil)
	_ failureCounter = (*moduleRun)(nil)
)

// moduleRunTask is a run of module name; the runs of one module waiting
// in a queue are one.
func moduleRunTask(name, activation string, startup bool) *queue.Task {
	t := newTask(&moduleRun{name: name, activation: activation, doStartup: startup})
	t.CompactKey = "module-run/" + name
	return t
}

func (r *moduleRun) kind() string     { return KindModuleRun }
func (r *moduleRun) describe() string { return "module " + r.name + " run" }

// merge keeps onStartup if the newer run asked for it.
func (r *moduleRun) merge(newer any) {
	if n, ok := newer.(*moduleRun); ok && n.doStartup {
		r.doStartup = true
	}
}

func (r *moduleRun) failed(e *Engine, err error) { e.setModuleErr(r.name, err) }

func (r *moduleRun) run(ctx context.Context, e *Engine, _ *queue.Task) ([]*queue.Task, error) {
	return nil, r.runTraced(ctx, e, nil)
}

// runTraced runs the module; trace, when set, collects its history lines
// instead of the engine.
func (r *moduleRun) runTraced(ctx context.Context, e *Engine, trace *[]string) error {
	start := time.Now()
	name, activation := r.name, r.activation
	e.mu.Lock()
	ms := e.mods[name]
	if ms == nil || !ms.enabled {
		e.mu.Unlock()
		return nil
	}
	hooks := ms.hooks
	startup := r.doStartup && !ms.startedUp
	e.mu.Unlock()
	rec := func(l string) {
		if trace != nil {
			*trace = append(*trace, l)
		} else {
			e.record(l)
		}
	}
	if startup || !ms.monitorsUp {
		// onStartup hooks, then the kubernetes bindings: Synchronization.
		if startup {
			for _, he := range sortedWith(hooks, hook.OnStartup) {
				if _, err := e.runHook(ctx, he, hook.OnStartup, lifecycleContext(hook.OnStartup), "main", activation, rec); err != nil {
					return err
				}
			}
		}
		for _, he := range sortedByName(hooks) {
			syncs, err := e.startBindings(ctx, he, activation)
			if err != nil {
				return err
			}
			for _, t := range syncs {
				d := t.Data.(*hookRun)
				if _, err := e.runHook(ctx, he, hook.Kubernetes, d.contexts, "main", activation, rec); err != nil {
					if !t.AllowFailure {
						return err
					}
				}
			}
		}
	}
	for _, he := range sortedWith(hooks, hook.BeforeHelm) {
		if _, err := e.runHook(ctx, he, hook.BeforeHelm, lifecycleContext(hook.BeforeHelm), "main", activation, rec); err != nil {
			return err
		}
	}
	if err := e.helm(ctx, ms, activation, rec); err != nil {
		return err
	}
	changed := false
	for _, he := range sortedWith(hooks, hook.AfterHelm) {
		ch, err := e.runHook(ctx, he, hook.AfterHelm, lifecycleContext(hook.AfterHelm), "main", activation, rec)
		if err != nil {
			return err
		}
		changed = changed || ch.module
	}
	e.mu.Lock()
	ms.startedUp = true
	ms.lastErr = ""
	e.mu.Unlock()
	e.m.moduleRunSecs.WithLabelValues(name).Observe(time.Since(start).Seconds())
	if changed && !e.oneShot {
		rec("module " + name + " values changed by afterHelm: module run")
		return e.queues.Add(moduleRunTask(name, "AfterHelm", false))
	}
	return nil
}
