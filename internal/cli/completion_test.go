package cli_test

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/cli"
	"github.com/strata-dev/strata/internal/operator/debug"
)

// complete runs the shell completion of args (the last one the word being
// completed) and returns the candidates, without cobra's directive line.
func complete(t *testing.T, args ...string) []string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := cli.Main(context.Background(), append([]string{"__complete"}, args...), nil, &stdout, &stderr); code != 0 {
		t.Fatalf("__complete %q: exit %d: %s", args, code, stderr.String())
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if !strings.HasPrefix(l, ":") {
			out = append(out, l)
		}
	}
	return out
}

func TestFlagValueCompletion(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"values", "flatten", "x.yaml", "-o", ""}, "yaml json properties"},
		{[]string{"values", "merge", "x.yaml", "-o", ""}, "yaml json text"},
		{[]string{"appset", "render", "a.yaml", "-o", ""}, "yaml json name"},
		{[]string{"cmp", "parameters", "app", "-o", ""}, "json yaml"},
		{[]string{"cmp", "generate", "app", "--builtin", ""}, "helm"},
		{[]string{"appset", "render", "a.yaml", "--argocd-version", ""}, "2.14 3.0 3.1 3.2 3.3 3.4 3.5"},
		{[]string{"version", "--log-format", ""}, "text json"},
		{[]string{"version", "--log-level", ""}, "debug info warn error"},
	}
	for _, tc := range tests {
		if got := strings.Join(complete(t, tc.args...), " "); got != tc.want {
			t.Errorf("completing %q: %q, want %q", tc.args, got, tc.want)
		}
	}
}

// modules is a debug source with two modules.
type modules struct{ debug.Source }

func (modules) Modules() any {
	return []map[string]string{{"name": "echo-server", "state": "enabled"}, {"name": "ingress", "state": "disabled"}}
}

// TestModuleNameCompletion: the operator's module commands complete the
// running operator's module names, from its debug socket.
func TestModuleNameCompletion(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "op.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- debug.ServeListener(ctx, l, debug.Handler(modules{})) }()
	defer func() { cancel(); <-done }()
	got := complete(t, "operator", "module", "values", "--debug-unix-socket", sock, "")
	if want := "echo-server\tenabled ingress\tdisabled"; strings.Join(got, " ") != want {
		t.Errorf("module names: %q, want %q", got, want)
	}
	got = complete(t, "operator", "module", "render", "--debug-unix-socket", sock, "in")
	if want := "ingress\tdisabled"; strings.Join(got, " ") != want {
		t.Errorf("module names from \"in\": %q, want %q", got, want)
	}
	// No operator: no names, and no error.
	if got := complete(t, "operator", "module", "values", "--debug-unix-socket", sock+".none", ""); len(got) != 0 {
		t.Errorf("with no operator: %q", got)
	}
}
