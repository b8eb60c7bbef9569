package helmplugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/params"
	"github.com/strata-dev/strata/internal/worker"
)

// WorkerOptions make a Plugin render in worker processes: each render runs
// in a warm process of its own, bounded in memory, killed when it runs
// past its time (Options.Timeout, the request's context) or memory budget
// and replaced by a new one, so that no chart can wedge the server's
// render slots or end the server. Without Enabled the Plugin renders
// in-process: a render past its deadline is then abandoned but keeps its
// slot until it ends, and a render past the memory the process can have
// ends the process.
//
// The workers are this program started again as WorkerEntry: its main
// must run the entry (worker.Run) before anything else.
type WorkerOptions struct {
	// Enabled renders in workers.
	Enabled bool
	// Env is the workers' environment; nil is the server's.
	Env []string
	// Memory bounds what one render may add to its worker's memory, in
	// bytes; 0 is DefaultRenderMemory, negative no bound. The worker sets
	// its address space limit (RLIMIT_AS, on Linux) to what it has mapped
	// before the render plus Memory plus 128 MiB (the Go heap grows by
	// arenas of 64 MiB), and its Go memory limit to what it holds plus
	// Memory (see package worker).
	Memory int64
}

// DefaultRenderMemory is the memory budget of one render in a worker.
const DefaultRenderMemory = worker.DefaultMemory

// WorkerName names the render worker's entry: a worker is this program
// run as `PROGRAM helm-worker`, which ps shows.
const WorkerName = "helm-worker"

// WorkerEntry is the render worker, the entry a program whose Plugins
// render in workers runs first thing in main (worker.Run): it serves the
// renders of the Plugin that started it, rendering one chart at a time
// in-process, until the Plugin closes its pipes. Run by hand, it refuses.
func WorkerEntry() worker.Entry {
	return worker.Entry{Name: WorkerName, Main: workerMain}
}

// The messages between a Plugin and its render workers (package worker
// carries them): a worker starts with a workerConfig, and answers each
// workerRequest with a workerAnswer, noting the chart's name once it is
// loaded; its counters are its Plugin's Stats.
type (
	// workerConfig is what a worker needs of the Plugin's Options.
	workerConfig struct {
		Limits             Limits
		CacheEntries       int
		ChartCacheEntries  int
		ChartCacheBytes    int64
		DocumentCacheBytes int64
		Dependencies       DependencyOptions
		Codecs             document.Codecs
	}
	workerRequest struct {
		// Request is the params.Request in JSON: gob would turn a pointer
		// to "" into nil and an empty slice into nil.
		Request []byte
		// Announce asks for the parameters announcement instead of a
		// render.
		Announce bool
	}
	workerAnswer struct {
		Manifests []string
		// Announcements is the announcement (Announce requests), in JSON.
		Announcements []byte
	}
	// workerStats are a worker's caches' counters.
	workerStats Stats
)

// renderPool runs a Plugin's renders in workers.
type renderPool = worker.Pool[workerRequest, workerAnswer, workerStats]

func (s workerStats) Add(o workerStats) workerStats {
	add := func(x, y CacheStats) CacheStats {
		return CacheStats{Hits: x.Hits + y.Hits, Misses: x.Misses + y.Misses, Evictions: x.Evictions + y.Evictions, Bytes: x.Bytes + y.Bytes, Entries: x.Entries + y.Entries}
	}
	return workerStats{Charts: add(s.Charts, o.Charts), Documents: add(s.Documents, o.Documents), Values: add(s.Values, o.Values), Announcements: add(s.Announcements, o.Announcements)}
}

// Retired keeps the counters of a worker gone; what its caches held is
// gone with it.
func (s workerStats) Retired() workerStats {
	for _, c := range []*CacheStats{&s.Charts, &s.Documents, &s.Values, &s.Announcements} {
		c.Bytes, c.Entries = 0, 0
	}
	return s
}

var _ worker.Counters[workerStats] = workerStats{}

// WorkerStats count what became of the render workers of a Plugin with
// Options.Workers, since it was made.
type WorkerStats struct {
	// Started counts the workers started, Live those running now (idle or
	// rendering).
	Started uint64
	Live    int
	// Renders counts the renders sent to a worker; TimedOut those stopped
	// past their time budget (or their request's deadline),
	// OutOfMemory those past their memory budget, Crashed those whose
	// worker ended otherwise.
	Renders, TimedOut, OutOfMemory, Crashed uint64
}

// WorkerStats returns the counters of the plugin's render workers (zero
// when it renders in-process).
func (p *Plugin) WorkerStats() WorkerStats {
	if p.pool == nil {
		return WorkerStats{}
	}
	s := p.pool.Stats()
	return WorkerStats{Started: s.Started, Live: s.Live, Renders: s.Requests, TimedOut: s.TimedOut, OutOfMemory: s.OutOfMemory, Crashed: s.Crashed}
}

// newRenderPool starts the render workers of a plugin with n slots.
func (p *Plugin) newRenderPool(opts Options, n int, chartBytes, docBytes int64) *renderPool {
	// Each worker keeps its share of the caches.
	share := func(v int64) int64 {
		if v <= 0 {
			return v
		}
		return max(v/int64(n), 1)
	}
	depOpts := opts.Dependencies.WithDefaults()
	depOpts.CacheBytes = share(depOpts.CacheBytes)
	cfg := workerConfig{
		Limits: p.lim, CacheEntries: opts.CacheEntries, ChartCacheEntries: opts.ChartCacheEntries,
		ChartCacheBytes: share(chartBytes), DocumentCacheBytes: share(docBytes),
		Dependencies: depOpts, Codecs: opts.Codecs,
	}
	relog := opts.Logger
	if relog == nil {
		relog = p.log
	}
	return worker.New[workerRequest, workerAnswer, workerStats](worker.Options{
		Entry: WorkerName, Env: opts.Workers.Env, Slots: n, Memory: opts.Workers.Memory,
		Retain: max(cfg.ChartCacheBytes, 0) + max(cfg.DocumentCacheBytes, 0),
		Config: cfg, Logger: p.log, Relog: relog,
	})
}

// generateInWorker renders in a worker. A render that outlives ctx, or
// the worker, is stopped: the worker is killed, and replaced.
func (p *Plugin) generateInWorker(ctx context.Context, req *params.Request) ([]string, error) {
	a, err := p.inWorker(ctx, req, false)
	if err != nil {
		return nil, err
	}
	if a.Manifests == nil {
		return []string{}, nil
	}
	return a.Manifests, nil
}

// announceInWorker makes the parameters announcement in a worker, as
// generateInWorker renders.
func (p *Plugin) announceInWorker(ctx context.Context, req *params.Request) ([]params.Announcement, error) {
	a, err := p.inWorker(ctx, req, true)
	if err != nil {
		return nil, err
	}
	var anns []params.Announcement
	if err := json.Unmarshal(a.Announcements, &anns); err != nil {
		return nil, fmt.Errorf("reading the render worker's announcement: %w", err)
	}
	return anns, nil
}

// inWorker sends a request to a worker: a render, or an announcement.
func (p *Plugin) inWorker(ctx context.Context, req *params.Request, announce bool) (workerAnswer, error) {
	js, err := json.Marshal(req)
	if err != nil {
		return workerAnswer{}, err
	}
	a, err := p.pool.Do(ctx, workerRequest{Request: js, Announce: announce})
	if err != nil {
		return a, p.workerError(req, announce, err)
	}
	return a, nil
}

// workerError explains a render the pool ended, naming the chart (once
// the worker has loaded it) and the budget it ran past.
func (p *Plugin) workerError(req *params.Request, announce bool, err error) error {
	var we *worker.Error
	if !errors.As(err, &we) {
		// The plugin's own error, in the worker.
		return err
	}
	where := appDir(req)
	verb := "rendering"
	if announce {
		verb = "announcing the parameters of"
	}
	what := "the chart in " + where
	if we.Note != "" {
		what = fmt.Sprintf("chart %q in %s", we.Note, where)
	}
	after := we.After.Round(time.Millisecond)
	switch we.Kind {
	case worker.Waiting:
		return fmt.Errorf("waiting to render the chart in %s: %w", where, we.Err)
	case worker.Unavailable:
		if we.Exit != "" {
			return fmt.Errorf("%s the chart in %s: %w (%s)", verb, where, we.Err, we.Exit)
		}
		return fmt.Errorf("%s the chart in %s: %w", verb, where, we.Err)
	case worker.TimedOut:
		p.log.Warn("render stopped", "app", req.AppName, "render", what, "after", after, "reason", we.Err)
		return fmt.Errorf("%s %s did not finish in %s and was stopped: %w", verb, what, after, we.Err)
	case worker.OutOfMemory:
		if announce {
			return fmt.Errorf("%s %s: reading the chart's values and values files needed more than the render memory budget of %s and was stopped (%s); use smaller values files, or a larger budget (strata cmp serve --helm-render-memory)",
				verb, what, formatBytes(p.renderMemory()), we.Exit)
		}
		return fmt.Errorf("rendering %s: the render needed more than its memory budget of %s and was stopped (%s); a template builds a value without bound (a repeat, a string or list doubled in a loop, tpl calling itself?), or the chart needs a larger budget (strata cmp serve --helm-render-memory)",
			what, formatBytes(p.renderMemory()), we.Exit)
	case worker.Killed:
		return fmt.Errorf("%s %s: the render worker was killed (%s), by the kernel's OOM killer if the container's memory limit is below the render budgets (--helm-max-concurrent × --helm-render-memory plus the caches); the server goes on with a new one", verb, what, we.Exit)
	}
	return fmt.Errorf("%s %s: the render worker ended unexpectedly (%s); the server goes on with a new one", verb, what, we.Exit)
}

// renderMemory is the memory budget of a render in a worker, negative for
// none.
func (p *Plugin) renderMemory() int64 {
	if m := p.opts.Workers.Memory; m != 0 {
		return m
	}
	return DefaultRenderMemory
}

// appDir names the application's directory inside its repository.
func appDir(req *params.Request) string {
	rel, err := filepath.Rel(req.RepoRoot, req.AppPath)
	if err != nil || rel == "." {
		return "the repository's root"
	}
	return filepath.ToSlash(rel)
}

func formatBytes(n int64) string {
	switch {
	case n < 0:
		return "none"
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
