//go:build linux

package cmpserver_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/tarball"
	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/hookexec"
)

// daemonName is argv[0] of the hostile daemon, for finding it in /proc.
const daemonName = "strata-test-daemon"

// daemons returns the process IDs of the hostile daemons still running.
func daemons(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	parents := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(cmdline, []byte("\x00"+daemonName+"\x00")) && !processExited(pid) {
			parents[pid] = parent(pid)
		}
	}
	// A child the daemon forked shows the daemon's command line until it
	// runs its own program.
	var pids []int
	for pid, ppid := range parents {
		if _, ok := parents[ppid]; !ok {
			pids = append(pids, pid)
		}
	}
	return pids
}

func parent(pid int) int {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(string(f[1]))
	return ppid
}

// processExited reports a process gone or a zombie.
func processExited(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z'
}

// TestRecycledWorkspaces plays a hostile plugin against a server that
// recycles workspaces: its script prints the application's manifest, then
// appends a ClusterRoleBinding to it in its workspace, and with
// ARGOCD_ENV_DAEMON=1 also leaves a daemon (out of its process group)
// that keeps appending. The next request of the same repository must
// print what the commit holds: a workspace whose daemon still runs is
// removed, not handed out; once nothing runs, the workspace is repaired
// and handed out again.
func TestRecycledWorkspaces(t *testing.T) {
	if _, err := hookexec.LandlockABI(); err != nil {
		t.Skip(err)
	}
	const manifest = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"victim"}}`
	const crb = `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"escaped"}}`
	repo := tarGz(t, map[string]string{
		"app/m.yaml": manifest + "\n",
		"app/run.sh": `cat m.yaml
printf '%s\n' --- '` + crb + `' >> m.yaml
if [ "$ARGOCD_ENV_DAEMON" = 1 ]; then
  setsid sh -c ': >"$3"; while :; do printf "%s\n" --- "$2" >> "$1"; sleep 0.01; done' ` + daemonName + ` "$PWD/m.yaml" '` + crb + `' "$TMPDIR/escaped" </dev/null >/dev/null 2>&1 &
  while [ ! -e "$TMPDIR/escaped" ]; do sleep 0.01; done
fi
`,
	})
	t.Cleanup(func() {
		for _, pid := range daemons(t) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	dir, err := os.MkdirTemp("", "cmp") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	store, err := tarball.NewStore(filepath.Join(dir, "repos"), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmpserver.RecycleWorkspaces(t.Context(), store, 0, nil); err != nil {
		t.Skip(err)
	}
	p := newCommandPlugin(t, "  generate:\n    command: [sh, run.sh]\n", cmpserver.CommandOptions{}, nil)
	client := serveStore(t, dir, store, p.Hiding(store.Root()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	request := func(daemon bool) []string {
		t.Helper()
		stream, err := client.GenerateManifest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		if daemon {
			env["ARGOCD_ENV_DAEMON"] = "1"
		}
		send(t, stream, "victim", "app", env, repo)
		resp, err := stream.CloseAndRecv()
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		return resp.GetManifests()
	}
	want := []string{manifest}
	// Workspaces are closed after the reply: wait for the Store to be
	// done with the last one before the next request.
	settled := func(what string, ok func(tarball.Stats) bool) {
		t.Helper()
		eventually.Within(t, 20*time.Second, what, func() (bool, string) {
			st := store.Stats()
			return ok(st), fmt.Sprintf("stats %+v", st)
		})
	}

	// A request that leaves a daemon: its workspace is not kept.
	if got := request(true); !slices.Equal(got, want) {
		t.Fatalf("first request: manifests %q, want %q", got, want)
	}
	settled("the daemon's workspace removed", func(st tarball.Stats) bool { return st.RecycleBusy == 1 })
	if n := len(daemons(t)); n != 1 {
		t.Fatalf("%d daemons running, want 1 (the test proves nothing otherwise)", n)
	}
	// Processes count as started since a workspace was handed out when
	// they started less than a tick (10 ms) before: let one pass.
	time.Sleep(30 * time.Millisecond)
	if got := request(false); !slices.Equal(got, want) {
		t.Errorf("request after the daemon's: manifests %q, want %q", got, want)
	}
	settled("the tampered workspace kept", func(st tarball.Stats) bool { return st.Recycled == 1 })

	// Tampered with, but nothing left running: repaired and handed out.
	for i := range 3 {
		if got := request(false); !slices.Equal(got, want) {
			t.Errorf("request %d on a recycled workspace: manifests %q, want %q", i, got, want)
		}
		settled("the workspace kept again", func(st tarball.Stats) bool { return st.Recycled == uint64(2+i) })
	}
	st := store.Stats()
	if st.Reused != 3 || st.RecycleBusy != 1 {
		t.Errorf("Stats() = %+v, want 3 reused workspaces and 1 removed for its daemon", st)
	}
	// The daemon still runs, and still cannot reach any workspace but its
	// own, which is gone.
	if n := len(daemons(t)); n != 1 {
		t.Errorf("%d daemons running, want 1", n)
	}
}
