package clustertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/strata-dev/strata/internal/cli"
	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/layers/controller"
)

// lockedBuffer is a bytes.Buffer safe for the goroutines that log to it.
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

// TestCommand runs `strata layers controller` as a user would, with JSON
// logs, and stops it by ending its context, as SIGTERM does.
func TestCommand(t *testing.T) {
	const ns = "command"
	e := setup(t, ns)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	args := []string{"layers", "controller", "--kubeconfig", e.c.Kubeconfig, "--namespace", ns,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--log-format", "json"}
	go func() { done <- cli.Main(ctx, args, nil, &stdout, &stderr) }()

	e.create(configMap(ns, "catalog-values", "a: 1\n"), catalog(ns, "giantswarm", "catalog-values"), app(ns, "cli", "giantswarm"))
	e.waitValues("cli", "a: 1\n", "{}")
	e.waitReady("cli", metav1.ConditionTrue, controller.ReasonValuesMerged)
	// The log line follows the status update that made the App Ready.
	eventually.True(t, `the "values merged" log line`, func() (bool, string) {
		return strings.Contains(stderr.String(), `"msg":"values merged"`), stderr.String()
	})

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("strata %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
		}
	case <-time.After(deadline):
		t.Fatalf("strata layers controller did not stop %v after its context ended", deadline)
	}
	var starting, merged bool
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("a log line is not JSON: %q", line)
			continue
		}
		switch rec["msg"] {
		case "starting the layers controller":
			starting = rec["namespace"] == ns
		case "values merged":
			merged = true
		}
	}
	if !starting || !merged {
		t.Errorf("the JSON logs lack the start (%v) or the merge (%v):\n%s", starting, merged, stderr.String())
	}
	if stdout.String() != "" {
		t.Errorf("stdout = %q, want nothing", stdout.String())
	}
}
