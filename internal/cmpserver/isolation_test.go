package cmpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
	"github.com/strata-dev/strata/internal/cmpserver/tarball"
	"github.com/strata-dev/strata/internal/params"
)

// serveStore serves p with store; the client is closed and the server
// stopped when the test ends.
func serveStore(t *testing.T, dir string, store *tarball.Store, p cmpserver.Plugin) pluginpb.ConfigManagementPluginServiceClient {
	t.Helper()
	return serve(t, dir, &cmpserver.Server{Plugin: p, Store: store, ShutdownGrace: 5 * time.Second})
}

// serve serves srv on a socket in dir, and returns a client of it.
func serve(t *testing.T, dir string, srv *cmpserver.Server) pluginpb.ConfigManagementPluginServiceClient {
	t.Helper()
	socket := filepath.Join(dir, srv.Plugin.Info().SocketName())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, socket) }()
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		cancel()
		<-done
	})
	return pluginpb.NewConfigManagementPluginServiceClient(conn)
}

func generate(t *testing.T, ctx context.Context, c pluginpb.ConfigManagementPluginServiceClient, app string, tgz []byte) ([]string, error) {
	stream, err := c.GenerateManifest(ctx)
	if err != nil {
		return nil, err
	}
	send(t, stream, app, "app", nil, tgz)
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return nil, err
	}
	return resp.GetManifests(), nil
}

// waitFor polls until find returns a path, and returns it.
func waitFor(t *testing.T, what string, find func() string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if p := find(); p != "" {
			return p
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s after 20s", what)
	return ""
}

// TestCommandIsolation plays a hostile repository against the server, as
// issue 11 found it: application "victim" renders its ConfigMap; while one
// of its requests is in flight, application "attacker", whose plugin runs
// a script from its repository, tries to append a ClusterRoleBinding to
// the victim's manifest in the repository cache and in the victim's
// workspace, by relative ("../") and absolute paths, and to add files
// beside them. Confined, every attempt fails and the victim renders what
// its commit holds, now and from the cache later. Unconfined (the control
// that shows the attack is real), the victim's workspace is tampered
// with.
func TestCommandIsolation(t *testing.T) {
	const victimManifest = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"victim"}}`
	victim := tarGz(t, map[string]string{
		"app/m.yaml": victimManifest + "\n",
		// Waits for the test's go-ahead, written into its workspace.
		"app/run.sh": "while [ ! -e release ]; do sleep 0.01; done\ncat m.yaml\n",
	})
	const attack = `while read -r t; do
  if printf '%s\n' '---' '{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"escaped"}}' >> "$t" 2>/dev/null; then
    echo "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"wrote\",\"annotations\":{\"path\":\"$t\"}}}"
  fi
  if echo x > "$(dirname "$t")/added.yaml" 2>/dev/null; then
    echo "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"added\",\"annotations\":{\"path\":\"$t\"}}}"
  fi
done < targets.txt
cat m.yaml
`
	const attackerManifest = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"attacker"}}`

	for _, tc := range []struct {
		name      string
		noSandbox bool
	}{
		{"confined", false},
		{"unconfined control", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "cmp") // short: unix socket paths are limited
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			store, err := tarball.NewStore(filepath.Join(dir, "repos"), 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			p := newCommandPlugin(t, "  generate:\n    command: [sh, run.sh]\n", cmpserver.CommandOptions{NoSandbox: tc.noSandbox}, nil)
			client := serveStore(t, dir, store, p.Hiding(store.Root()))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			// The victim's request, in flight until released.
			type result struct {
				ms  []string
				err error
			}
			victimDone := make(chan result, 1)
			go func() {
				ms, err := generate(t, ctx, client, "victim", victim)
				victimDone <- result{ms, err}
			}()
			wsM := waitFor(t, "victim workspace", func() string {
				m, _ := filepath.Glob(filepath.Join(store.Root(), "work", "ws-*", "repo", "app", "run.sh"))
				if len(m) == 1 {
					return filepath.Join(filepath.Dir(m[0]), "m.yaml")
				}
				return ""
			})
			cached, _ := filepath.Glob(filepath.Join(store.Root(), "cache", "*", "app", "m.yaml"))
			if len(cached) != 1 {
				t.Fatalf("cache holds %q, want the victim's tree", cached)
			}
			cacheM := cached[0]
			// From the attacker's application directory,
			// <root>/work/ws-<x>/repo/app, the same files by "../".
			from := filepath.Join(store.Root(), "work", "ws-attacker", "repo", "app")
			relCache, _ := filepath.Rel(from, cacheM)
			relWS, _ := filepath.Rel(from, wsM)
			targets := strings.Join([]string{cacheM, relCache, wsM, relWS}, "\n") + "\n"
			attacker := tarGz(t, map[string]string{
				"app/m.yaml":      attackerManifest + "\n",
				"app/run.sh":      attack,
				"app/targets.txt": targets,
			})

			got, err := generate(t, ctx, client, "attacker", attacker)
			if err != nil {
				t.Fatalf("attacker's Generate: %v", err)
			}
			if err := os.WriteFile(filepath.Join(filepath.Dir(wsM), "release"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			r := <-victimDone
			if r.err != nil {
				t.Fatalf("victim's Generate: %v", r.err)
			}
			escaped := len(got) > 1
			tampered := strings.Contains(strings.Join(r.ms, "\n"), "ClusterRoleBinding")

			if tc.noSandbox {
				if !escaped || !tampered {
					t.Fatalf("unconfined, the attack did not work, so the test proves nothing: attacker got %q, victim %q", got, r.ms)
				}
				return
			}
			if escaped {
				t.Errorf("the attacker's script wrote outside its workspace: %q", got)
			}
			if want := []string{attackerManifest}; !slices.Equal(got, want) {
				t.Errorf("attacker's manifests = %q, want %q", got, want)
			}
			if want := []string{victimManifest}; !slices.Equal(r.ms, want) {
				t.Errorf("victim's manifests in flight = %q, want %q", r.ms, want)
			}
			if b, err := os.ReadFile(cacheM); err != nil || string(b) != victimManifest+"\n" {
				t.Errorf("cached %s = %q, %v; want it unchanged", cacheM, b, err)
			}
			// Later, from the cache: the same.
			go func() {
				ms, err := generate(t, ctx, client, "victim", victim)
				victimDone <- result{ms, err}
			}()
			ws2 := waitFor(t, "second victim workspace", func() string {
				m, _ := filepath.Glob(filepath.Join(store.Root(), "work", "ws-*", "repo", "app", "run.sh"))
				for _, f := range m {
					if filepath.Dir(f) != filepath.Dir(wsM) {
						return filepath.Dir(f)
					}
				}
				return ""
			})
			if err := os.WriteFile(filepath.Join(ws2, "release"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			r = <-victimDone
			if r.err != nil {
				t.Fatalf("victim's second Generate: %v", r.err)
			}
			if want := []string{victimManifest}; !slices.Equal(r.ms, want) {
				t.Errorf("victim's manifests from the cache = %q, want %q", r.ms, want)
			}
			if st := store.Stats(); st.Hits != 1 || st.Misses != 2 || st.Extractions != 2 {
				t.Errorf("Stats() = %+v, want the victim's second request a hit, its first and the attacker's misses", st)
			}
		})
	}
}

// readOnlyPlugin reads m.json like catPlugin, and records where.
type readOnlyPlugin struct {
	catPlugin
	seen chan *params.Request
}

func (readOnlyPlugin) Info() cmpserver.Info {
	return cmpserver.Info{Name: "ro", ReadOnlyRepo: true}
}

func (p readOnlyPlugin) Generate(ctx context.Context, req *params.Request) ([]string, error) {
	p.seen <- req
	data, err := os.ReadFile(filepath.Join(req.AppPath, "m.json"))
	if err != nil {
		return nil, err
	}
	return []string{strings.TrimSpace(string(data))}, nil
}

// TestReadOnlyRepo: a plugin that never writes the repository gets the
// verified cached tree itself, without write permission, and no
// temporary directory; a repeated request gets the same tree, no copy.
func TestReadOnlyRepo(t *testing.T) {
	dir, err := os.MkdirTemp("", "cmp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	store, err := tarball.NewStore(filepath.Join(dir, "repos"), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	p := readOnlyPlugin{seen: make(chan *params.Request, 2)}
	client := serveStore(t, dir, store, p)
	repo := tarGz(t, map[string]string{"app/m.json": `{"kind":"ConfigMap"}`})
	var roots []string
	for range 2 {
		got, err := generate(t, context.Background(), client, "ro", repo)
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if want := []string{`{"kind":"ConfigMap"}`}; !slices.Equal(got, want) {
			t.Errorf("manifests = %q, want %q", got, want)
		}
		req := <-p.seen
		if req.TempDir != "" {
			t.Errorf("TempDir = %q, want none", req.TempDir)
		}
		roots = append(roots, req.RepoRoot)
	}
	cache := filepath.Join(store.Root(), "cache") + string(filepath.Separator)
	if !strings.HasPrefix(roots[0], cache) || roots[0] != roots[1] {
		t.Errorf("RepoRoots %q, want one tree in %s", roots, cache)
	}
	fi, err := os.Stat(filepath.Join(roots[0], "app", "m.json"))
	if err != nil || fi.Mode().Perm()&0o222 != 0 {
		t.Errorf("the cached file: %v, %v; want it without write permission", fi, err)
	}
	if st := store.Stats(); st.Hits != 1 || st.Misses != 1 || st.Extractions != 1 {
		t.Errorf("Stats() = %+v, want one miss and one hit", st)
	}
	if ws, _ := filepath.Glob(filepath.Join(store.Root(), "work", "*")); len(ws) != 0 {
		t.Errorf("workspaces made for a read-only plugin: %q", ws)
	}
}
