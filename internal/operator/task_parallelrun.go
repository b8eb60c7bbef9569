package operator

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/strata-dev/strata/internal/operator/queue"
)

// parallelRun is the module runs of the modules of one order, at once
// (ParallelModuleRun; step 5). It remembers which succeeded: a retry runs
// only those that failed.
type parallelRun struct {
	names      []string
	activation string
	done       map[string]bool
}

var _ job = (*parallelRun)(nil)

func newParallelRun(names []string, activation string) *parallelRun {
	return &parallelRun{names: names, activation: activation, done: map[string]bool{}}
}

func (r *parallelRun) kind() string { return KindParallelModuleRun }
func (r *parallelRun) describe() string {
	return "modules " + strings.Join(r.names, ", ") + " run"
}

// run runs the modules not done yet. Their history lines are kept per
// module and added in module order, so the history does not depend on
// timing.
func (r *parallelRun) run(ctx context.Context, e *Engine, _ *queue.Task) ([]*queue.Task, error) {
	var wg sync.WaitGroup
	errs := make([]error, len(r.names))
	traces := make([][]string, len(r.names))
	for i, name := range r.names {
		if r.done[name] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var tr []string
			errs[i] = (&moduleRun{name: name, activation: r.activation, doStartup: true}).runTraced(ctx, e, &tr)
			traces[i] = tr
			if errs[i] != nil {
				e.setModuleErr(name, errs[i])
			}
		}()
	}
	wg.Wait()
	e.mu.Lock()
	for i, name := range r.names {
		for _, l := range traces[i] {
			e.recordLocked(l)
		}
		if errs[i] == nil {
			r.done[name] = true
		}
	}
	e.mu.Unlock()
	return nil, errors.Join(errs...)
}
