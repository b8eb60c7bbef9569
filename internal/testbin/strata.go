package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// strataDirPrefix names the directories Strata builds into, one per test
// process: strata-test-bin-PID under the temporary directory.
const strataDirPrefix = "strata-test-bin-"

var strataBuild struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Strata builds cmd/strata from the checkout the tests belong to, once per
// test process, and returns the binary's path, for tests that run strata
// as a user does (a process of its own). The binary lives in a directory of
// this process's; RemoveStrata removes it (kubetest.Main calls it), and a
// later build removes those of test processes that have ended without.
func Strata(t testing.TB) string {
	t.Helper()
	b := &strataBuild
	b.once.Do(func() {
		root, err := Root()
		if err != nil {
			b.err = err
			return
		}
		sweepStrata()
		b.dir = filepath.Join(os.TempDir(), strataDirPrefix+strconv.Itoa(os.Getpid()))
		if err := os.MkdirAll(b.dir, 0o700); err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(b.dir, "strata")
		cmd := exec.Command("go", "build", "-o", b.path, "./cmd/strata")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building strata: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// RemoveStrata removes the binary Strata built, if any. Call it after the
// last test (from TestMain); a later Strata in the process fails.
func RemoveStrata() {
	b := &strataBuild
	b.once.Do(func() { b.err = fmt.Errorf("testbin.Strata after RemoveStrata") })
	if b.dir != "" {
		_ = os.RemoveAll(b.dir)
	}
}

// sweepStrata removes the build directories of test processes that have
// ended (killed, or without a TestMain calling RemoveStrata).
func sweepStrata() {
	entries, err := os.ReadDir(os.TempDir())
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, ok := strings.CutPrefix(e.Name(), strataDirPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		n, err := strconv.Atoi(pid)
		if err != nil || n <= 0 || n == os.Getpid() {
			continue
		}
		if _, err := os.Stat(filepath.Join("/proc", pid)); err == nil || !procMounted() {
			continue // alive, or no way to tell
		}
		_ = os.RemoveAll(filepath.Join(os.TempDir(), e.Name()))
	}
}

// procMounted reports whether /proc tells which processes live.
func procMounted() bool {
	_, err := os.Stat("/proc/self")
	return err == nil
}
