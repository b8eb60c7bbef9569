//go:build linux

package hookexec_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/hookexec"
)

// TestSurvivors: a daemon a command leaves behind (out of its process
// group, its parent gone) is found, then its absence once killed, and it is
// reaped; a running command and what it starts are not survivors, a
// process started otherwise is.
func TestSurvivors(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid program:", err)
	}
	if err := hookexec.AdoptOrphans(t.Context()); err != nil {
		t.Fatal(err)
	}
	survivors := func(m hookexec.Mark) int {
		t.Helper()
		n, err := hookexec.Survivors(m)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	mark := hookexec.Now()
	pidFile := filepath.Join(t.TempDir(), "pid")
	c := &hookexec.Command{
		// The shell ends once the daemon has written its process ID.
		Argv: sh(`setsid sh -c 'echo $$ >"$1.tmp"; mv "$1.tmp" "$1"; exec sleep 60' sh "$1" </dev/null >/dev/null 2>&1 & while [ ! -s "$1" ]; do sleep 0.01; done`, pidFile),
		Env:  []string{testPath},
	}
	if _, err := run(t, t.Context(), c); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })

	if n := survivors(mark); n != 1 {
		t.Errorf("Survivors(before the command) = %d, want 1 (the daemon %d)", n, pid)
	}
	// The daemon started before this later mark (start times count in
	// 10 ms ticks; Survivors allows one).
	time.Sleep(50 * time.Millisecond)
	if n := survivors(hookexec.Now()); n != 0 {
		t.Errorf("Survivors(after the daemon started) = %d, want 0", n)
	}

	// A running command is not a survivor; what it starts is.
	mark = hookexec.Now()
	started := filepath.Join(t.TempDir(), "started")
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(t, t.Context(), &hookexec.Command{Argv: sh(`sleep 60 & echo >"$1"; wait`, started), Env: []string{testPath}, Timeout: 2 * time.Second})
	}()
	eventually.Within(t, liveness, "the command started", func() (bool, string) {
		_, err := os.Stat(started)
		return err == nil, "not yet"
	})
	if n := survivors(mark); n != 0 {
		t.Errorf("Survivors(while a command runs sleep) = %d, want 0: a running command's processes are in its own sandbox", n)
	}
	<-done

	// A process this one started itself, not through Run, counts.
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	if n := survivors(mark); n != 1 {
		t.Errorf("Survivors(with a child started since) = %d, want 1", n)
	}
	other.Process.Kill()
	other.Wait()

	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually.Within(t, liveness, "no survivor once the daemon is killed", func() (bool, string) {
		n := survivors(mark)
		return n == 0, strconv.Itoa(n) + " survivors"
	})
	eventually.Within(t, liveness, "the killed daemon reaped", func() (bool, string) {
		return processGone(pid) && !exists("/proc/"+strconv.Itoa(pid)), "still in /proc"
	})
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
