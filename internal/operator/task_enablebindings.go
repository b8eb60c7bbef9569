package operator

import (
	"context"

	"github.com/strata-dev/strata/internal/operator/queue"
)

// enableGlobalBindings starts the global hooks' kubernetes monitors and
// schedules (EnableGlobalBindings; step 2); its follow-ups are the
// Synchronization runs that main waits for.
type enableGlobalBindings struct{}

var _ job = enableGlobalBindings{}

func (enableGlobalBindings) kind() string { return KindEnableGlobalBindings }
func (enableGlobalBindings) describe() string {
	return "enable global hooks' kubernetes and schedule bindings"
}

func (enableGlobalBindings) run(ctx context.Context, e *Engine, _ *queue.Task) ([]*queue.Task, error) {
	e.mu.Lock()
	entries := e.global
	e.mu.Unlock()
	var main []*queue.Task
	for _, he := range entries {
		tasks, err := e.startBindings(ctx, he, "OperatorStartup")
		if err != nil {
			return nil, err
		}
		main = append(main, tasks...)
	}
	return main, nil
}
