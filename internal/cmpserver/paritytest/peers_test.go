package paritytest_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
	"github.com/strata-dev/strata/internal/testbin"
)

// A peer is a plugin server process serving one plugin.yaml.
type peer struct {
	name   string
	socket string
	log    string
	cmd    *exec.Cmd
	done   chan struct{}
}

// peers are Argo CD's sidecar and strata, serving the same plugin.yaml.
type peers struct{ argo, strata *peer }

// peerSet starts each plugin.yaml's servers once, on first use, and stops
// them all when the test ends.
type peerSet struct {
	t       *testing.T
	argoBin string
	strata  string
	path    string // PATH of both servers: the system's, and helm's directory
	mu      sync.Mutex
	started map[string]*peers
}

func newPeerSet(t *testing.T) *peerSet {
	t.Helper()
	helm := testbin.Path(t, "helm")
	ps := &peerSet{t: t, argoBin: testbin.Path(t, "argocd-cmp-server"), strata: testbin.Strata(t), started: map[string]*peers{}}
	// The tools a sidecar image would hold: helm (testbin names it by
	// version), kustomize (strata's, without Helm), and a helmfile-like
	// wrapper script of the kind users install.
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(helm, filepath.Join(bin, "helm")); err != nil {
		t.Fatal(err)
	}
	tools := map[string]string{
		"kustomize":           "#!/bin/sh\n[ \"$1\" = build ] && shift\nexec " + ps.strata + " kustomize build \"${1:-.}\"\n",
		"argo-cd-helmfile.sh": helmfileScript,
	}
	for name, script := range tools {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ps.path = bin + ":" + os.Getenv("PATH")
	t.Cleanup(ps.stopAll)
	return ps
}

// get returns the servers of a plugin.yaml, starting them if need be.
func (ps *peerSet) get(t *testing.T, pluginYAML string, sidecarEnv []string) *peers {
	t.Helper()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	key := pluginYAML + "\x00" + strings.Join(sidecarEnv, "\x00")
	if p, ok := ps.started[key]; ok {
		return p
	}
	dir, err := os.MkdirTemp("", "cmpp") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	ps.t.Cleanup(func() { os.RemoveAll(dir) })
	conf := filepath.Join(dir, "config")
	for _, d := range []string{conf, dir + "/home", dir + "/a/sock", dir + "/a/work", dir + "/a/tmp", dir + "/s/sock", dir + "/s/tmp"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(conf, "plugin.yaml"), []byte(pluginYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := cmpserver.ParseConfig([]byte(pluginYAML), "plugin.yaml")
	if err != nil {
		t.Fatalf("strata refuses the plugin.yaml: %v", err)
	}
	sock := cfg.Info().SocketName()
	base := append([]string{"PATH=" + ps.path, "HOME=" + dir + "/home", "LANG=C.UTF-8"}, sidecarEnv...)
	p := &peers{}
	p.argo = startPeer(t, "argocd-cmp-server", filepath.Join(dir, "a/sock", sock), filepath.Join(dir, "a.log"),
		[]string{ps.argoBin, "--config-dir-path", conf},
		append(slices.Clone(base), "TMPDIR="+dir+"/a/tmp", "ARGOCD_PLUGINSOCKFILEPATH="+dir+"/a/sock", "ARGOCD_CMP_WORKDIR="+dir+"/a/work"))
	p.strata = startPeer(t, "strata", filepath.Join(dir, "s/sock", sock), filepath.Join(dir, "s.log"),
		[]string{ps.strata, "cmp", "serve", "--config", filepath.Join(conf, "plugin.yaml"), "--socket-dir", dir + "/s/sock", "--cache-dir", dir + "/s/cache"},
		append(slices.Clone(base), "TMPDIR="+dir+"/s/tmp"))
	ps.started[key] = p
	return p
}

func (ps *peerSet) stopAll() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.started {
		p.argo.stop()
		p.strata.stop()
	}
}

func startPeer(t *testing.T, name, socket, logFile string, argv, env []string) *peer {
	t.Helper()
	logf, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{name: name, socket: socket, log: logFile, done: make(chan struct{})}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := ping(socket)
		if err == nil {
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited before serving: %s", name, readLog(logFile))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			t.Fatalf("%s does not answer on %s after 60s (%v): %s", name, socket, err, readLog(logFile))
		}
	}
}

func readLog(file string) string {
	b, _ := os.ReadFile(file)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

func ping(socket string) error {
	if _, err := os.Stat(socket); err != nil {
		return err
	}
	conn, err := dial(socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = pluginpb.NewConfigManagementPluginServiceClient(conn).CheckPluginConfiguration(ctx, &emptypb.Empty{})
	return err
}

// stop ends the server: Argo CD's sidecar ignores SIGTERM, so both get
// SIGKILL, their process groups (the plugin commands) with them.
func (p *peer) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

func dial(socket string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(100<<20), grpc.MaxCallSendMsgSize(100<<20)))
}

// RPCs a case calls.
const (
	rpcGenerate = "generate"
	rpcMatch    = "match"
	rpcAnnounce = "announce"
	rpcCheck    = "check" // CheckPluginConfiguration alone
)

// ask sends one request to socket as the repo-server does and returns the
// answer as the repo-server reads it (see the read* functions), and the
// server's error message, if any.
func ask(ctx context.Context, socket, rpc string, md *pluginpb.ManifestRequestMetadata, tgz []byte) (answer, errMsg string) {
	conn, err := dial(socket)
	if err != nil {
		return "dial: " + err.Error(), ""
	}
	defer conn.Close()
	c := pluginpb.NewConfigManagementPluginServiceClient(conn)
	md = cloneMetadata(md)
	cfg, err := c.CheckPluginConfiguration(ctx, &emptypb.Empty{})
	if err != nil {
		return "CheckPluginConfiguration: " + err.Error(), ""
	}
	switch rpc {
	case rpcCheck:
		return fmt.Sprintf("discovery %v, git credentials %v", cfg.GetIsDiscoveryConfigured(), cfg.GetProvideGitCreds()), ""
	case rpcGenerate:
		resp, failed, msg := call(c.GenerateManifest(ctx))(md, tgz)
		if failed != "" {
			return failed, msg
		}
		return readManifests(resp.GetManifests())
	case rpcMatch:
		if !cfg.GetIsDiscoveryConfigured() {
			return "discovery not configured", ""
		}
		resp, failed, msg := call(c.MatchRepository(ctx))(md, tgz)
		if failed == "error" {
			// The repo-server logs it and takes the plugin as not matching.
			return "not supported", msg
		}
		if failed != "" {
			return failed, msg
		}
		if !resp.GetIsSupported() {
			return "not supported", ""
		}
		return "supported", ""
	case rpcAnnounce:
		resp, failed, msg := call(c.GetParametersAnnouncement(ctx))(md, tgz)
		if failed != "" {
			return failed, msg
		}
		return readAnnouncements(resp.GetParameterAnnouncements()), ""
	}
	return "unknown rpc " + rpc, ""
}

// appStream is a client stream of one of the plugin's streaming RPCs.
type appStream[T any] interface {
	cmpserver.AppSender
	CloseAndRecv() (T, error)
}

// call returns a function sending the application on the stream that
// opening returned and reading the answer. failed is "" on success, the
// failure as the answer otherwise: "error" with the server's message when
// the server refused the request.
func call[T any](stream appStream[T], err error) func(md *pluginpb.ManifestRequestMetadata, tgz []byte) (resp T, failed, msg string) {
	return func(md *pluginpb.ManifestRequestMetadata, tgz []byte) (resp T, failed, msg string) {
		if err != nil {
			return resp, err.Error(), ""
		}
		if err := cmpserver.SendApp(stream, md, tgz); err != nil {
			return resp, "send: " + err.Error(), ""
		}
		resp, err := stream.CloseAndRecv()
		if err != nil {
			return resp, "error", status.Convert(err).Message()
		}
		return resp, "", ""
	}
}

func cloneMetadata(md *pluginpb.ManifestRequestMetadata) *pluginpb.ManifestRequestMetadata {
	out := &pluginpb.ManifestRequestMetadata{AppName: md.GetAppName(), AppRelPath: md.GetAppRelPath()}
	for _, e := range md.GetEnv() {
		out.Env = append(out.Env, &pluginpb.EnvEntry{Name: e.GetName(), Value: e.GetValue()})
	}
	return out
}

// readManifests reads a GenerateManifest answer as the repo-server does:
// every string is a stream of documents (YAML or JSON), empty ones and
// null skipped; each must be an object with a kind; an object whose items
// is a list is replaced by its items, each of which must be an object
// (one level: Lists inside are kept as they are); one whose items is null,
// with neither spec nor status, is dropped. The result is one canonical
// JSON object a line.
func readManifests(manifests []string) (string, string) {
	var out []string
	for _, m := range manifests {
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(m), 4096)
		for {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return "error", "reading the answer: " + err.Error()
			}
			raw = bytes.TrimSpace(raw)
			if len(raw) == 0 || string(raw) == "null" {
				continue
			}
			js, err := sigsyaml.YAMLToJSON(raw)
			if err != nil {
				return "error", "reading the answer: " + err.Error()
			}
			var obj map[string]any
			if err := json.Unmarshal(js, &obj); err != nil {
				return "error", "reading the answer: not an object: " + err.Error()
			}
			if k, _ := obj["kind"].(string); k == "" {
				return "error", "reading the answer: Object 'Kind' is missing"
			}
			items, isList := obj["items"].([]any)
			_, hasSpec := obj["spec"]
			_, hasStatus := obj["status"]
			it, hasItems := obj["items"]
			switch {
			case isList:
				for _, item := range items {
					im, ok := item.(map[string]any)
					if !ok {
						return "error", "reading the answer: items member is not an object"
					}
					out = append(out, canonical(im))
				}
			case hasItems && it == nil && !hasSpec && !hasStatus:
			default:
				out = append(out, canonical(obj))
			}
		}
	}
	if len(out) == 0 {
		return "no manifests", ""
	}
	return strings.Join(out, "\n"), ""
}

func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "unmarshalable: " + err.Error()
	}
	return string(b)
}

// readAnnouncements writes announcements one a line, as JSON, with an
// empty itemType or collectionType as the string the UI takes it for.
func readAnnouncements(anns []*pluginpb.ParameterAnnouncement) string {
	if len(anns) == 0 {
		return "no announcements"
	}
	var lines []string
	for _, a := range anns {
		m := map[string]any{"name": a.GetName()}
		set := func(k, v string) {
			if v != "" {
				m[k] = v
			}
		}
		set("title", a.GetTitle())
		set("tooltip", a.GetTooltip())
		set("string", a.GetString_())
		it, ct := a.GetItemType(), a.GetCollectionType()
		if it == "" {
			it = "string"
		}
		if ct == "" {
			ct = "string"
		}
		m["itemType"], m["collectionType"] = it, ct
		if a.GetRequired() {
			m["required"] = true
		}
		if len(a.GetArray()) > 0 {
			m["array"] = a.GetArray()
		}
		if len(a.GetMap()) > 0 {
			m["map"] = a.GetMap()
		}
		lines = append(lines, canonical(m))
	}
	return strings.Join(lines, "\n")
}

// packRepo packs dir as the repo-server packs a repository for a plugin
// (util/io/files.Tgz): a walk that does not follow links, every directory,
// regular file and symbolic link (the link's own target text) under its
// path relative to dir, the root as ".", with the modes and times the
// file system gives; nothing left out, .git included.
func packRepo(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	err := filepath.Walk(dir, func(p string, fi fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		mode := fi.Mode()
		if !mode.IsRegular() && !mode.IsDir() && mode&fs.ModeSymlink == 0 {
			return nil
		}
		link := ""
		if mode&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if mode.IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if _, err := tw.Write(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = gz.Close()
	}
	if err != nil {
		t.Fatalf("packing %s: %v", dir, err)
	}
	return buf.Bytes()
}

// writeRepo writes a repository: path → content, where a content starting
// with "link:" makes a symbolic link to the rest, and a path ending in "/"
// an empty directory. modes sets a file's or directory's mode afterwards.
// Every repository gets a small .git, as the repo-server's checkouts have.
func writeRepo(t *testing.T, files map[string]string, modes map[string]fs.FileMode) string {
	t.Helper()
	dir := t.TempDir()
	all := map[string]string{
		".git/HEAD":   "ref: refs/heads/main\n",
		".git/config": "[core]\n\trepositoryformatversion = 0\n",
		".git/objects/ab/cdef0123456789abcdef0123456789abcdef01": "x\x01\x02 compressed object",
		".git/refs/heads/main": "0123456789abcdef0123456789abcdef01234567\n",
	}
	for k, v := range files {
		all[k] = v
	}
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		content := all[name]
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasSuffix(name, "/"):
			err := os.MkdirAll(p, 0o755)
			if err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(content, "link:"):
			if err := os.Symlink(strings.TrimPrefix(content, "link:"), p); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Chmod(filepath.Join(dir, ".git/objects/ab/cdef0123456789abcdef0123456789abcdef01"), 0o444); err != nil {
		t.Fatal(err)
	}
	for name, mode := range modes {
		if err := os.Chmod(filepath.Join(dir, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// describe is a short form of a request for messages.
func describe(md *pluginpb.ManifestRequestMetadata) string {
	var env []string
	for _, e := range md.GetEnv() {
		env = append(env, e.GetName()+"="+e.GetValue())
	}
	return fmt.Sprintf("appRelPath %q, env %q", md.GetAppRelPath(), env)
}
