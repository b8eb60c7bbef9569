package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
)

// pluginYAML is the plugin Argo CD's sidecar and strata serve.
const pluginYAML = `apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: cat
spec:
  generate:
    command: [cat]
    args: [m.yaml]
`

// A server is a plugin server process on a unix socket.
type server struct {
	name   string // as the tables show it
	kind   string // argo, strata, floor
	socket string
	work   string // its work directory ("" for the floor, which writes nothing)
	cmd    *exec.Cmd
	log    string // its stderr and stdout
	done   chan struct{}
	err    error // of Wait, once done is closed
}

// A serverSpec says how to start a server.
type serverSpec struct {
	name, kind string
	argv       []string
	env        []string
	socket     string
	work       string
}

// start starts the server and waits until it answers
// CheckPluginConfiguration on its socket.
func start(ctx context.Context, sp serverSpec, logDir string) (*server, error) {
	s := &server{name: sp.name, kind: sp.kind, socket: sp.socket, work: sp.work, done: make(chan struct{})}
	s.log = filepath.Join(logDir, strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(sp.name)+".log")
	logf, err := os.Create(s.log)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(sp.argv[0], sp.argv[1:]...)
	s.cmd.Env = sp.env
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", sp.name, err)
	}
	go func() {
		s.err = s.cmd.Wait()
		logf.Close()
		close(s.done)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := ping(ctx, s.socket)
		if err == nil {
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s exited before serving (%v); its log %s ends:\n%s", sp.name, s.err, s.log, tail(s.log))
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s does not answer on %s after 60s (%v); its log %s ends:\n%s", sp.name, s.socket, err, s.log, tail(s.log))
		}
	}
}

// ping calls CheckPluginConfiguration once, if the socket exists.
func ping(ctx context.Context, socket string) error {
	if _, err := os.Stat(socket); err != nil {
		return err
	}
	conn, err := dial(socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = pluginpb.NewConfigManagementPluginServiceClient(conn).CheckPluginConfiguration(ctx, &emptypb.Empty{})
	return err
}

// stop ends the server: Argo CD's sidecar ignores SIGTERM, so every
// server gets SIGKILL, its process group with it (the plugin commands).
func (s *server) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}

// resetPeakRSS resets the high-water mark of the server's resident set
// (/proc/PID/clear_refs, Linux 4.0 and later).
func (s *server) resetPeakRSS() error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.cmd.Process.Pid), []byte("5"), 0)
}

// peakRSS returns the high-water mark of the server's resident set, in
// bytes (VmHWM of /proc/PID/status).
func (s *server) peakRSS() (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc/PID/status")
}

// tail returns the last 2 KB of a file.
func tail(name string) string {
	data, _ := os.ReadFile(name)
	if len(data) > 2048 {
		data = data[len(data)-2048:]
	}
	return string(data)
}

// serveFloor serves the floor on socket until the process is killed: a
// plugin server that only does what any server must, drain the stream
// and check its size and SHA-256, and answers GenerateManifest with the
// manifests of m.yaml without writing anything. With dir set it also
// starts the plugin's command once per request, `cat m.yaml` in dir (a
// directory holding m.yaml, written once at start-up), and checks its
// output: what a command plugin costs at least, with no copy of the
// repository and no isolation.
func serveFloor(socket, dir string) error {
	if dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "m.yaml"), []byte(manifests), 0o644); err != nil {
			return err
		}
	}
	lis, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(100<<20), grpc.MaxSendMsgSize(100<<20))
	pluginpb.RegisterConfigManagementPluginServiceServer(gs, floor{dir: dir})
	return gs.Serve(lis)
}

type floor struct {
	pluginpb.UnimplementedConfigManagementPluginServiceServer
	dir string // where to run `cat m.yaml`; "" runs nothing
}

// floorManifests is what the floor answers: m.yaml's three manifests as
// JSON, as the servers send them.
var floorManifests = []string{
	`{"apiVersion":"v1","data":{"replicas":"3"},"kind":"ConfigMap","metadata":{"name":"web-config"}}`,
	`{"apiVersion":"v1","data":{"ENV":"prod","LOG_LEVEL":"info"},"kind":"ConfigMap","metadata":{"name":"web-env"}}`,
	`{"apiVersion":"v1","data":{"feature.x":"on"},"kind":"ConfigMap","metadata":{"name":"web-flags"}}`,
}

func (floor) CheckPluginConfiguration(context.Context, *emptypb.Empty) (*pluginpb.CheckPluginConfigurationResponse, error) {
	return &pluginpb.CheckPluginConfigurationResponse{}, nil
}

func (f floor) GenerateManifest(stream pluginpb.ConfigManagementPluginService_GenerateManifestServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	md := first.GetMetadata()
	if md == nil {
		return status.Error(codes.InvalidArgument, "the first message must be the metadata")
	}
	h := sha256.New()
	var n int64
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		chunk := msg.GetFile().GetChunk()
		h.Write(chunk)
		n += int64(len(chunk))
	}
	if n != md.GetSize() || hex.EncodeToString(h.Sum(nil)) != md.GetChecksum() {
		return status.Errorf(codes.InvalidArgument, "received %d bytes whose checksum does not match the metadata's (%d bytes)", n, md.GetSize())
	}
	if f.dir != "" {
		cmd := exec.CommandContext(stream.Context(), "cat", "m.yaml")
		cmd.Dir = f.dir
		out, err := cmd.Output()
		if err != nil {
			return status.Errorf(codes.Unknown, "cat m.yaml: %v", err)
		}
		if string(out) != manifests {
			return status.Error(codes.Internal, "cat m.yaml printed something else than m.yaml")
		}
	}
	return stream.SendAndClose(&pluginpb.ManifestResponse{Manifests: floorManifests, SourceType: "Plugin"})
}
