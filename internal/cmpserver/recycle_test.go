//go:build linux

package cmpserver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/tarball"
	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/hookexec"
	"github.com/strata-dev/strata/internal/hookexec/hookexectest"
)

// TestRecycledWorkspaces plays the attack of issue 23 against a server that
// recycles workspaces: in a monorepo, application a's command leaves a
// task behind that rewrites application b's manifest in the workspace,
// with a ClusterRoleBinding of the same size, every 2 ms: a daemon (setsid
// and a double fork), a process whose main thread exited (a zombie, state
// Z) while a second thread lives, a clone that sends no SIGCHLD. Every
// later render of b, on the recycled workspace, must be b's own manifest;
// the task must be gone once a's request ended, and the workspace kept
// (the Tracker proved nothing runs; the check repaired the file). With
// each command in its own namespaces, and following the process tree.
//
// A task that joins the server's process group cannot be told apart from
// the server's own children: it is not killed, and the workspace is
// removed, counted busy (reason "busy").
func TestRecycledWorkspaces(t *testing.T) {
	if _, err := hookexec.LandlockABI(); err != nil {
		t.Skip(err)
	}
	bin := hookexectest.Leftover(t)
	if _, err := cmpserver.TrackCommands(t.Context()); err != nil {
		t.Fatal(err)
	}
	const victim = `{"apiVersion":"v1","data":{"pad":"...................................."},"kind":"ConfigMap","metadata":{"name":"b"}}`
	crb := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"escaped"}}`
	crb += strings.Repeat(" ", len(victim)-len(crb))
	if len(crb) != len(victim) {
		t.Fatalf("the ClusterRoleBinding (%d bytes) must be the victim's size (%d)", len(crb), len(victim))
	}
	repo := tarGz(t, map[string]string{
		"a/m.yaml": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}` + "\n",
		"a/run.sh": `cat m.yaml
"$LEFTOVER" "$ARGOCD_ENV_MODE" "$PWD/../b/m.yaml" "$TMPDIR/ready" '` + crb + `
'
`,
		"b/m.yaml": victim + "\n",
		"b/run.sh": "cat m.yaml\n",
	})

	type mode struct {
		name        string
		processTree bool
	}
	modes := []mode{{"process tree", true}}
	if err := hookexec.Namespaces(); err == nil {
		modes = append(modes, mode{"namespaces", false})
	}
	for _, m := range modes {
		for _, attack := range []string{"daemon", "zombie-thread", "clone", "join-group"} {
			busy := attack == "join-group"
			if busy && !m.processTree {
				continue // in its own PID namespace, the server's group is out of reach
			}
			t.Run(m.name+"/"+attack, func(t *testing.T) {
				dir, err := os.MkdirTemp("", "cmp") // short: unix socket paths are limited
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(dir) })
				store, err := tarball.NewStore(filepath.Join(dir, "repos"), 1<<30)
				if err != nil {
					t.Fatal(err)
				}
				if err := cmpserver.RecycleWorkspaces(store, 0, nil); err != nil {
					t.Skip(err)
				}
				opts := cmpserver.CommandOptions{Env: []string{"PATH=" + os.Getenv("PATH"), "LEFTOVER=" + bin}}
				p := newCommandPlugin(t, "  generate:\n    command: [sh, run.sh]\n", opts, nil)
				client := serve(t, dir, &cmpserver.Server{Plugin: p.Hiding(store.Root()), Store: store, ShutdownGrace: 5 * time.Second, CommandNamespaces: !m.processTree})
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				request := func(app string) []string {
					t.Helper()
					stream, err := client.GenerateManifest(ctx)
					if err != nil {
						t.Fatal(err)
					}
					send(t, stream, app, app, map[string]string{"ARGOCD_ENV_MODE": attack}, repo)
					resp, err := stream.CloseAndRecv()
					if err != nil {
						t.Fatalf("Generate(%s): %v", app, err)
					}
					return resp.GetManifests()
				}
				settled := func(what string, ok func(tarball.Stats) bool) {
					t.Helper()
					eventually.Within(t, 20*time.Second, what, func() (bool, string) {
						st := store.Stats()
						return ok(st), fmt.Sprintf("stats %+v", st)
					})
				}

				request("a")
				settled("a's workspace settled", func(st tarball.Stats) bool { return st.Recycled+st.RecycleBusy == 1 })
				if busy {
					// Left running: kill it here.
					t.Cleanup(func() { killRunning(bin + "\x00join-group") })
					if st := store.Stats(); st.RecycleBusy != 1 {
						t.Fatalf("Stats() = %+v, want the workspace removed as busy", st)
					}
					return
				}
				for i := range 4 {
					if got, want := request("b"), []string{victim}; !slices.Equal(got, want) {
						t.Fatalf("render %d of b after a's: manifests %q, want %q", i, got, want)
					}
					// Let a write that was to come land.
					time.Sleep(20 * time.Millisecond)
					settled("b's workspace kept", func(st tarball.Stats) bool { return st.Recycled == uint64(2+i) })
				}
				if st := store.Stats(); st.Reused != 4 || st.RecycleBusy != 0 || st.RecycleUnsettled != 0 {
					t.Errorf("Stats() = %+v, want 4 reused workspaces, none removed", st)
				}
			})
		}
	}
}

// killRunning kills the processes whose command line holds marker.
func killRunning(marker string) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(cmdline), marker) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
