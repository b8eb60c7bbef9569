package clustertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/operator"
	"github.com/strata-dev/strata/internal/testbin"
)

// strataBinary is cmd/strata, built once for the package's tests.
func strataBinary(t *testing.T) string { return testbin.Strata(t) }

// startupHook is the tree's one global hook: on start-up it appends
// "start <pod>" to $HA_MARKER, waits while $HA_HOLD exists, then appends
// "done <pod>". It needs no cluster backend.
const startupHook = `#!/bin/sh
if [ "$1" = "--config" ]; then
  printf 'configVersion: v1\nonStartup: 1\n'
  exit 0
fi
echo "start $ADDON_OPERATOR_POD" >> "$HA_MARKER"
while [ -e "$HA_HOLD" ]; do sleep 0.1; done
echo "done $ADDON_OPERATOR_POD" >> "$HA_MARKER"
`

// lockedBuffer is a bytes.Buffer safe for a process's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// haTree is the operator tree and the files the replicas share.
type haTree struct {
	dir, marker, hold string
	kubeconfig, ns    string
}

// replicaProc is one `strata operator run --ha` process.
type replicaProc struct {
	pod, addr string
	cmd       *exec.Cmd
	stderr    lockedBuffer
	done      chan struct{}
	err       error
}

func (tr *haTree) identity(pod string) string {
	return pod + ".127-0-0-1." + tr.ns + ".pod"
}

// start runs a replica named pod with the given election timing.
func (tr *haTree) start(t *testing.T, pod string, lease, renew, retry time.Duration) *replicaProc {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	tmp := filepath.Join(tr.dir, "tmp-"+pod)
	r := &replicaProc{pod: pod, addr: addr, done: make(chan struct{})}
	r.cmd = exec.Command(strataBinary(t), "operator", "run", "--local", "--kube-config", tr.kubeconfig,
		"--ha-lease-duration", lease.String(), "--ha-renew-deadline", renew.String(), "--ha-retry-period", retry.String(),
		"--shutdown-grace", (2 * deadline).String(), "--debug-unix-socket=", "--tmp-dir", tmp)
	// As a Deployment sets them.
	r.cmd.Env = append(os.Environ(),
		"ADDON_OPERATOR_HA=true", "ADDON_OPERATOR_POD="+pod, "ADDON_OPERATOR_NAMESPACE="+tr.ns,
		"ADDON_OPERATOR_LISTEN_ADDRESS=127.0.0.1", "ADDON_OPERATOR_LISTEN_PORT="+port,
		"MODULES_DIR="+filepath.Join(tr.dir, "modules"), "GLOBAL_HOOKS_DIR="+filepath.Join(tr.dir, "global-hooks"),
		"HA_MARKER="+tr.marker, "HA_HOLD="+tr.hold, "LOG_TYPE=json")
	r.cmd.Stdout, r.cmd.Stderr = io.Discard, &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = r.cmd.Process.Kill()
			<-r.done
		}
		if t.Failed() {
			t.Logf("replica %s:\n%s", pod, r.stderr.String())
		}
	})
	return r
}

// exited waits for the replica's process to end and returns its error.
func (r *replicaProc) exited(t *testing.T) error {
	t.Helper()
	select {
	case <-r.done:
		return r.err
	case <-time.After(deadline):
		t.Fatalf("replica %s did not exit", r.pod)
		return nil
	}
}

func (r *replicaProc) alive() bool {
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

func (r *replicaProc) get(t *testing.T, path string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, string(body)
}

func (tr *haTree) markers(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(tr.marker)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(data)
}

// TestOperatorHA runs `strata operator run` replicas with
// ADDON_OPERATOR_HA=true on one Lease: only the leader runs hooks, a
// standby is live and ready while another leads; SIGTERM lets the task in
// hand finish, then the Lease is given up and a standby takes over at
// once; after kill -9 a standby takes over when the Lease expires; a
// leader whose Lease is taken exits non-zero. The backends are local
// (--local): the Lease is the only thing on the cluster.
func TestOperatorHA(t *testing.T) {
	c := kubetest.Shared(t)
	tr := &haTree{dir: t.TempDir(), kubeconfig: c.Kubeconfig, ns: "operator-ha"}
	tr.marker, tr.hold = filepath.Join(tr.dir, "markers"), filepath.Join(tr.dir, "hold")
	namespace(t, c, tr.ns)
	for _, d := range []string{"modules", "global-hooks/hooks"} {
		if err := os.MkdirAll(filepath.Join(tr.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tr.dir, "global-hooks/hooks/startup.sh"), []byte(startupHook), 0o755); err != nil {
		t.Fatal(err)
	}
	leaseHolder := func() string { return holder(t, c, tr.ns, operator.LeaseName) }

	// Long Leases: a takeover before one expires shows it was given up.
	const long, longRenew, retry = 4 * deadline, 3 * deadline, time.Second
	reps := map[string]*replicaProc{}
	for _, pod := range []string{"pod-a", "pod-b"} {
		reps[tr.identity(pod)] = tr.start(t, pod, long, longRenew, retry)
	}
	var leader, standby *replicaProc
	eventually.Within(t, deadline, "a replica holds the Lease", func() (bool, string) {
		h := leaseHolder()
		leader = reps[h]
		return leader != nil, fmt.Sprintf("holder %q", h)
	})
	standby = reps[tr.identity("pod-a")]
	if standby == leader {
		standby = reps[tr.identity("pod-b")]
	}
	eventually.Within(t, deadline, "the leader is ready (first converge done)", func() (bool, string) {
		code, body := leader.get(t, "/readyz")
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})
	if got, want := tr.markers(t), "start "+leader.pod+"\ndone "+leader.pod+"\n"; got != want {
		t.Errorf("hooks run: %q, want the leader's only: %q", got, want)
	}
	eventually.Within(t, deadline, "the standby is ready while the leader leads", func() (bool, string) {
		code, body := standby.get(t, "/readyz")
		return code == http.StatusOK && strings.Contains(body, tr.identity(leader.pod)), fmt.Sprintf("%d %s", code, body)
	})
	for _, r := range []*replicaProc{leader, standby} {
		if code, body := r.get(t, "/healthz"); code != http.StatusOK {
			t.Errorf("%s /healthz: %d %s", r.pod, code, body)
		}
		want := "addon_operator_ha_leader 0"
		if r == leader {
			want = "addon_operator_ha_leader 1"
		}
		if code, body := r.get(t, "/metrics"); code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("%s /metrics: %d, want %q in it", r.pod, code, want)
		}
	}

	// SIGTERM to the leader: it gives the Lease up, the standby takes over
	// at once and runs its start-up hook, which waits on the hold file.
	if err := os.WriteFile(tr.hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := leader.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := leader.exited(t); err != nil {
		t.Errorf("the leader stopped by SIGTERM: %v, want exit 0", err)
	}
	eventually.Within(t, deadline, "the standby took the given up Lease and runs its hook", func() (bool, string) {
		m := tr.markers(t)
		return strings.HasSuffix(m, "start "+standby.pod+"\n"), fmt.Sprintf("holder %q, markers %q", leaseHolder(), m)
	})
	if h := leaseHolder(); h != tr.identity(standby.pod) {
		t.Errorf("Lease holder %q, want %s", h, tr.identity(standby.pod))
	}

	// SIGTERM to the new leader while its hook runs: it keeps the Lease
	// until the hook is done, then gives it up.
	if err := standby.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	eventually.Within(t, deadline, "the leader saw SIGTERM", func() (bool, string) {
		return strings.Contains(standby.stderr.String(), "the task in hand may finish"), ""
	})
	if !standby.alive() {
		t.Fatalf("the leader exited before its task in hand was done: %v", standby.err)
	}
	if h := leaseHolder(); h != tr.identity(standby.pod) {
		t.Errorf("Lease holder %q while the task in hand runs, want %s", h, tr.identity(standby.pod))
	}
	if err := os.Remove(tr.hold); err != nil {
		t.Fatal(err)
	}
	if err := standby.exited(t); err != nil {
		t.Errorf("the leader stopped by SIGTERM: %v, want exit 0", err)
	}
	if m := tr.markers(t); !strings.HasSuffix(m, "done "+standby.pod+"\n") {
		t.Errorf("the task in hand did not finish: markers %q", m)
	}
	if h := leaseHolder(); h != "" {
		t.Errorf("Lease holder %q after the last leader stopped, want none (given up)", h)
	}

	// kill -9: the Lease is not given up; a standby takes over once it
	// expires.
	const short, shortRenew = 6 * time.Second, 4 * time.Second
	c1 := tr.start(t, "pod-c", short, shortRenew, retry)
	eventually.Within(t, deadline, "pod-c leads", func() (bool, string) {
		m := tr.markers(t)
		return strings.HasSuffix(m, "done pod-c\n"), m
	})
	d1 := tr.start(t, "pod-d", short, shortRenew, retry)
	eventually.Within(t, deadline, "pod-d is a ready standby", func() (bool, string) {
		code, body := d1.get(t, "/readyz")
		return code == http.StatusOK && strings.Contains(body, tr.identity("pod-c")), fmt.Sprintf("%d %s", code, body)
	})
	if err := c1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c1.exited(t)
	eventually.Within(t, deadline, "pod-d took over the expired Lease", func() (bool, string) {
		m := tr.markers(t)
		return strings.HasSuffix(m, "done pod-d\n") && leaseHolder() == tr.identity("pod-d"), m
	})

	// The Lease taken from the leader: it exits non-zero, to restart clean.
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	leases := c.Client.CoordinationV1().Leases(tr.ns)
	eventually.Within(t, deadline, "the Lease is taken", func() (bool, string) {
		l, err := leases.Get(ctx, operator.LeaseName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		thief, secs := "thief", int32(3600)
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &thief, &secs, &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if err := d1.exited(t); err == nil {
		t.Error("the leader whose Lease was taken exited 0, want non-zero")
	}
	if !strings.Contains(d1.stderr.String(), "lost the Lease") {
		t.Errorf("the leader whose Lease was taken does not say why it exits:\n%s", d1.stderr.String())
	}
	// LOG_TYPE=json holds for client-go's own lines (leader election) too;
	// the last line is the command's error.
	lines := strings.Split(strings.TrimSpace(d1.stderr.String()), "\n")
	var leaderElection bool
	for _, line := range lines[:len(lines)-1] {
		if !json.Valid([]byte(line)) {
			t.Errorf("a log line is not JSON: %q", line)
		}
		leaderElection = leaderElection || strings.Contains(line, "Successfully acquired lease")
	}
	if !leaderElection {
		t.Errorf("client-go's leader election lines are not in the log:\n%s", d1.stderr.String())
	}
}
