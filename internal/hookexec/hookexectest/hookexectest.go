// Package hookexectest holds what the attack tests of hookexec and of the
// servers built on it share: Leftover, a hostile command that leaves tasks
// behind the way a plugin command or hook can. It exists for tests.
package hookexectest

import (
	_ "embed"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

//go:embed testdata/leftover.c
var leftoverC []byte

var leftover struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// Leftover returns the path of leftover.c built with gcc (once per test
// binary): a program that leaves a task behind — a daemon, a zombie
// leader with a live thread, a clone without SIGCHLD, SysV IPC objects —
// rewriting a file, as a hostile command can. Without gcc the test is
// skipped, or failed in CI (CI set), where gcc is part of the machine.
func Leftover(t testing.TB) string {
	t.Helper()
	leftover.once.Do(func() {
		gcc, err := exec.LookPath("gcc")
		if err != nil {
			leftover.err = err
			return
		}
		if leftover.dir, err = os.MkdirTemp("", "leftover"); err != nil {
			leftover.err = err
			return
		}
		src := filepath.Join(leftover.dir, "leftover.c")
		if err := os.WriteFile(src, leftoverC, 0o600); err != nil {
			leftover.err = err
			return
		}
		leftover.bin = filepath.Join(leftover.dir, "leftover")
		if out, err := exec.Command(gcc, "-O2", "-pthread", "-o", leftover.bin, src).CombinedOutput(); err != nil {
			leftover.err = errors.New(string(out))
		}
	})
	if leftover.err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("building leftover.c: %v", leftover.err)
		}
		t.Skipf("building leftover.c: %v", leftover.err)
	}
	return leftover.bin
}

// Cleanup removes what Leftover built; call it from TestMain after the
// tests ran.
func Cleanup() {
	if leftover.dir != "" {
		os.RemoveAll(leftover.dir)
	}
}
