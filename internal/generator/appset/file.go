package appset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/strata-dev/strata/internal/deadline"
)

// DefaultTimeout is the time a zero File.Timeout allows.
const DefaultTimeout = 5 * time.Minute

// ErrTimeout is the error File.Render wraps when it gave up.
var ErrTimeout = errors.New("gave up")

// File renders the ApplicationSets of one file (ParseAll) together, as
// `strata appset render` does.
type File struct {
	// Renderer renders each ApplicationSet; nil is a zero Renderer (plugin
	// generators are errors).
	Renderer *Renderer
	// Timeout bounds the whole render, plugin calls included: 0 is
	// DefaultTimeout, a negative value is no bound but the context's.
	Timeout time.Duration
	// Logger receives the ApplicationSets' warnings and a line per
	// ApplicationSet rendered; nil discards them.
	Logger *slog.Logger
}

// Render renders sets in order and returns all their Applications. Two
// ApplicationSets generating the same Application (namespace and name)
// would fight over it in a cluster: that is an error. So is any
// ApplicationSet's error, named after the ApplicationSet when there are
// several.
//
// The templates of all the ApplicationSets share one budget
// (Renderer.Limits: time, steps, bytes). When the timeout or ctx ends
// first, Render returns an error wrapping ErrTimeout and the context's
// error at once; the abandoned render stops at its next budget check (a
// range iteration, a template or function call) or plugin call, its result
// discarded.
func (f *File) Render(ctx context.Context, sets []*ApplicationSet) ([]map[string]any, error) {
	timeout := f.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	apps, err := deadline.Run(ctx, timeout, func(ctx context.Context) ([]map[string]any, error) {
		return f.renderSets(ctx, sets)
	})
	if stop := (*deadline.StoppedError)(nil); errors.As(err, &stop) {
		if timeout > 0 {
			return nil, fmt.Errorf("%w after %s: %w", ErrTimeout, timeout, stop.Err)
		}
		return nil, fmt.Errorf("%w: %w", ErrTimeout, stop.Err)
	}
	return apps, err
}

func (f *File) renderSets(ctx context.Context, sets []*ApplicationSet) ([]map[string]any, error) {
	r := f.Renderer
	if r == nil {
		r = &Renderer{}
	}
	log := f.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var apps []map[string]any
	owner := map[[2]string]string{}
	b := newBudget(ctx, r.Limits.withDefaults()) // the templates' budget is the file's
	for _, set := range sets {
		res, err := r.render(ctx, set, b)
		if err != nil {
			if len(sets) > 1 {
				return nil, fmt.Errorf("ApplicationSet %s: %w", set.Name, err)
			}
			return nil, err
		}
		for _, w := range res.Warnings {
			log.Warn(w, "applicationSet", set.Name)
		}
		for _, a := range res.Applications {
			meta, _ := a["metadata"].(map[string]any)
			name, _ := meta["name"].(string)
			ns, _ := meta["namespace"].(string)
			key := [2]string{ns, name}
			if other, dup := owner[key]; dup {
				return nil, fmt.Errorf("both ApplicationSet %s and ApplicationSet %s generate the Application %q; in a cluster they would fight over it", other, set.Name, name)
			}
			owner[key] = set.Name
		}
		log.Debug("rendered", "applicationSet", set.Name, "applications", len(res.Applications))
		apps = append(apps, res.Applications...)
	}
	return apps, nil
}
