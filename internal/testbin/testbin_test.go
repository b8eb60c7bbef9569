package testbin_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/strata-dev/strata/internal/testbin"
)

func TestRoot(t *testing.T) {
	root, err := testbin.Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"go.mod", "layering_test.go", "hack/testbin/build.sh"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("Root() = %s, which has no %s: %v", root, f, err)
		}
	}
}

func TestBuildUnknown(t *testing.T) {
	_, err := testbin.Build(context.Background(), "kubectl", nil)
	if !errors.Is(err, testbin.ErrUnknown) {
		t.Fatalf("Build(kubectl) error = %v, want ErrUnknown", err)
	}
	if !strings.Contains(err.Error(), "helm, etcd, kube-apiserver") {
		t.Errorf("Build(kubectl) error = %q, want the known names listed", err)
	}
}

// TestBuildFailureShowsOutput makes build.sh fail (its cache directory is a
// file) and checks that the error carries the script's output.
func TestBuildFailureShowsOutput(t *testing.T) {
	file := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STRATA_TESTBIN_DIR", file)
	_, err := testbin.Build(context.Background(), "etcd", nil)
	var be *testbin.BuildError
	if !errors.As(err, &be) {
		t.Fatalf("Build with a file as cache dir: error = %v, want a *BuildError", err)
	}
	if be.Name != "etcd" || !strings.Contains(be.Output, "not-a-dir") {
		t.Errorf("BuildError = {Name: %q, Output: %q}, want name etcd and output naming the cache dir", be.Name, be.Output)
	}
	if !strings.Contains(err.Error(), "build output (tail)") {
		t.Errorf("error %q does not show the build output", err)
	}
}

func TestCachedBuildsNothing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("STRATA_TESTBIN_DIR", dir)
	for _, name := range testbin.Names() {
		path, ok, err := testbin.Cached(context.Background(), name)
		if err != nil {
			t.Fatalf("Cached(%s): %v", name, err)
		}
		if ok || filepath.Dir(path) != dir || !strings.HasPrefix(filepath.Base(path), name+"-v") {
			t.Errorf("Cached(%s) = %q, %v; want a missing file %s-vVERSION-HASH in %s", name, path, ok, name, dir)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Cached wrote %d entries into the cache dir, want none", len(entries))
	}
}

// recorder is a testing.TB that records Fatal and Skip instead of acting on
// the real test; like the real ones, they end the calling goroutine.
type recorder struct {
	testing.TB
	mu          sync.Mutex
	fatal, skip string
}

func (r *recorder) Fatal(args ...any) { r.end(&r.fatal, fmt.Sprint(args...)) }
func (r *recorder) Fatalf(format string, args ...any) {
	r.end(&r.fatal, fmt.Sprintf(format, args...))
}
func (r *recorder) Skip(args ...any) { r.end(&r.skip, fmt.Sprint(args...)) }
func (r *recorder) Skipf(format string, args ...any) {
	r.end(&r.skip, fmt.Sprintf(format, args...))
}

func (r *recorder) end(field *string, msg string) {
	r.mu.Lock()
	*field = msg
	r.mu.Unlock()
	runtime.Goexit()
}

// path calls testbin.Path on a recorder in its own goroutine.
func path(t *testing.T, name string) (got string, r *recorder) {
	r = &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = testbin.Path(r, name)
	}()
	<-done
	return got, r
}

func TestPathOptOut(t *testing.T) {
	tests := []struct {
		name      string
		skip, ci  string
		wantFatal string
		wantSkip  string
	}{
		{name: "opt-out skips", skip: "1", ci: "", wantSkip: "unset STRATA_SKIP_CLUSTER_TESTS and run `make testbin`"},
		{name: "opt-out true skips", skip: "true", ci: "false", wantSkip: "etcd is not built"},
		{name: "CI refuses opt-out", skip: "1", ci: "true", wantFatal: "CI=true: tests that need a cluster or helm must run in CI"},
		{name: "bad value", skip: "yes please", ci: "", wantFatal: `STRATA_SKIP_CLUSTER_TESTS="yes please": want 1 or 0`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// An empty cache, so the opt-out has something to skip.
			t.Setenv("STRATA_TESTBIN_DIR", t.TempDir())
			t.Setenv(testbin.UnitEnv, "")
			t.Setenv(testbin.SkipEnv, tc.skip)
			t.Setenv("CI", tc.ci)
			got, r := path(t, "etcd")
			if !strings.Contains(r.fatal, tc.wantFatal) || (tc.wantFatal == "") != (r.fatal == "") {
				t.Errorf("Path fatal = %q, want %q", r.fatal, tc.wantFatal)
			}
			if !strings.Contains(r.skip, tc.wantSkip) || (tc.wantSkip == "") != (r.skip == "") {
				t.Errorf("Path skip = %q, want %q", r.skip, tc.wantSkip)
			}
			if got != "" {
				t.Errorf("Path = %q, want no path", got)
			}
		})
	}
}

// TestPathUnit: under make unit, asking for a binary fails the test, even
// a cached one.
func TestPathUnit(t *testing.T) {
	t.Setenv(testbin.UnitEnv, "1")
	t.Setenv(testbin.SkipEnv, "")
	got, r := path(t, "helm")
	if want := "test binary helm needed with STRATA_UNIT_TESTS=1 (make unit)"; !strings.Contains(r.fatal, want) || got != "" {
		t.Errorf("Path = %q, fatal %q; want no path, fatal containing %q", got, r.fatal, want)
	}
}

// TestPathHelm builds (or finds) the real helm binary and runs it.
func TestPathHelm(t *testing.T) {
	t.Setenv(testbin.SkipEnv, "")
	helm := testbin.Path(t, "helm")
	if again := testbin.Path(t, "helm"); again != helm {
		t.Errorf("second Path(helm) = %s, want %s", again, helm)
	}
	out, err := exec.Command(helm, "version", "--template", "{{.Version}}").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", helm, err, out)
	}
	if string(out) != "v4.3.1" {
		t.Errorf("helm version = %q, want v4.3.1 (the version pinned in hack/testbin/helm/go.mod)", out)
	}
}

// TestPathOptOutUsesCache: with the opt-out set, a binary that is built
// already is still used.
func TestPathOptOutUsesCache(t *testing.T) {
	t.Setenv(testbin.SkipEnv, "")
	helm := testbin.Path(t, "helm")
	t.Setenv(testbin.SkipEnv, "1")
	t.Setenv("CI", "")
	got, r := path(t, "helm")
	if got != helm || r.fatal != "" || r.skip != "" {
		t.Errorf("Path(helm) with opt-out = %q (fatal %q, skip %q), want %s", got, r.fatal, r.skip, helm)
	}
}
