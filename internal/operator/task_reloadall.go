package operator

import (
	"context"
	"time"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/queue"
)

// A convergence is one 'reload all modules', carried from its first task
// (reloadAll) through discover to convergeDone.
type convergence struct {
	activation string
	start      time.Time
}

// reloadAll starts 'reload all modules' (ReloadAllModules; step 3):
// beforeAll hooks, then discovery.
type reloadAll struct{ c *convergence }

var _ job = (*reloadAll)(nil)

// reloadAllTask is a 'reload all modules'; one waiting in a queue takes
// the others in.
func reloadAllTask(activation string) *queue.Task {
	t := newTask(&reloadAll{c: &convergence{activation: activation}})
	t.CompactKey = "reload-all"
	return t
}

func (r *reloadAll) kind() string     { return KindReloadAll }
func (r *reloadAll) describe() string { return "reload all modules" }

func (r *reloadAll) run(_ context.Context, e *Engine, _ *queue.Task) ([]*queue.Task, error) {
	r.c.start = time.Now()
	e.record("reload all modules")
	e.mu.Lock()
	entries := e.global
	e.mu.Unlock()
	tasks := lifecycleTasks(entries, hook.BeforeAll, r.c.activation)
	return append(tasks, newTask(&discover{c: r.c})), nil
}
