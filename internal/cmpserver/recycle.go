package cmpserver

import (
	"context"

	"github.com/strata-dev/strata/internal/cmpserver/tarball"
	"github.com/strata-dev/strata/internal/hookexec"
)

// RecycleWorkspaces lets store keep the private workspaces of finished
// requests for later requests of the same repository (see tarball's
// "Recycling workspaces"), for a server whose commands all run in a
// hookexec.Sandbox: it makes this process the subreaper of the commands'
// orphans until ctx is done (hookexec.AdoptOrphans), so that a workspace
// is kept only once nothing its commands started still runs. maxBytes
// bounds the repository bytes kept (0: tarball.DefaultRecycleBytes). With
// m, the workspaces' counters are exported as metrics. It fails, leaving
// recycling off, where the process or the work directory's file system
// cannot support it.
func RecycleWorkspaces(ctx context.Context, store *tarball.Store, maxBytes int64, m *Metrics) error {
	if err := hookexec.AdoptOrphans(ctx); err != nil {
		return err
	}
	err := store.SetRecycling(tarball.Recycling{
		Mark: func() int64 { return int64(hookexec.Now()) },
		Quiet: func(mark int64) (bool, error) {
			n, err := hookexec.Survivors(hookexec.Mark(mark))
			return n == 0, err
		},
		MaxBytes: maxBytes,
	})
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
	const discarded = "Workspaces of finished requests removed instead of kept: busy, a process their commands started still ran; changed, their commands had added, removed or replaced entries."
	m.AddCounterFunc("workspaces_discarded_total", discarded, map[string]string{"reason": "busy"},
		stat(func(s tarball.Stats) float64 { return float64(s.RecycleBusy) }))
	m.AddCounterFunc("workspaces_discarded_total", discarded, map[string]string{"reason": "changed"},
		stat(func(s tarball.Stats) float64 { return float64(s.RecycleChanged) }))
	m.AddGaugeFunc("workspaces_kept", "Workspaces kept for later requests now.",
		stat(func(s tarball.Stats) float64 { return float64(s.Kept) }))
	m.AddGaugeFunc("workspaces_kept_bytes", "Repository bytes in the workspaces kept now.",
		stat(func(s tarball.Stats) float64 { return float64(s.KeptBytes) }))
	return nil
}
