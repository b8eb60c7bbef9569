package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
)

// dial opens a connection to a plugin socket, with the repo-server's
// message size limits (100 MiB).
func dial(socket string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(100<<20), grpc.MaxCallSendMsgSize(100<<20)))
}

// A call is one request of the repo-server to a named plugin without
// discovery rules, as reposerver/repository and util/app/discovery of Argo
// CD v2.14 make it: a new connection, CheckPluginConfiguration (to detect
// the plugin), CheckPluginConfiguration again (for provideGitCreds), then
// the streaming RPC, the metadata first and the repository's tar.gz in
// 1 KiB chunks. It returns an error when the answer is not as expected.
type call func(ctx context.Context, socket string) error

// generateCall is GenerateManifest of r's application, which must answer
// want manifests.
func generateCall(r *repo, appDir string, want int) call {
	return func(ctx context.Context, socket string) error {
		conn, c, err := connect(ctx, socket)
		if err != nil {
			return err
		}
		defer conn.Close()
		stream, err := c.GenerateManifest(ctx)
		if err != nil {
			return err
		}
		if err := send(stream, appDir, r); err != nil {
			return err
		}
		resp, err := stream.CloseAndRecv()
		if err != nil {
			return err
		}
		if got := len(resp.GetManifests()); got != want {
			return fmt.Errorf("GenerateManifest returned %d manifests, want %d", got, want)
		}
		return nil
	}
}

// announceCall is GetParametersAnnouncement of r's application, which
// must announce a map parameter of want entries.
func announceCall(r *repo, appDir string, want int) call {
	return func(ctx context.Context, socket string) error {
		conn, c, err := connect(ctx, socket)
		if err != nil {
			return err
		}
		defer conn.Close()
		stream, err := c.GetParametersAnnouncement(ctx)
		if err != nil {
			return err
		}
		if err := send(stream, appDir, r); err != nil {
			return err
		}
		resp, err := stream.CloseAndRecv()
		if err != nil {
			return err
		}
		most := 0
		for _, a := range resp.GetParameterAnnouncements() {
			most = max(most, len(a.GetMap()))
		}
		if most != want {
			return fmt.Errorf("GetParametersAnnouncement announced a map of %d entries, want %d", most, want)
		}
		return nil
	}
}

func connect(ctx context.Context, socket string) (*grpc.ClientConn, pluginpb.ConfigManagementPluginServiceClient, error) {
	conn, err := dial(socket)
	if err != nil {
		return nil, nil, err
	}
	c := pluginpb.NewConfigManagementPluginServiceClient(conn)
	for range 2 {
		if _, err := c.CheckPluginConfiguration(ctx, &emptypb.Empty{}); err != nil {
			conn.Close()
			return nil, nil, fmt.Errorf("CheckPluginConfiguration: %w", err)
		}
	}
	return conn, c, nil
}

// metadata is what the repo-server sends first: the application and the
// environment of its plugin commands (SendApp sets checksum and size).
func metadata(appDir string) *pluginpb.ManifestRequestMetadata {
	return &pluginpb.ManifestRequestMetadata{
		AppName: "web", AppRelPath: appDir,
		Env: []*pluginpb.EnvEntry{
			{Name: "ARGOCD_APP_NAME", Value: "web"},
			{Name: "ARGOCD_APP_NAMESPACE", Value: "default"},
			{Name: "ARGOCD_APP_PROJECT_NAME", Value: "default"},
			{Name: "ARGOCD_APP_REVISION", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Name: "ARGOCD_APP_REVISION_SHORT", Value: "0123456"},
			{Name: "ARGOCD_APP_SOURCE_REPO_URL", Value: "https://git.example.com/repo.git"},
			{Name: "ARGOCD_APP_SOURCE_PATH", Value: appDir},
			{Name: "ARGOCD_APP_SOURCE_TARGET_REVISION", Value: "HEAD"},
			{Name: "KUBE_VERSION", Value: "1.34.0"},
			{Name: "KUBE_API_VERSIONS", Value: "v1,apps/v1"},
		},
	}
}

// A Sample is the sorted latencies of a batch of requests, and the wall
// time of the batch.
type Sample struct {
	Latencies []time.Duration
	Wall      time.Duration
}

// Quantile returns the q-quantile of the latencies (nearest rank).
func (s Sample) Quantile(q float64) time.Duration {
	if len(s.Latencies) == 0 {
		return 0
	}
	i := int(q*float64(len(s.Latencies))+0.999999) - 1
	return s.Latencies[max(0, min(i, len(s.Latencies)-1))]
}

// PerSecond returns the requests completed per second of wall time.
func (s Sample) PerSecond() float64 {
	if s.Wall <= 0 {
		return 0
	}
	return float64(len(s.Latencies)) / s.Wall.Seconds()
}

// measure runs n calls of fn, conc at a time, each calling fn once.
func measure(ctx context.Context, n, conc int, fn func(ctx context.Context) error) (Sample, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lat := make([]time.Duration, n)
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	start := time.Now()
	for range min(conc, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t := time.Now()
				if err := fn(ctx); err != nil {
					cancel(err)
					return
				}
				lat[i] = time.Since(t)
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return Sample{}, err
	}
	slices.Sort(lat)
	return Sample{Latencies: lat, Wall: wall}, nil
}

// send streams r as the repo-server does: the metadata, then the tar.gz
// in cmpserver.ChunkSize (1 KiB) chunks. The checksum was computed once:
// the repo-server computes it while it compresses the repository, which
// is the client's cost, not the server's.
//
// A server may end the stream early (a rejected request): Send then
// returns io.EOF, and the server's status comes from CloseAndRecv.
func send(s cmpserver.AppSender, appDir string, r *repo) error {
	err := sendAll(s, appDir, r)
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

func sendAll(s cmpserver.AppSender, appDir string, r *repo) error {
	md := metadata(appDir)
	md.Checksum, md.Size = r.sum, int64(len(r.tgz))
	if err := s.Send(&pluginpb.AppStreamRequest{Request: &pluginpb.AppStreamRequest_Metadata{Metadata: md}}); err != nil {
		return err
	}
	for off := 0; off < len(r.tgz); off += cmpserver.ChunkSize {
		chunk := r.tgz[off:min(off+cmpserver.ChunkSize, len(r.tgz))]
		if err := s.Send(&pluginpb.AppStreamRequest{Request: &pluginpb.AppStreamRequest_File{File: &pluginpb.File{Chunk: chunk}}}); err != nil {
			return err
		}
	}
	return nil
}
