package operator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/operator"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunLogs: a run says at info which backends it uses (and that an
// exported KUBECONFIG is not), each hook run with its binding, duration
// and outcome, and each Helm upgrade and delete.
func TestRunLogs(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"modules/values.yaml":             "aEnabled: true\nbEnabled: true\n",
		"modules/001-a/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
		"modules/001-a/hooks/run.sh":      "#!/bin/sh\nif [ \"$1\" = --config ]; then printf 'configVersion: v1\\nbeforeHelm: 1\\n'; exit 0; fi\n",
		"modules/002-b/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n",
		"global-hooks/hooks/init.sh":      "#!/bin/sh\nif [ \"$1\" = --config ]; then printf 'configVersion: v1\\nonStartup: 1\\n'; exit 0; fi\n",
		"config.yaml":                     "",
	} {
		writeFile(t, filepath.Join(dir, name), []byte(data))
	}
	t.Setenv("KUBECONFIG", "/home/me/.kube/config")
	var out syncBuffer
	h := &harness{t: t, dir: dir}
	s := h.settings()
	s.Local = false // no KUBE_CONFIG: local all the same
	e, err := operator.New(s, slog.New(slog.NewJSONHandler(&out, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	select {
	case <-e.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	writeFile(t, filepath.Join(dir, "config.yaml"), []byte("bEnabled: \"false\"\n"))
	for !strings.Contains(out.String(), `"msg":"helm delete"`) {
		select {
		case <-ctx.Done():
			t.Fatalf("no helm delete logged:\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	<-done
	var got []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		got = append(got, m)
	}
	for _, want := range []map[string]any{
		{"level": "INFO", "msg": "backends: local", "reason": "no cluster configured (KUBE_CONFIG unset, not in a pod)"},
		{"level": "WARN", "KUBECONFIG": "/home/me/.kube/config"},
		{"level": "INFO", "msg": "hook run", "hook": "global init.sh", "binding": "onStartup", "outcome": "ok"},
		{"level": "INFO", "msg": "hook run", "hook": "module a hooks/run.sh", "binding": "beforeHelm", "queue": "main", "outcome": "ok"},
		{"level": "INFO", "msg": "helm upgrade", "module": "a", "revision": float64(1)},
		{"level": "INFO", "msg": "helm delete", "module": "b"},
	} {
		found := false
		for _, m := range got {
			match := true
			for k, v := range want {
				if m[k] != v {
					match = false
					break
				}
			}
			if match {
				if want["msg"] == "hook run" && m["duration"] == nil {
					t.Errorf("hook run line without a duration: %v", m)
				}
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no log line with %v in:\n%s", want, out.String())
		}
	}
}
