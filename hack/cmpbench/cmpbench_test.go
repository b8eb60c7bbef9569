package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/testbin"
)

// TestMain serves the floor when the bench starts this test binary as its
// floor server, as it does the cmpbench binary.
func TestMain(m *testing.M) {
	if socket := os.Getenv(floorEnv); socket != "" {
		if err := serveFloor(socket, os.Getenv(floorDirEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "cmpbench floor:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestQuick runs the whole benchmark in its smoke mode against the real
// servers — Argo CD's sidecar, strata, the floor, helm — which proves the
// bench drives them all and checks their answers, not how fast anything
// is.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Argo CD's sidecar and builds strata; run without -short")
	}
	argo := testbin.Path(t, "argocd-cmp-server")
	helm := testbin.Path(t, "helm")
	out := filepath.Join(t.TempDir(), "cmp.md")
	var stdout, stderr bytes.Buffer
	args := []string{"-quick", "-dir", t.TempDir(), "-argocd-cmp-server", argo, "-helm", helm, "-out", out}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run(%q) = %v\nstderr:\n%s", args, err, stderr.String())
	}
	table, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(table) != stdout.String() {
		t.Errorf("-out file differs from stdout:\n%s\nstdout:\n%s", table, stdout.String())
	}
	// A row per server and repository, a ratio row per strata server and
	// repository, a target row per repository.
	for _, repo := range []string{"10 files", "~220 small files, Helm-style", "200 files"} {
		if got := strings.Count(string(table), "| "+repo+" |"); got != 8 {
			t.Errorf("report has %d rows for %s, want 8 (5 servers, 2 ratios, 1 target):\n%s", got, repo, table)
		}
	}
	for _, want := range []string{"| Argo CD's sidecar | disk |", "| strata | disk |", "| strata, `--command-namespaces` | disk |", "| disk, --command-namespaces |", "| floor (drain and hash) | – |", "| floor + command (drain, hash, start `cat` once) | – |", "`helm template` process", "peak RSS"} {
		if !strings.Contains(string(table), want) {
			t.Errorf("report lacks %q:\n%s", want, table)
		}
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-monorepo-files", "3"},
		{"-monorepo-requests", "0"},
		{"extra"},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stderr); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
	}
}

func TestCountDocuments(t *testing.T) {
	for _, tc := range []struct {
		out  string
		want int
	}{
		{"", 0},
		{"---\n# Source: a.yaml\n", 0},
		{"---\n# Source: a.yaml\nkind: A\n---\n# Source: b.yaml\nkind: B\n", 2},
		{"kind: A\n---\nkind: B\n", 2},
	} {
		if got, err := countDocuments([]byte(tc.out)); got != tc.want || err != nil {
			t.Errorf("countDocuments(%q) = %d, %v, want %d", tc.out, got, err, tc.want)
		}
	}
}
