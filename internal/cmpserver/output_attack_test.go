//go:build linux

package cmpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/tarball"
)

// TestAttackEndlessOutput runs commands that print without end, as `yes`
// does: stdout is counted against the sidecar's memory budget as it
// arrives, and the command is killed when the budget has no room for it,
// long before its stdout bound or a deadline; stderr is counted as it
// arrives and the command killed past its bound. Each request ends with
// an error that says which stream, how much and what to do, and a normal
// request after it succeeds.
func TestAttackEndlessOutput(t *testing.T) {
	const budget = 16 << 20
	tests := []struct {
		name   string
		script string
		code   codes.Code
		want   []string
	}{
		{name: "stdout", script: "yes", code: codes.ResourceExhausted,
			want: []string{"`sh run.sh` printed ", "MiB and went on, which would take more than the memory the requests of the sidecar may hold at once (16.0 MiB; --memory-budget)", "killed"}},
		{name: "stdout of a child", script: "yes | cat; cat m.yaml", code: codes.ResourceExhausted,
			want: []string{"MiB and went on", "(16.0 MiB; --memory-budget)"}},
		{name: "stderr", script: "yes >&2", code: codes.Unknown,
			want: []string{"wrote more than 67108864 bytes to stderr", "print less to stderr"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "cmpout") // short: unix socket paths are limited
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			store, err := tarball.NewStore(filepath.Join(dir, "repos"), 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			p := newCommandPlugin(t, "  generate:\n    command: [sh, run.sh]\n", cmpserver.CommandOptions{NoSandbox: true}, nil)
			client := serve(t, dir, &cmpserver.Server{Plugin: p, Store: store, ShutdownGrace: 5 * time.Second,
				MemoryBudget: budget, MemoryBudgetFrom: "--memory-budget"})
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Second)
			defer cancel()
			_, err = generate(t, ctx, client, "a", diskRepo(t, tc.script))
			if status.Code(err) != tc.code {
				t.Fatalf("Generate = %v, want %s", err, tc.code)
			}
			for _, w := range tc.want {
				if !strings.Contains(status.Convert(err).Message(), w) {
					t.Errorf("Generate = %q, want it to say %q", status.Convert(err).Message(), w)
				}
			}
			if got, err := generate(t, ctx, client, "a", diskRepo(t, "true")); err != nil || len(got) != 1 {
				t.Errorf("a normal request after: %q, %v", got, err)
			}
		})
	}
}
