// Package testbin finds the binaries that strata's integration tests and
// benchmarks run — helm, etcd, kube-apiserver, Argo CD's plugin sidecar
// argocd-cmp-server, and flant's addon-operator —
// and builds them on first use.
//
// Each binary is built from the Go module proxy by hack/testbin/build.sh,
// from a small module under hack/testbin/NAME that pins its version, into a
// cache directory ($STRATA_TESTBIN_DIR, default
// ${XDG_CACHE_HOME:-$HOME/.cache}/strata/testbin) shared by every checkout and
// every test process. `make testbin` builds them all ahead of a test run.
//
// A test that needs a binary calls [Path]. When the binary cannot be had, the
// test fails with the build output, unless the developer opted out with
// STRATA_SKIP_CLUSTER_TESTS=1: then the test is skipped, with a message
// saying how to run it. The opt-out is refused under CI=true, so a CI run
// never skips these tests.
package testbin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// SkipEnv names the opt-out: when it is set to a true value (1, true),
// tests whose binaries are not built yet are skipped instead of building
// them. It is refused when CI is true.
const SkipEnv = "STRATA_SKIP_CLUSTER_TESTS"

// UnitEnv, set to 1 by `make unit`, forbids test binaries: Path fails the
// test, which belongs in an integration package (a clustertest or
// paritytest directory), since a unit test must need nothing built.
const UnitEnv = "STRATA_UNIT_TESTS"

// names lists the binaries `build.sh all` (make testbin) builds: those the
// tests run. flant's addon-operator is hack/opbench -cluster's peer, and a
// test runs it too (releases it made are taken over unchanged).
var names = []string{"helm", "etcd", "kube-apiserver", "argocd", "argocd-cmp-server", "addon-operator"}

// peers lists benchmark peers no test runs: Build knows them, Names leaves
// them out, so no test run builds them. None at present.
var peers []string

// Names returns the names of the binaries the tests run, which Path and
// Build know; Build also knows the benchmark peers.
func Names() []string { return slices.Clone(names) }

// module is the path of strata's go.mod; Root looks for it.
const module = "github.com/strata-dev/strata"

// maxBuild bounds one build when the caller has no deadline of its own.
const maxBuild = 45 * time.Minute

// ErrUnknown reports a name that is neither one of Names() nor a peer.
var ErrUnknown = errors.New("unknown test binary")

// Root returns strata's repository root: the nearest directory at or above
// the working directory whose go.mod declares strata's module. go test runs
// a package's tests in the package directory, so this finds the checkout the
// tests belong to.
func Root() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the strata repository: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && modulePath(data) == module {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("no go.mod of module %s at or above %s: run from inside a strata checkout", module, wd)
		}
	}
}

// modulePath returns the module path declared in a go.mod file.
func modulePath(gomod []byte) string {
	for line := range strings.Lines(string(gomod)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// BuildError reports a failed build, with the tail of its output.
type BuildError struct {
	Name   string
	Err    error
	Output string // the last lines of build.sh's output
}

func (e *BuildError) Error() string {
	msg := fmt.Sprintf("building test binary %s: %v", e.Name, e.Err)
	if e.Output != "" {
		msg += "\n--- build output (tail) ---\n" + e.Output
	}
	return msg
}

func (e *BuildError) Unwrap() error { return e.Err }

// Build returns the path of the named binary, building it with
// hack/testbin/build.sh when it is not cached. The script's progress is
// copied to progress when it is not nil. A build takes seconds to minutes
// (kube-apiserver: several); ctx bounds it.
func Build(ctx context.Context, name string, progress io.Writer) (string, error) {
	return script(ctx, name, progress)
}

// Cached returns the path the named binary has in the cache and whether it
// is there, without building anything.
func Cached(ctx context.Context, name string) (string, bool, error) {
	path, err := script(ctx, name, nil, "-p")
	if err != nil {
		return "", false, err
	}
	info, err := os.Stat(path)
	return path, err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0, nil
}

// script runs build.sh for one name and returns the path it prints.
func script(ctx context.Context, name string, progress io.Writer, flags ...string) (string, error) {
	if known := slices.Concat(names, peers); !slices.Contains(known, name) {
		return "", fmt.Errorf("%w %q: known are %s", ErrUnknown, name, strings.Join(known, ", "))
	}
	root, err := Root()
	if err != nil {
		return "", &BuildError{Name: name, Err: err}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, maxBuild)
		defer cancel()
	}
	args := append([]string{filepath.Join(root, "hack", "testbin", "build.sh")}, flags...)
	args = append(args, name)
	cmd := exec.CommandContext(ctx, "bash", args...)
	cmd.Dir = root
	cmd.WaitDelay = 10 * time.Second
	killGroupOnCancel(cmd)
	var stdout bytes.Buffer
	tail := &tailBuffer{max: 16 << 10}
	cmd.Stdout = &limitedWriter{w: &stdout, n: 64 << 10}
	cmd.Stderr = tail
	if progress != nil {
		cmd.Stderr = io.MultiWriter(tail, progress)
	}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (the build did not finish in time; run `make testbin` before the tests)", ctx.Err())
		}
		return "", &BuildError{Name: name, Err: err, Output: tail.String()}
	}
	lines := strings.Fields(stdout.String())
	if len(lines) != 1 || !filepath.IsAbs(lines[0]) {
		return "", &BuildError{Name: name, Err: fmt.Errorf("build.sh printed %q, want one absolute path", stdout.String()), Output: tail.String()}
	}
	return lines[0], nil
}

// built remembers, per process, each name's outcome, so a binary is looked
// up (and built) once however many tests ask for it.
var built sync.Map // name → *outcome

type outcome struct {
	once sync.Once
	path string
	err  error
}

// Path returns the path of the named test binary, building it once per
// process when it is not cached. When the binary cannot be had it fails t
// with the build output; with STRATA_SKIP_CLUSTER_TESTS=1 set (and CI not
// true) it instead skips t without building, saying how to run the test.
func Path(t testing.TB, name string) string {
	t.Helper()
	if os.Getenv(UnitEnv) == "1" {
		t.Fatalf("test binary %s needed with %s=1 (make unit): unit tests need nothing built; move this test into an integration package (see DEVELOPERS.md, Tests)", name, UnitEnv)
	}
	optOut, err := optedOut()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if dt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := dt.Deadline(); ok {
			// Leave the test time to report, rather than die in a timeout panic.
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Until(d)/10))
			defer cancel()
		}
	}
	if optOut {
		path, ok, err := Cached(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Skipf("test binary %s is not built and %s is set; to run this test, unset %s and run `make testbin` (or just the test: it builds what it needs)", name, SkipEnv, SkipEnv)
		}
		return path
	}
	v, _ := built.LoadOrStore(name, new(outcome))
	o := v.(*outcome)
	o.once.Do(func() {
		t.Logf("testbin: looking up %s (building it from the Go module proxy if missing; kube-apiserver takes several minutes)", name)
		o.path, o.err = Build(ctx, name, os.Stderr) // progress only when it builds
	})
	if o.err != nil {
		t.Fatalf("%v\n(to skip the tests that need %s on this machine, set %s=1; CI refuses it)", o.err, name, SkipEnv)
	}
	return o.path
}

// optedOut reads the opt-out, refusing it under CI.
func optedOut() (bool, error) {
	raw, set := os.LookupEnv(SkipEnv)
	if !set || raw == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(raw)
	if err != nil {
		return false, fmt.Errorf("%s=%q: want 1 or 0 (true or false)", SkipEnv, raw)
	}
	if on {
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			return false, fmt.Errorf("%s=%s is set but CI=%s: tests that need a cluster or helm must run in CI; unset %s", SkipEnv, raw, os.Getenv("CI"), SkipEnv)
		}
	}
	return on, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(string(b.buf))
}

// limitedWriter passes on the first n bytes and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	k := min(len(p), l.n)
	if k > 0 {
		if _, err := l.w.Write(p[:k]); err != nil {
			return 0, err
		}
		l.n -= k
	}
	return len(p), nil
}
