package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
	"github.com/strata-dev/strata/internal/cmpserver/tarball"
)

// pluginYAML is the plugin both servers serve.
const pluginYAML = `apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: cat
spec:
  generate:
    command: [cat]
    args: [m.yaml]
`

// cacheBytes is the cache size of the strata server, strata cmp serve's
// default.
const cacheBytes = 2 << 30

// A Bench measures both servers on both repositories. Set the fields, then
// call Run.
type Bench struct {
	BigFiles      int   // files of the big repository
	BigRequests   int   // repeated requests per concurrency level, big repository
	SmallRequests int   // the same for the 10-file application
	Concurrency   []int // the concurrency levels of the repeated requests
	Log           *slog.Logger
}

// A Report is what Run measured, per repository.
type Report struct {
	Repos []RepoReport
}

// A RepoReport is one repository's rows.
type RepoReport struct {
	Name     string
	Files    int
	Content  int64 // bytes of file content
	Tarball  int64 // bytes of tar.gz
	Rows     []Row
	Extract  Sample // tarball.Extract alone, from memory, one at a time
	Requests int    // repeated requests per row
}

// A Row is one measurement of both servers.
type Row struct {
	Label       string
	Concurrency int
	ArgoLike    Sample
	Strata      Sample
}

// A Sample is the latencies of a batch of requests, sorted, and the wall
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

// Run generates the repositories, starts the servers and measures.
func (b *Bench) Run(ctx context.Context) (*Report, error) {
	log := b.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg, err := cmpserver.ParseConfig([]byte(pluginYAML), "cmpbench plugin.yaml")
	if err != nil {
		return nil, err
	}
	plugin := cmpserver.NewCommandPlugin(cfg, cmpserver.CommandOptions{Env: os.Environ()})
	dir, err := os.MkdirTemp("", "cmpbench") // short: a unix socket's path has at most 108 bytes
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	rep := &Report{}
	for _, r := range []struct {
		name            string
		files, requests int
	}{
		{fmt.Sprintf("%d-file app", appFiles), appFiles, b.SmallRequests},
		{fmt.Sprintf("%d-file repo", b.BigFiles), b.BigFiles, b.BigRequests},
	} {
		rr, err := b.measureRepo(ctx, log.With("repo", r.name), filepath.Join(dir, fmt.Sprint(len(rep.Repos))), plugin, r.files, r.requests)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
		rr.Name = r.name
		rep.Repos = append(rep.Repos, *rr)
	}
	return rep, nil
}

func (b *Bench) measureRepo(ctx context.Context, log *slog.Logger, dir string, plugin cmpserver.Plugin, files, n int) (*RepoReport, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	log.Info("generating the repository", "files", files)
	r, err := genRepo(files)
	if err != nil {
		return nil, err
	}
	rr := &RepoReport{Files: r.files, Content: r.content, Tarball: int64(len(r.tgz)), Requests: n}
	total := 1 + n*len(b.Concurrency)
	log.Info("hashing a tarball of its own checksum for each argo-like request", "tarGzBytes", len(r.tgz), "requests", total)
	distinct := make([]payload, total)
	for i := range distinct {
		distinct[i] = variant(r.tgz, uint32(i+1))
	}
	same := slices.Repeat([]payload{variant(r.tgz, 0)}, n)

	argo, err := startServer(ctx, filepath.Join(dir, "argo"), 0, plugin)
	if err != nil {
		return nil, err
	}
	defer argo.stop()
	strata, err := startServer(ctx, filepath.Join(dir, "strata"), cacheBytes, plugin)
	if err != nil {
		return nil, err
	}
	defer strata.stop()

	// Both servers in turn at each step, so that both see the same
	// machine load.
	measureRow := func(label string, c int, a, s []payload) error {
		log.Info("measuring", "row", label, "concurrency", c, "requests", len(a))
		row := Row{Label: label, Concurrency: c}
		var err error
		if row.ArgoLike, err = measure(ctx, argo.socket, a, c); err != nil {
			return fmt.Errorf("argo-like server, %s: %w", label, err)
		}
		if row.Strata, err = measure(ctx, strata.socket, s, c); err != nil {
			return fmt.Errorf("strata server, %s: %w", label, err)
		}
		log.Info("measured", "row", label, "concurrency", c,
			"argoLikeP50", row.ArgoLike.Quantile(0.5), "strataP50", row.Strata.Quantile(0.5),
			"argoLikePerSecond", row.ArgoLike.PerSecond(), "strataPerSecond", row.Strata.PerSecond())
		rr.Rows = append(rr.Rows, row)
		return nil
	}
	// One request of another checksum to each server first, so that the
	// cold row measures a cache miss, not the process's first request.
	warm := variant(r.tgz, ^uint32(0))
	for _, srv := range []*server{argo, strata} {
		if err := generate(ctx, srv.socket, warm); err != nil {
			return nil, fmt.Errorf("warm-up request: %w", err)
		}
	}
	if err := measureRow("cold", 1, distinct[:1], same[:1]); err != nil {
		return nil, err
	}
	for i, c := range b.Concurrency {
		if err := measureRow("repeated", c, distinct[1+i*n:1+(i+1)*n], same); err != nil {
			return nil, err
		}
	}

	// The premise of the comparison: the argo-like server extracted for
	// every request, strata once per checksum.
	as, ss := argo.store.Stats(), strata.store.Stats()
	log.Info("store counters", "argoLike", fmt.Sprintf("%+v", as), "strata", fmt.Sprintf("%+v", ss))
	if as.Extractions != uint64(total+1) || ss.Extractions != 2 || ss.Hits != uint64(total-1) {
		return nil, fmt.Errorf("the argo-like server extracted %d times and strata's %d times (%d hits) for %d requests each (and a warm-up); want %d, 2 and %d",
			as.Extractions, ss.Extractions, ss.Hits, total, total+1, total-1)
	}

	log.Info("measuring tarball.Extract alone")
	if rr.Extract, err = extractAlone(ctx, filepath.Join(dir, "extract"), r.tgz, max(1, n/4)); err != nil {
		return nil, err
	}
	return rr, nil
}

// A server is a cmpserver.Server running on a unix socket.
type server struct {
	socket string
	store  *tarball.Store
	stop   func()
}

// startServer starts a server for plugin with a store of cacheBytes under
// dir, which it creates, and its socket in dir.
func startServer(ctx context.Context, dir string, cacheBytes int64, plugin cmpserver.Plugin) (*server, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	store, err := tarball.NewStore(filepath.Join(dir, "repos"), cacheBytes)
	if err != nil {
		return nil, err
	}
	socket := filepath.Join(dir, "cat.sock")
	lis, err := net.Listen("unix", socket)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	srv := &cmpserver.Server{Plugin: plugin, Store: store}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.ServeListener(ctx, lis)
	}()
	return &server{socket: socket, store: store, stop: func() { cancel(); <-done }}, nil
}

// measure sends the payloads to the server at socket, conc at a time.
func measure(ctx context.Context, socket string, payloads []payload, conc int) (Sample, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lat := make([]time.Duration, len(payloads))
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	start := time.Now()
	for range min(conc, len(payloads)) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(payloads) {
					return
				}
				t := time.Now()
				if err := generate(ctx, socket, payloads[i]); err != nil {
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

// generate sends one GenerateManifest request the way Argo CD's
// repo-server does: over a new connection, the metadata, then the tarball
// in 1 KiB chunks; and checks the reply.
func generate(ctx context.Context, socket string, p payload) error {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	stream, err := pluginpb.NewConfigManagementPluginServiceClient(conn).GenerateManifest(ctx)
	if err != nil {
		return err
	}
	md := &pluginpb.ManifestRequestMetadata{
		AppName: "web", AppRelPath: appDir, Checksum: p.checksum, Size: p.size(),
		Env: []*pluginpb.EnvEntry{
			{Name: "ARGOCD_APP_NAME", Value: "web"},
			{Name: "ARGOCD_APP_NAMESPACE", Value: "default"},
			{Name: "ARGOCD_APP_REVISION", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Name: "KUBE_VERSION", Value: "1.34"},
		},
	}
	if err := stream.Send(&pluginpb.AppStreamRequest{Request: &pluginpb.AppStreamRequest_Metadata{Metadata: md}}); err != nil {
		return err
	}
	send := func(chunk []byte) error {
		return stream.Send(&pluginpb.AppStreamRequest{Request: &pluginpb.AppStreamRequest_File{File: &pluginpb.File{Chunk: chunk}}})
	}
	if err := send(p.head); err != nil {
		return err
	}
	for off := 0; off < len(p.rest); off += chunkSize {
		if err := send(p.rest[off:min(off+chunkSize, len(p.rest))]); err != nil {
			return err
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return err
	}
	if got := len(resp.GetManifests()); got != manifestCount {
		return fmt.Errorf("GenerateManifest returned %d manifests, want %d", got, manifestCount)
	}
	return nil
}

// extractAlone measures n times what Argo CD's sidecar does with a
// received tarball, without gRPC, the spool file and the command: check
// its SHA-256, extract it with tarball.Extract (from memory, in 1 KiB
// reads), remove the tree.
func extractAlone(ctx context.Context, dir string, tgz []byte, n int) (Sample, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return Sample{}, err
	}
	var s Sample
	for i := range n {
		start := time.Now()
		_ = sha256.Sum256(tgz)
		d := filepath.Join(dir, fmt.Sprint(i))
		if err := tarball.Extract(ctx, &chunked{r: bytes.NewReader(tgz)}, d, tarball.Options{}); err != nil {
			return Sample{}, err
		}
		if err := os.RemoveAll(d); err != nil {
			return Sample{}, err
		}
		s.Latencies = append(s.Latencies, time.Since(start))
	}
	slices.Sort(s.Latencies)
	for _, l := range s.Latencies {
		s.Wall += l
	}
	return s, nil
}

// chunked reads at most chunkSize bytes at a time, as the gRPC stream
// delivers them.
type chunked struct{ r io.Reader }

func (c *chunked) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), chunkSize)]) }

// WriteMarkdown writes the report as markdown: a line per repository and a
// table.
func (rep *Report) WriteMarkdown(w io.Writer) error {
	var buf bytes.Buffer
	for _, r := range rep.Repos {
		fmt.Fprintf(&buf, "- %s: %d files, %s of content, tar.gz %s; %d repeated requests per concurrency level\n",
			r.Name, r.Files, size(r.Content), size(r.Tarball), r.Requests)
	}
	buf.WriteString("\n| repository | request | concurrency | argo-like p50 | p99 | req/s | strata p50 | p99 | req/s | speedup p50 | speedup req/s |\n")
	buf.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rep.Repos {
		for _, row := range r.Rows {
			a, s := row.ArgoLike, row.Strata
			fmt.Fprintf(&buf, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %.2f× | %.2f× |\n",
				r.Name, row.Label, row.Concurrency,
				ms(a.Quantile(0.5)), ms(a.Quantile(0.99)), perSecond(a),
				ms(s.Quantile(0.5)), ms(s.Quantile(0.99)), perSecond(s),
				a.Quantile(0.5).Seconds()/s.Quantile(0.5).Seconds(), s.PerSecond()/a.PerSecond())
		}
		// Extract alone is less than what Argo CD's sidecar does, so
		// strata's lead over it is a lower bound.
		e, s := r.Extract, r.single()
		fmt.Fprintf(&buf, "| %s | tarball.Extract alone ×%d | 1 | %s | %s | %s | | | | ≥ %.2f× | ≥ %.2f× |\n",
			r.Name, len(e.Latencies), ms(e.Quantile(0.5)), ms(e.Quantile(0.99)), perSecond(e),
			e.Quantile(0.5).Seconds()/s.Quantile(0.5).Seconds(), s.PerSecond()/e.PerSecond())
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// single returns strata's sample of repeated requests one at a time.
func (r RepoReport) single() Sample {
	for _, row := range r.Rows {
		if row.Label == "repeated" && row.Concurrency == 1 {
			return row.Strata
		}
	}
	return Sample{}
}

// perSecond formats s's requests per second with about three significant
// digits.
func perSecond(s Sample) string {
	v := s.PerSecond()
	switch {
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// size formats n bytes in kB or MB.
func size(n int64) string {
	if n < 1e6 {
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// ms formats d in milliseconds with about three significant digits.
func ms(d time.Duration) string {
	m := float64(d) / float64(time.Millisecond)
	switch {
	case m < 10:
		return fmt.Sprintf("%.2f ms", m)
	case m < 100:
		return fmt.Sprintf("%.1f ms", m)
	}
	return fmt.Sprintf("%.0f ms", m)
}
