package cmpserver

import (
	"context"

	"github.com/strata-dev/strata/internal/cmpserver/tarball"
	"github.com/strata-dev/strata/internal/hookexec"
)

// TrackCommands prepares this process for following what the commands of
// each request start (hookexec.Tracker): it makes it the subreaper of the
// commands' orphans until ctx is done (hookexec.AdoptOrphans), which the
// Tracker needs to follow them through the process tree (the default, and
// where the kernel refuses namespaces). It returns whether commands could
// run in their own namespaces (nil; Server.CommandNamespaces asks for
// them) or why not; either way, what a request's commands leave behind is
// killed at its end.
func TrackCommands(ctx context.Context) (namespaces error, err error) {
	if err := hookexec.AdoptOrphans(ctx); err != nil {
		return nil, err
	}
	return hookexec.Namespaces(), nil
}

type trackerKey struct{}

// withTracker returns ctx carrying the Tracker of its request's commands.
func withTracker(ctx context.Context, t *hookexec.Tracker) context.Context {
	return context.WithValue(ctx, trackerKey{}, t)
}

// trackerFrom returns the Tracker ctx carries, or nil.
func trackerFrom(ctx context.Context) *hookexec.Tracker {
	t, _ := ctx.Value(trackerKey{}).(*hookexec.Tracker)
	return t
}

// RecycleWorkspaces lets store keep the private workspaces of finished
// requests for later requests of the same repository (see tarball's
// "Recycling workspaces"), for a server whose commands all run in a
// hookexec.Sandbox: the server keeps a workspace only when the
// hookexec.Tracker of its request, closed at the request's end, found
// that nothing its commands started still runs (see TrackCommands).
// maxBytes bounds the repository bytes kept (0: tarball.
// DefaultRecycleBytes). With m, the workspaces' counters are exported as
// metrics. It fails, leaving recycling off, where the work directory's
// file system cannot support it.
func RecycleWorkspaces(store *tarball.Store, maxBytes int64, m *Metrics) error {
	err := store.SetRecycling(tarball.Recycling{MaxBytes: maxBytes})
	if err != nil {
		return err
	}
	stat := func(f func(tarball.Stats) float64) func() float64 {
		return func() float64 { return f(store.Stats()) }
	}
	m.AddCounterFunc("workspaces_reused_total", "Requests given a recycled workspace instead of a new copy of their repository.", nil,
		stat(func(s tarball.Stats) float64 { return float64(s.Reused) }))
	m.AddCounterFunc("workspaces_recycled_total", "Workspaces of finished requests checked and kept for a later request.", nil,
		stat(func(s tarball.Stats) float64 { return float64(s.Recycled) }))
	const discarded = "Workspaces of finished requests removed instead of kept: busy, a process their commands started may still have run; unsettled, the request ended before its commands' processes were accounted for; changed, their commands had added, removed or replaced entries."
	m.AddCounterFunc("workspaces_discarded_total", discarded, map[string]string{"reason": "busy"},
		stat(func(s tarball.Stats) float64 { return float64(s.RecycleBusy) }))
	m.AddCounterFunc("workspaces_discarded_total", discarded, map[string]string{"reason": "unsettled"},
		stat(func(s tarball.Stats) float64 { return float64(s.RecycleUnsettled) }))
	m.AddCounterFunc("workspaces_discarded_total", discarded, map[string]string{"reason": "changed"},
		stat(func(s tarball.Stats) float64 { return float64(s.RecycleChanged) }))
	m.AddGaugeFunc("workspaces_kept", "Workspaces kept for later requests now.",
		stat(func(s tarball.Stats) float64 { return float64(s.Kept) }))
	m.AddGaugeFunc("workspaces_kept_bytes", "Repository bytes in the workspaces kept now.",
		stat(func(s tarball.Stats) float64 { return float64(s.KeptBytes) }))
	return nil
}
