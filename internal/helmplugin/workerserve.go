package helmplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/strata-dev/strata/internal/params"
	"github.com/strata-dev/strata/internal/worker"
)

// workerMain is the render worker's main (WorkerEntry): it serves the
// renders of the Plugin that started it, one at a time, each under the
// Plugin's memory budget (package worker bounds it), until the Plugin
// closes its pipes. A render past the budget ends the process; the
// Plugin reports it and starts another.
func workerMain(ctx context.Context) error {
	err := worker.Serve(ctx, newWorkerHandler)
	if errors.Is(err, worker.ErrNotStarted) {
		return errors.New("the render worker is started by `strata cmp serve --builtin helm`, with its pipes on file descriptors 3 and 4; it is not run by hand")
	}
	return err
}

// A workerHandler renders in a worker, with a Plugin of its own that
// renders in-process.
type workerHandler struct{ p *Plugin }

func newWorkerHandler(cfg workerConfig, log *slog.Logger) (worker.Handler[workerRequest, workerAnswer, workerStats], error) {
	return &workerHandler{p: New(Options{
		Limits:             cfg.Limits,
		MaxConcurrent:      1,
		Logger:             log,
		CacheEntries:       cfg.CacheEntries,
		ChartCacheEntries:  cfg.ChartCacheEntries,
		ChartCacheBytes:    cfg.ChartCacheBytes,
		DocumentCacheBytes: cfg.DocumentCacheBytes,
		Dependencies:       cfg.Dependencies,
		Codecs:             cfg.Codecs,
	})}, nil
}

// Serve renders, or announces; note is told the chart's name once it is
// loaded, for the Plugin's errors.
func (h *workerHandler) Serve(ctx context.Context, msg workerRequest, note func(string)) (workerAnswer, error) {
	var req params.Request
	if err := json.Unmarshal(msg.Request, &req); err != nil {
		return workerAnswer{}, fmt.Errorf("reading the render worker's request: %w", err)
	}
	if msg.Announce {
		list, err := h.p.announce(ctx, &req)
		if err != nil {
			return workerAnswer{}, err
		}
		anns, err := json.Marshal(list)
		return workerAnswer{Announcements: anns}, err
	}
	manifests, err := h.p.generate(ctx, &req, note)
	return workerAnswer{Manifests: manifests}, err
}

// Counters are the worker's caches' counters.
func (h *workerHandler) Counters() workerStats { return workerStats(h.p.Stats()) }

var _ worker.Handler[workerRequest, workerAnswer, workerStats] = (*workerHandler)(nil)
