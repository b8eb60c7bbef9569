package operator

import (
	"context"
	"fmt"

	"github.com/strata-dev/strata/internal/operator/queue"
)

// modulePurge is a 'module purge' (ModulePurge; step 7): a release
// without a module is deleted.
type modulePurge struct{ release string }

var _ job = (*modulePurge)(nil)

func (p *modulePurge) kind() string     { return KindModulePurge }
func (p *modulePurge) describe() string { return "release " + p.release + " purge" }

func (p *modulePurge) run(ctx context.Context, e *Engine, _ *queue.Task) ([]*queue.Task, error) {
	if _, err := e.back.deleteRelease(ctx, p.release); err != nil {
		return nil, fmt.Errorf("purging release %s (no module has its name): %w", p.release, err)
	}
	e.record("release " + p.release + " purged (no module)")
	return nil, nil
}
