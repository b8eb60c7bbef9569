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
