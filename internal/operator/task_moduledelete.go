package operator

import (
	"context"
	"fmt"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/queue"
)

// moduleDelete is a 'module delete' (ModuleDelete; step 6):
// beforeDeleteHelm, the release deleted, afterDeleteHelm; the module's
// monitors and schedules stop.
type moduleDelete struct{ name string }

var (
	_ job            = (*moduleDelete)(nil)
	_ failureCounter = (*moduleDelete)(nil)
)

func (d *moduleDelete) kind() string     { return KindModuleDelete }
func (d *moduleDelete) describe() string { return "module " + d.name + " delete" }

func (d *moduleDelete) failed(e *Engine, _ error) {
	e.m.moduleDelErrors.WithLabelValues(d.name).Inc()
}

func (d *moduleDelete) run(ctx context.Context, e *Engine, _ *queue.Task) ([]*queue.Task, error) {
	name := d.name
	e.mu.Lock()
	ms := e.mods[name]
	hooks := ms.hooks
	e.mu.Unlock()
	for _, he := range sortedWith(hooks, hook.BeforeDeleteHelm) {
		if _, err := e.runHook(ctx, he, hook.BeforeDeleteHelm, lifecycleContext(hook.BeforeDeleteHelm), "main", "ModuleDelete", nil); err != nil {
			return nil, err
		}
	}
	existed, err := e.back.deleteRelease(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("module %s: deleting its release: %w", name, err)
	}
	if existed {
		e.log.Info("helm delete", "module", name, "release", name)
		e.record("module " + name + " release deleted")
	}
	for _, he := range sortedWith(hooks, hook.AfterDeleteHelm) {
		if _, err := e.runHook(ctx, he, hook.AfterDeleteHelm, lifecycleContext(hook.AfterDeleteHelm), "main", "ModuleDelete", nil); err != nil {
			return nil, err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopModuleLocked(ms)
	ms.manifests, ms.helmValues, ms.hasChart = nil, nil, false
	return nil, nil
}
