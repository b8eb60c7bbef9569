package main

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/builtin"
	"github.com/strata-dev/strata/internal/cmpserver/tarball"
)

// BenchmarkHelmAnnounce is the bench's Helm announcement row in one
// process, to profile it: the built-in Helm plugin served by
// cmpserver.Server on a unix socket, driven by the bench's client
// (announceCall: a connection, the 5,000-leaf chart's repository in
// 1 KiB chunks, the response decoded). With -cpuprofile, the profile
// holds the server's and the client's work.
func BenchmarkHelmAnnounce(b *testing.B) {
	r, err := helmRepo(filepath.Join("..", "..", "internal", "helmplugin", "testdata", "bench", "subchart"))
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	st, err := tarball.NewStore(filepath.Join(dir, "cache"), 0)
	if err != nil {
		b.Fatal(err)
	}
	p, err := builtin.New("helm", builtin.Options{})
	if err != nil {
		b.Fatal(err)
	}
	sock := filepath.Join(dir, "helm.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- (&cmpserver.Server{Plugin: p, Store: st}).ServeListener(ctx, lis) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			b.Error(err)
		}
	}()
	call := announceCall(r, "apps/values", 5000)
	if err := call(ctx, sock); err != nil { // warm: the repository and values cached
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := call(ctx, sock); err != nil {
			b.Fatal(err)
		}
	}
}
