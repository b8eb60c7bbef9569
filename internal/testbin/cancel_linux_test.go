package testbin_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/testbin"
)

// TestBuildTimeoutKillsBuild: a build cut off by its context fails with a
// hint, and leaves neither build.sh nor go build running.
func TestBuildTimeoutKillsBuild(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("STRATA_TESTBIN_DIR", dir)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := testbin.Build(ctx, "etcd", nil)
	if err == nil || !strings.Contains(err.Error(), "run `make testbin` before the tests") {
		t.Fatalf("Build with a 300ms deadline: error = %v, want a timeout with a hint", err)
	}
	// Had go build survived, it would have written its output by now.
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if info, err := f.Info(); err == nil && info.Size() > 0 {
			t.Errorf("after the cut-off build, %s has %d bytes: go build was not stopped", f.Name(), info.Size())
		}
	}
	// The next build removes what the cut-off one left.
	if _, err := testbin.Build(context.Background(), "etcd", nil); err != nil {
		t.Fatal(err)
	}
	files, err = os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Name())
	}
	if got := strings.Join(names, " "); !strings.HasPrefix(got, ".etcd.lock etcd-v") || len(names) != 2 {
		t.Errorf("cache after a cut-off and a full build = %s, want the lock and the binary", got)
	}
	// build.sh and go build carry dir in their arguments or environment.
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		for _, f := range []string{"cmdline", "environ"} {
			data, err := os.ReadFile(filepath.Join("/proc", e.Name(), f))
			if err == nil && bytes.Contains(data, []byte(dir)) {
				t.Errorf("process %s still running after the build was cut off: %q", e.Name(), bytes.ReplaceAll(data, []byte{0}, []byte{' '}))
			}
		}
	}
}
