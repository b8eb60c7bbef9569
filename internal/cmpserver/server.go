package cmpserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
	"github.com/strata-dev/strata/internal/cmpserver/tarball"
	"github.com/strata-dev/strata/internal/hookexec"
	"github.com/strata-dev/strata/internal/memlimit"
	"github.com/strata-dev/strata/internal/params"
)

// DefaultSocketDir is where Argo CD's repo-server looks for plugin sockets
// when ARGOCD_PLUGINSOCKFILEPATH is not set.
const DefaultSocketDir = "/home/argocd/cmp-server/plugins"

// DefaultMaxMessageSize is gRPC's message size limit, as in Argo CD.
const DefaultMaxMessageSize = 100 << 20

// MessageSizeEnv names the variable that sets the gRPC message size of
// Argo CD's components, its sidecar's too, in MiB (default 100).
const MessageSizeEnv = "ARGOCD_GRPC_MAX_SIZE_MB"

// MessageSizeFromEnv reads MessageSizeEnv from environ (NAME=value
// entries), as Argo CD's sidecar does: the message size in bytes, and the
// bound on a generate command's manifests that fits in it (CommandOptions.
// MaxManifestBytes: 96% of it, room for the message's own encoding). It
// returns zeros, the defaults, when the variable is unset, and an error
// for a value that is not a whole number of MiB from 1 to 2047 (where
// Argo CD logs a warning and keeps 100).
func MessageSizeFromEnv(environ []string) (size, manifestBytes int, err error) {
	var raw string
	found := false
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, MessageSizeEnv+"="); ok {
			raw, found = v, true
		}
	}
	if !found || raw == "" {
		return 0, 0, nil
	}
	mb, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil || mb < 1 || mb > 2047 {
		return 0, 0, fmt.Errorf("%s=%q: set it to the gRPC message size in MiB, a whole number from 1 to 2047 (the default is 100), the same as the repo-server's", MessageSizeEnv, raw)
	}
	size = mb << 20
	return size, size / 100 * 96, nil
}

// KeepAliveMinEnv names the variable that sets, in Argo CD's components,
// its plugin sidecar's among them, how often a client may ping a server
// (a Go duration, default 10s); Argo CD's clients ping every twice that.
const KeepAliveMinEnv = "ARGOCD_GRPC_KEEP_ALIVE_MIN"

// DefaultKeepAliveMin is Argo CD's default for KeepAliveMinEnv: the
// repo-server's client then pings every 20 s.
const DefaultKeepAliveMin = 10 * time.Second

// KeepAliveMinFromEnv reads KeepAliveMinEnv from environ (NAME=value
// entries), as Argo CD's sidecar does: the shortest interval between a
// client's pings the server accepts. It returns 0, the default, when the
// variable is unset, and an error for a value that is not a positive Go
// duration (where Argo CD logs a warning and keeps 10s).
func KeepAliveMinFromEnv(environ []string) (time.Duration, error) {
	var raw string
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, KeepAliveMinEnv+"="); ok {
			raw = v
		}
	}
	if raw == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(raw))
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: set it to a positive duration such as 10s (the default), the same as the repo-server's: its client pings every twice that", KeepAliveMinEnv, raw)
	}
	return d, nil
}

// MaxOutputFor is the bound on what a command may print to stdout for a
// message size from MessageSizeFromEnv (CommandOptions.MaxOutput): twice
// the size, YAML being wordier than the JSON sent, and never less than
// hookexec's default (0, for size 0).
func MaxOutputFor(size int) int64 {
	if 2*int64(size) <= hookexec.DefaultMaxStdout {
		return 0
	}
	return 2 * int64(size)
}

// A Server serves one plugin over Argo CD's plugin protocol.
type Server struct {
	Plugin Plugin
	// Store unpacks the repositories the repo-server streams, and caches
	// them by checksum.
	Store *tarball.Store
	// Limits bound an unpacked repository; zero fields take tarball's defaults.
	Limits tarball.Limits
	// ShutdownGrace is how long in-flight requests may take to finish once
	// the context of Serve is done; then they are cancelled. Default 30s.
	ShutdownGrace time.Duration
	// StopWait is how long, after ShutdownGrace, the cancelled requests
	// have to stop their commands (SIGTERM to each command's process
	// group, SIGKILL after the command's grace) and remove their
	// workspaces before Serve returns; 0 is DefaultStopWait.
	StopWait       time.Duration
	MaxMessageSize int
	// KeepAliveMin is the shortest interval between a client's pings the
	// server accepts while a request runs, and between pings when none
	// does (see KeepAliveMinFromEnv); 0 is DefaultKeepAliveMin. A client
	// pinging more often is told to go away (GOAWAY too_many_pings), as
	// gRPC does, and its requests fail.
	KeepAliveMin time.Duration
	// CommandNamespaces runs each command of a request in its own user,
	// PID and IPC namespaces where the kernel allows it (see
	// hookexec.Tracker); otherwise what the commands start is followed
	// through the process tree. Namespaces rest on the kernel's own
	// guarantees, but Go can start a command in a new user namespace only
	// with a full fork: each start copies the server's page tables and
	// makes every page the server writes next a copy-on-write fault, a
	// cost that grows with the server's memory and falls on every request
	// in flight (docs/cmp.md).
	CommandNamespaces bool
	// MemoryBudget bounds the memory the requests' work may hold at once,
	// in bytes (see ErrMemoryBudget): the output of a generate or dynamic
	// parameters command is estimated before it is read, and a request
	// reserves that much until its answer is sent. 0 or negative is no
	// budget; cmp serve derives it from the container's memory limit.
	MemoryBudget int64
	// MemoryBudgetFrom says where MemoryBudget came from, for the error
	// of a refused request (such as "--memory-budget").
	MemoryBudgetFrom string
	// MaxWrittenBytes bounds what the commands of one request may write
	// into its workspace (its copy of the repository and its temporary
	// directory), measured while they run, each entry charged at least a
	// block (tarball.Workspace.Usage); it is also each command's
	// RLIMIT_FSIZE. A request past it is stopped, its commands killed,
	// with an error matching ErrDiskBudget. 0 is DefaultMaxWrittenBytes,
	// negative none.
	MaxWrittenBytes int64
	// MaxWrittenBytesTotal bounds what the commands of all requests in
	// flight may have written at once; the request whose measure passes
	// it is stopped. 0 is DefaultMaxWrittenBytesTotal, negative none.
	MaxWrittenBytesTotal int64
	Logger               *slog.Logger
	// Metrics, when set, count the requests and say whether the server
	// is serving (see NewMetrics).
	Metrics *Metrics
}

// Serve listens on the unix socket at path and serves until ctx is done,
// then stops accepting requests, lets in-flight ones finish (up to
// ShutdownGrace) and removes the socket.
func (s *Server) Serve(ctx context.Context, path string) error {
	if err := removeStaleSocket(path); err != nil {
		return err
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", path, err)
	}
	defer os.Remove(path)
	return s.ServeListener(ctx, lis)
}

// ServeListener serves on lis until ctx is done.
func (s *Server) ServeListener(ctx context.Context, lis net.Listener) error {
	log := s.logger()
	size := s.MaxMessageSize
	if size <= 0 {
		size = DefaultMaxMessageSize
	}
	keepAlive := s.KeepAliveMin
	if keepAlive <= 0 {
		keepAlive = DefaultKeepAliveMin
	}
	var running inflight
	gs := grpc.NewServer(append([]grpc.ServerOption{grpc.MaxRecvMsgSize(size), grpc.MaxSendMsgSize(size), grpc.ForceServerCodecV2(newCodec()),
		// gRPC's default, a ping every 5 minutes at most, would end every
		// render longer than about 80 s: Argo CD's repo-server pings every
		// 2×KeepAliveMin (20 s) while it waits.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: keepAlive}),
		grpc.ChainUnaryInterceptor(running.unary), grpc.ChainStreamInterceptor(running.stream)}, s.Metrics.serverOptions()...)...)
	svc := &service{s: s, removing: make(chan struct{}, maxBackgroundRemovals), memory: newMemoryBudget(s.MemoryBudget, s.budgetFrom()),
		disk: newDiskGuard(bytesOrDefault(s.MaxWrittenBytes, DefaultMaxWrittenBytes), bytesOrDefault(s.MaxWrittenBytesTotal, DefaultMaxWrittenBytesTotal), s.Metrics)}
	defer svc.removals.Wait()
	pluginpb.RegisterConfigManagementPluginServiceServer(gs, svc)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	reflection.Register(gs)
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)

	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		s.Metrics.setReady(false)
		hs.Shutdown()
		grace := s.ShutdownGrace
		if grace <= 0 {
			grace = 30 * time.Second
		}
		log.Info("shutting down: letting in-flight requests finish", "grace", grace.String())
		stopped := make(chan struct{})
		go func() { gs.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(grace):
			log.Warn("in-flight requests did not finish in time; cancelling them")
			gs.Stop()
		}
	}()
	info := s.Plugin.Info()
	log.Info("serving plugin", "name", info.Name, "version", info.Version, "address", lis.Addr().String())
	s.Metrics.setReady(ctx.Err() == nil)
	err := gs.Serve(lis)
	<-done
	// Stop cancelled the requests still running, but does not wait for
	// their handlers: wait for them to stop their commands' process
	// groups and remove their workspaces, so that nothing outlives the
	// server.
	wait := s.StopWait
	if wait <= 0 {
		wait = DefaultStopWait
	}
	waitCtx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if n := running.Wait(waitCtx); n > 0 {
		log.Warn("requests still running after the shutdown", "count", n, "waited", wait.String())
	}
	if err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// removeStaleSocket removes a socket file left by an earlier run; any other
// kind of file at path is an error.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket; remove it or choose another socket directory", path)
	}
	return os.Remove(path)
}

type service struct {
	pluginpb.UnimplementedConfigManagementPluginServiceServer
	s *Server
	// removing counts the workspaces being removed in the background; it
	// holds up to maxBackgroundRemovals.
	removing chan struct{}
	removals sync.WaitGroup
	memory   *memlimit.Budget // nil: none
	disk     *diskGuard       // nil: none
}

// bytesOrDefault is n, or def for 0.
func bytesOrDefault(n, def int64) int64 {
	if n == 0 {
		return def
	}
	return n
}

// budgetFrom names the setting of the memory budget in errors.
func (s *Server) budgetFrom() string {
	if s.MemoryBudgetFrom != "" {
		return s.MemoryBudgetFrom
	}
	return "Server.MemoryBudget"
}

// maxBackgroundRemovals bounds the private workspaces that may be removed
// after their request has been answered. Removing a workspace costs about
// as much as copying it (an unlink per file, on disk a journal update
// each); a request whose handler waits for it makes the repo-server wait
// too, since the reply's status follows the handler's return. Past the
// bound, requests remove their own, which bounds the disk they hold.
const maxBackgroundRemovals = 4

// tracker returns the Tracker for the commands a request runs in ws, a
// private copy, or nil for a read-only view of the cache (the built-in
// plugins run no command).
func (svc *service) tracker(ws *tarball.Workspace) *hookexec.Tracker {
	if ws.TempDir() == "" {
		return nil
	}
	t := hookexec.NewTracker()
	t.NoNamespaces = !svc.s.CommandNamespaces
	return t
}

// close ends a request: it kills what its commands left behind (tr) and
// closes ws: for a private copy, in the background if there is room.
func (svc *service) close(ws *tarball.Workspace, tr *hookexec.Tracker) {
	if ws.TempDir() == "" {
		ws.Close() // a read-only view of the cache: only a release
		return
	}
	end := func() {
		if tr != nil {
			err := tr.Close()
			if err != nil {
				svc.s.logger().Warn("the workspace of a request is removed, not recycled", "reason", err.Error())
			}
			ws.Settle(err)
		}
		ws.Close()
	}
	select {
	case svc.removing <- struct{}{}:
		svc.removals.Add(1)
		go func() {
			defer svc.removals.Done()
			end()
			<-svc.removing
		}()
	default:
		end()
	}
}

var _ pluginpb.ConfigManagementPluginServiceServer = (*service)(nil)

// appStream is what the three streaming RPCs have in common.
type appStream interface {
	Recv() (*pluginpb.AppStreamRequest, error)
	Context() context.Context
}

// chunkReader reads the file chunks of a stream as one byte stream.
type chunkReader struct {
	stream appStream
	buf    []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		msg, err := r.stream.Recv()
		if err != nil {
			return 0, err // io.EOF at the end of the stream
		}
		f := msg.GetFile()
		if f == nil {
			return 0, errors.New("the stream holds a second metadata message; only file chunks may follow the first")
		}
		r.buf = f.GetChunk()
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// receive reads a request stream: the metadata, then the repository, which
// it unpacks into a private workspace.
func (svc *service) receive(stream appStream) (*params.Request, *tarball.Workspace, error) {
	ctx := stream.Context()
	first, err := stream.Recv()
	if err != nil {
		return nil, nil, status.Errorf(codes.InvalidArgument, "reading the request: %v", err)
	}
	md := first.GetMetadata()
	if md == nil {
		return nil, nil, status.Error(codes.InvalidArgument, "the first message of the stream must be the metadata")
	}
	rel := filepath.Clean(filepath.FromSlash(md.GetAppRelPath()))
	if rel != "." && !filepath.IsLocal(rel) {
		return nil, nil, status.Errorf(codes.InvalidArgument, "appRelPath %q is not a path inside the repository", md.GetAppRelPath())
	}
	req := &params.Request{AppName: md.GetAppName(), NoParametersVar: true}
	for _, e := range md.GetEnv() {
		name := e.GetName()
		switch {
		case name == "":
			// Argo CD's sidecar drops such an entry, as it drops those
			// with empty values (CommandPlugin.Environ).
		case strings.ContainsAny(name, "=\x00"):
			return nil, nil, status.Errorf(codes.InvalidArgument, "environment entry %q is not a valid variable name", name)
		case name == params.ParametersVar:
			ps, err := params.ParseParameters([]byte(e.GetValue()), params.ParametersVar)
			if err != nil {
				return nil, nil, status.Errorf(codes.InvalidArgument, "%v", err)
			}
			req.Parameters, req.ParametersJSON, req.NoParametersVar = ps, e.GetValue(), false
		case strings.HasPrefix(name, "PARAM_"):
			// Derived from ARGOCD_APP_PARAMETERS; strata derives its own.
		default:
			req.Env = append(req.Env, name+"="+e.GetValue())
		}
	}
	info := svc.s.Plugin.Info()
	ws, err := svc.s.Store.Receive(ctx, &chunkReader{stream: stream}, md.GetSize(), md.GetChecksum(),
		tarball.Options{Limits: svc.s.Limits, PreserveFileMode: info.PreserveFileMode, ReadOnly: info.ReadOnlyRepo})
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, nil, status.Errorf(codes.InvalidArgument, "receiving the repository: %v", err)
	}
	req.RepoRoot = ws.Dir()
	req.TempDir = ws.TempDir()
	req.AppPath = filepath.Join(ws.Dir(), rel)
	if fi, err := os.Stat(req.AppPath); err != nil || !fi.IsDir() {
		svc.close(ws, nil)
		return nil, nil, status.Errorf(codes.InvalidArgument, "appRelPath %q is not a directory of the repository", md.GetAppRelPath())
	}
	return req, ws, nil
}

// pluginError turns a plugin's error into a gRPC status the repo-server
// shows in the UI.
func pluginError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return status.Errorf(status.FromContextError(ctx.Err()).Code(), "%v", err)
	}
	if errors.Is(err, ErrMemoryBudget) || errors.Is(err, ErrDiskBudget) {
		return status.Error(codes.ResourceExhausted, err.Error())
	}
	return status.Error(codes.Unknown, err.Error())
}

func (svc *service) GenerateManifest(stream pluginpb.ConfigManagementPluginService_GenerateManifestServer) error {
	start := time.Now()
	req, ws, err := svc.receive(stream)
	if err != nil {
		return err
	}
	tr := svc.tracker(ws)
	defer svc.close(ws, tr)
	ctx, watch := svc.disk.watch(withTracker(stream.Context(), tr), ws, tr)
	defer watch.end()
	ctx, end := svc.memory.Begin(ctx)
	defer end() // after the answer is sent
	manifests, err := svc.s.Plugin.Generate(ctx, req)
	if werr := watch.finish(err); werr != nil {
		err = werr // what went wrong after it, too
	}
	log := svc.s.logger().With("rpc", "GenerateManifest", "app", req.AppName)
	if err != nil {
		log.Warn("generate failed", "err", err, "duration", time.Since(start))
		return pluginError(ctx, err)
	}
	log.Info("generated manifests", "count", len(manifests), "duration", time.Since(start))
	return stream.SendAndClose(&pluginpb.ManifestResponse{Manifests: manifests, SourceType: "Plugin"})
}

func (svc *service) MatchRepository(stream pluginpb.ConfigManagementPluginService_MatchRepositoryServer) error {
	req, ws, err := svc.receive(stream)
	if err != nil {
		return err
	}
	tr := svc.tracker(ws)
	defer svc.close(ws, tr)
	ctx, watch := svc.disk.watch(withTracker(stream.Context(), tr), ws, tr)
	defer watch.end()
	ctx, end := svc.memory.Begin(ctx)
	defer end()
	info := svc.s.Plugin.Info()
	ok, err := svc.s.Plugin.Match(ctx, req)
	if werr := watch.finish(err); werr != nil {
		err = werr // what went wrong after it, too
	}
	if err != nil {
		return pluginError(ctx, err)
	}
	return stream.SendAndClose(&pluginpb.RepositoryResponse{IsSupported: ok, IsDiscoveryEnabled: info.DiscoveryConfigured})
}

func (svc *service) GetParametersAnnouncement(stream pluginpb.ConfigManagementPluginService_GetParametersAnnouncementServer) error {
	req, ws, err := svc.receive(stream)
	if err != nil {
		return err
	}
	tr := svc.tracker(ws)
	defer svc.close(ws, tr)
	ctx, watch := svc.disk.watch(withTracker(stream.Context(), tr), ws, tr)
	defer watch.end()
	ctx, end := svc.memory.Begin(ctx)
	defer end()
	anns, err := svc.s.Plugin.Announce(ctx, req)
	if werr := watch.finish(err); werr != nil {
		err = werr // what went wrong after it, too
	}
	if err != nil {
		return pluginError(ctx, err)
	}
	if b, ok := appendAnnouncements(nil, anns); ok {
		// SendAndClose sends its message with SendMsg: the same, encoded.
		msg := encoded(b)
		return stream.SendMsg(&msg)
	}
	return stream.SendAndClose(announcementResponse(anns))
}

func (svc *service) CheckPluginConfiguration(context.Context, *emptypb.Empty) (*pluginpb.CheckPluginConfigurationResponse, error) {
	info := svc.s.Plugin.Info()
	return &pluginpb.CheckPluginConfigurationResponse{
		IsDiscoveryConfigured: info.DiscoveryConfigured,
		ProvideGitCreds:       info.ProvideGitCreds,
	}, nil
}
