package operator

import (
	"context"
	"fmt"
	"strings"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/queue"
)

// reloadGlobalHooks (ReloadGlobalHooks) reads and configures the global
// hooks again, then replaces the running ones: the old hooks' schedules
// and monitors stop and their queued runs are dropped; the new hooks run
// onStartup, start their bindings (Synchronization) and a 'reload all
// modules' follows, as at start-up.
type reloadGlobalHooks struct{}

var _ job = reloadGlobalHooks{}

// reloadGlobalHooksTask is a reload of the global hooks; one waiting in a
// queue takes the others in.
func reloadGlobalHooksTask() *queue.Task {
	t := newTask(reloadGlobalHooks{})
	t.CompactKey = "reload-global-hooks"
	return t
}

func (reloadGlobalHooks) kind() string     { return KindReloadGlobalHooks }
func (reloadGlobalHooks) describe() string { return "reload global hooks" }

func (reloadGlobalHooks) run(ctx context.Context, e *Engine, _ *queue.Task) ([]*queue.Task, error) {
	hooks, skipped, err := hook.DiscoverGlobal(e.s.GlobalHooksDir)
	if err != nil {
		return nil, err
	}
	for _, p := range skipped {
		e.log.Warn("skipping a file in the global hooks directory that is not executable", "file", p)
	}
	entries, err := e.configure(ctx, hooks, "")
	if err != nil {
		return nil, fmt.Errorf("reloading the global hooks (the old ones keep running until this succeeds): %w", err)
	}
	e.mu.Lock()
	old := e.global
	for _, he := range old {
		for _, id := range he.sched {
			e.ticker.Remove(id)
		}
		he.sched, he.started, he.syncs, he.stale = nil, false, nil, true
	}
	if e.stopGlobalMon != nil {
		e.stopGlobalMon()
		e.globalMon, e.stopGlobalMon = nil, nil
	}
	e.global = entries
	e.mu.Unlock()
	for _, he := range old {
		e.m.bindingCount.DeleteLabelValues("", he.h.Name)
	}
	names := make([]string, 0, len(entries))
	for _, he := range entries {
		e.m.bindingCount.WithLabelValues("", he.h.Name).Set(float64(bindingCount(he.cfg)))
		names = append(names, he.h.Name)
	}
	e.log.Info("global hooks reloaded", "hooks", strings.Join(names, ", "))
	e.record("global hooks reloaded: " + joinNames(names))
	tasks := lifecycleTasks(entries, hook.OnStartup, "GlobalHooksChanged")
	tasks = append(tasks, newTask(enableGlobalBindings{}))
	return append(tasks, reloadAllTask("GlobalHooksChanged")), nil
}
