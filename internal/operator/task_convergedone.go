package operator

import (
	"context"
	"time"

	"github.com/strata-dev/strata/internal/operator/queue"
)

// convergeDone ends a 'reload all modules' (ConvergeDone): its metrics,
// the webhooks of the modules now enabled, and after the first one
// /readyz.
type convergeDone struct{ c *convergence }

var _ job = (*convergeDone)(nil)

func (d *convergeDone) kind() string     { return KindConvergeDone }
func (d *convergeDone) describe() string { return "converge done" }

func (d *convergeDone) run(_ context.Context, e *Engine, _ *queue.Task) ([]*queue.Task, error) {
	took := time.Since(d.c.start)
	e.m.convergenceSeconds.WithLabelValues(d.c.activation).Add(took.Seconds())
	e.m.convergenceTotal.WithLabelValues(d.c.activation).Inc()
	e.mu.Lock()
	e.recordLocked("converge done")
	first := !e.converged
	e.converged = true
	e.mu.Unlock()
	e.updateWebhooks()
	if first {
		close(e.readyCh)
		e.log.Info("first converge done", "took", took.Round(time.Millisecond))
	}
	return nil, nil
}
