package clustertest_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/operator"
)

// engineReplica is an Engine with HA in this process (so the race
// detector sees the HA code).
type engineReplica struct {
	name, addr string
	e          *operator.Engine
	cancel     context.CancelFunc
	done       chan struct{}
	err        error
}

// TestEngineHA runs two Engines with HA in this process: only the leader
// runs its start-up hook; a standby answers /readyz with the leader's
// identity; the stopped leader hands the Lease over and the standby runs.
func TestEngineHA(t *testing.T) {
	c := kubetest.Shared(t)
	const ns = "engine-ha"
	namespace(t, c, ns)
	dir := t.TempDir()
	marker := filepath.Join(dir, "markers")
	start := func(name string) *engineReplica {
		hooks := filepath.Join(dir, name, "global-hooks", "hooks")
		if err := os.MkdirAll(hooks, 0o755); err != nil {
			t.Fatal(err)
		}
		hook := "#!/bin/sh\nif [ \"$1\" = \"--config\" ]; then printf 'configVersion: v1\\nonStartup: 1\\n'; exit 0; fi\necho " + name + " >> " + marker + "\n"
		if err := os.WriteFile(filepath.Join(hooks, "startup.sh"), []byte(hook), 0o755); err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, port, _ := net.SplitHostPort(addr)
		s := operator.DefaultSettings()
		s.ModulesDir, s.GlobalHooksDir, s.TempDir = filepath.Join(dir, name, "modules"), filepath.Join(dir, name, "global-hooks"), filepath.Join(dir, name, "tmp")
		s.KubeConfig, s.Local, s.Namespace, s.HA, s.PodName = c.Kubeconfig, true, ns, true, name
		s.ListenAddress, s.ListenPort, s.DebugUnixSocket = "127.0.0.1", port, ""
		s.LeaseDuration, s.RenewDeadline, s.RetryPeriod = 4*deadline, 3*deadline, time.Second
		if err := os.MkdirAll(s.ModulesDir, 0o755); err != nil {
			t.Fatal(err)
		}
		e, err := operator.New(s, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := &engineReplica{name: name, addr: addr, e: e, cancel: cancel, done: make(chan struct{})}
		go func() { defer close(r.done); r.err = e.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-r.done })
		return r
	}
	identity := func(name string) string { return name + ".127-0-0-1." + ns + ".pod" }
	markers := func() string {
		data, _ := os.ReadFile(marker)
		return string(data)
	}
	get := func(r *engineReplica, path string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+r.addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(body)
	}

	reps := map[string]*engineReplica{"engine-a": start("engine-a"), "engine-b": start("engine-b")}
	var leader, standby *engineReplica
	eventually.Within(t, deadline, "one engine ran its start-up hook", func() (bool, string) {
		m := strings.TrimSpace(markers())
		leader = reps[m]
		return leader != nil, m
	})
	for name, r := range reps {
		if r != leader {
			standby = reps[name]
		}
	}
	select {
	case <-leader.e.Ready():
	case <-time.After(deadline):
		t.Fatal("the leader did not converge")
	}
	eventually.Within(t, deadline, "the standby is ready while the leader leads", func() (bool, string) {
		code, body := get(standby, "/readyz")
		return code == http.StatusOK && strings.Contains(body, identity(leader.name)), fmt.Sprintf("%d %s", code, body)
	})
	if h := standby.e.History(); len(h) != 0 {
		t.Errorf("the standby did something: %q", h)
	}

	leader.cancel()
	<-leader.done
	if leader.err != nil {
		t.Errorf("the stopped leader's Run: %v", leader.err)
	}
	select {
	case <-standby.e.Ready():
	case <-time.After(deadline):
		t.Fatalf("the standby did not take over: holder %q", holder(t, c, ns, operator.LeaseName))
	}
	if got, want := markers(), leader.name+"\n"+standby.name+"\n"; got != want {
		t.Errorf("start-up hooks run: %q, want %q", got, want)
	}
	if code, body := get(standby, "/readyz"); code != http.StatusOK || strings.Contains(body, "standby") {
		t.Errorf("the new leader's /readyz: %d %s", code, body)
	}
}
