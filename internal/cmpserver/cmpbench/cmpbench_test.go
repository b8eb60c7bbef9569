package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuick runs the benchmark on tiny repositories, two requests per row:
// it proves the bench works, not how fast anything is.
func TestQuick(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cmp.md")
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-quick", "-out", out}, &stdout, &stderr); err != nil {
		t.Fatalf("run(-quick) = %v\nstderr:\n%s", err, stderr.String())
	}
	table, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(table) != stdout.String() {
		t.Errorf("-out file differs from stdout:\n%s\nstdout:\n%s", table, stdout.String())
	}
	// Per repository: cold, three concurrency levels, Extract alone.
	for _, repo := range []string{"10-file app", "200-file repo"} {
		if got := strings.Count(string(table), "| "+repo+" |"); got != 5 {
			t.Errorf("table has %d rows for %s, want 5:\n%s", got, repo, table)
		}
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-big-files", "3"},
		{"-big-requests", "0"},
		{"extra"},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stderr); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
	}
}
