package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/helmplugin"
)

// serveWithMetrics serves srv on the socket and its metrics on addr
// (host:port, or unix:PATH) until ctx is done and srv has stopped: the
// metrics stay up while in-flight requests finish.
func serveWithMetrics(ctx context.Context, srv *cmpserver.Server, socket, addr string, log *slog.Logger) error {
	m := srv.Metrics
	m.AddCache("repository", cmpserver.StoreCache(srv.Store))
	if hp, ok := srv.Plugin.(interface{ Stats() helmplugin.Stats }); ok {
		for _, c := range []struct {
			name string
			get  func(helmplugin.Stats) helmplugin.CacheStats
		}{
			{"helm_chart", func(s helmplugin.Stats) helmplugin.CacheStats { return s.Charts }},
			{"helm_document", func(s helmplugin.Stats) helmplugin.CacheStats { return s.Documents }},
			{"helm_values", func(s helmplugin.Stats) helmplugin.CacheStats { return s.Values }},
			{"helm_announcements", func(s helmplugin.Stats) helmplugin.CacheStats { return s.Announcements }},
		} {
			m.AddCache(c.name, func() cmpserver.CacheStats { return cmpserver.CacheStats(c.get(hp.Stats())) })
		}
	}
	if hp, ok := srv.Plugin.(interface{ WorkerStats() helmplugin.WorkerStats }); ok {
		AddHelmWorkerMetrics(m, hp.WorkerStats)
	}
	network := "tcp"
	if p, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, addr = "unix", p
	}
	lis, err := net.Listen(network, addr)
	if err != nil {
		return fmt.Errorf("--metrics-listen: %w", err)
	}
	log.Info("serving metrics", "address", lis.Addr().String())
	mctx, stop := context.WithCancel(context.Background())
	merr := make(chan error, 1)
	go func() { merr <- m.Serve(mctx, lis) }()
	err = srv.Serve(ctx, socket)
	stop()
	return errors.Join(err, <-merr)
}

// AddHelmWorkerMetrics exports the built-in Helm plugin's render workers
// (docs/helm.md, "Render workers") to m.
func AddHelmWorkerMetrics(m *cmpserver.Metrics, stats func() helmplugin.WorkerStats) {
	m.AddGaugeFunc("helm_render_workers", "Render worker processes of the built-in Helm plugin running now, idle or rendering.",
		func() float64 { return float64(stats().Live) })
	m.AddCounterFunc("helm_render_workers_started_total", "Render worker processes started, those replacing a worker killed or ended included.", nil,
		func() float64 { return float64(stats().Started) })
	m.AddCounterFunc("helm_renders_total", "Renders sent to a render worker.", nil,
		func() float64 { return float64(stats().Renders) })
	const stopped = "Renders stopped, by reason: timeout (past the time budget or the request's deadline), memory (past the memory budget), crash (the worker ended otherwise)."
	for reason, get := range map[string]func(helmplugin.WorkerStats) uint64{
		"timeout": func(s helmplugin.WorkerStats) uint64 { return s.TimedOut },
		"memory":  func(s helmplugin.WorkerStats) uint64 { return s.OutOfMemory },
		"crash":   func(s helmplugin.WorkerStats) uint64 { return s.Crashed },
	} {
		m.AddCounterFunc("helm_renders_stopped_total", stopped, map[string]string{"reason": reason},
			func() float64 { return float64(get(stats())) })
	}
}
