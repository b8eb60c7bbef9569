//go:build linux

package hookexec_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/hookexec"
	"github.com/strata-dev/strata/internal/hookexec/hookexectest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	hookexectest.Cleanup()
	os.Exit(code)
}

// running returns the processes whose command line holds marker.
func running(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(cmdline, []byte(marker)) {
			continue
		}
		// A zombie with no thread left runs nothing.
		status, _ := os.ReadFile("/proc/" + e.Name() + "/status")
		if bytes.Contains(status, []byte("\nState:\tZ")) && bytes.Contains(status, []byte("\nThreads:\t1\n")) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// rewritten removes file and reports whether something writes it again
// within wait.
func rewritten(file string, wait time.Duration) bool {
	os.Remove(file)
	for end := time.Now().Add(wait); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(file); err == nil {
			return true
		}
	}
	return false
}

// TestTrackerKillsLeftovers runs commands that leave a task behind, each
// rewriting a file, and checks that once the Tracker is closed nothing
// runs and nothing rewrites the file: with namespaces, and following the
// process tree.
func TestTrackerKillsLeftovers(t *testing.T) {
	bin := hookexectest.Leftover(t)
	if err := hookexec.AdoptOrphans(t.Context()); err != nil {
		t.Fatal(err)
	}
	type mode struct {
		name         string
		noNamespaces bool
	}
	modes := []mode{{"process tree", true}}
	if err := hookexec.Namespaces(); err == nil {
		modes = append(modes, mode{"namespaces", false})
	} else {
		t.Logf("namespaces: %v", err)
	}
	for _, m := range modes {
		for _, kind := range []string{"daemon", "zombie-thread", "clone"} {
			t.Run(m.name+"/"+kind, func(t *testing.T) {
				dir := t.TempDir()
				file := filepath.Join(dir, "victim")
				tr := hookexec.NewTracker()
				tr.NoNamespaces = m.noNamespaces
				cmd := &hookexec.Command{Argv: []string{bin, kind, file, filepath.Join(dir, "ready")}, Tracker: tr, Timeout: 20 * time.Second}
				if _, err := cmd.Run(t.Context()); err != nil {
					t.Fatal(err)
				}
				if got := tr.Namespaced(); got == m.noNamespaces {
					t.Errorf("Namespaced() = %v", got)
				}
				if m.noNamespaces && !rewritten(file, 10*time.Second) {
					t.Fatalf("no %s left behind before Close: the test proves nothing", kind)
				}
				if err := tr.Close(); err != nil {
					t.Fatalf("Close() = %v", err)
				}
				if pids := running(file); len(pids) > 0 {
					t.Fatalf("after Close, processes %v still run", pids)
				}
				// And nothing rewrites the file any more (it did every 2 ms).
				if rewritten(file, 100*time.Millisecond) {
					t.Fatalf("%s was written after Close", file)
				}
			})
		}
	}
}

// TestTrackerUnattributed: a process that joins the server's own process
// group cannot be told from the server's; it is not killed, and Close
// does not vouch for the request.
func TestTrackerUnattributed(t *testing.T) {
	if err := hookexec.AdoptOrphans(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A stand-in for the server's own child: started beside the tracked
	// commands, in this process's group.
	own := exec.Command("sleep", "30")
	if err := own.Start(); err != nil {
		t.Skip(err)
	}
	tr := hookexec.NewTracker()
	tr.NoNamespaces = true
	if _, err := (&hookexec.Command{Argv: []string{"true"}, Tracker: tr}).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Started after the Tracker: it could be the request's.
	late := exec.Command("sleep", "30")
	if err := late.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { own.Process.Kill(); own.Wait(); late.Process.Kill(); late.Wait() })
	err := tr.Close()
	if !errors.Is(err, hookexec.ErrSurvivor) || !strings.Contains(err.Error(), "process group") {
		t.Fatalf("Close() = %v, want ErrSurvivor naming the process group", err)
	}
	if syscall.Kill(late.Process.Pid, 0) != nil {
		t.Fatal("the server's own child was killed")
	}
	if _, err := (&hookexec.Command{Argv: []string{"true"}, Tracker: tr}).Run(t.Context()); err == nil {
		t.Error("Run with a closed Tracker succeeded")
	}
}

// TestTrackerSharedMemory: a command creating two System V shared memory
// segments leaves none once its Tracker is closed.
func TestTrackerSharedMemory(t *testing.T) {
	bin := hookexectest.Leftover(t)
	for _, noNS := range []bool{true, false} {
		if !noNS && hookexec.Namespaces() != nil {
			continue
		}
		t.Run("namespaces="+strconv.FormatBool(!noNS), func(t *testing.T) {
			tr := hookexec.NewTracker()
			tr.NoNamespaces = noNS
			res, err := (&hookexec.Command{Argv: []string{bin, "shm"}, Tracker: tr}).Run(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			ids := strings.Fields(string(res.Stdout))
			if len(ids) != 2 {
				t.Fatalf("stdout %q, want two segment IDs", res.Stdout)
			}
			if err := tr.Close(); err != nil {
				t.Fatalf("Close() = %v", err)
			}
			if noNS {
				// Without namespaces the segments are in this IPC
				// namespace: their IDs are ours to look for.
				for _, id := range ids {
					if segmentExists(t, id) {
						t.Errorf("segment %s outlived its request", id)
					}
				}
			}
			// With namespaces they were never in ours: count none of ours.
			if n := segmentsSince(t); !noNS && n != 0 {
				t.Errorf("%d segments of the command in this IPC namespace", n)
			}
		})
	}
}

func segmentExists(t *testing.T, id string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/sysvipc/shm")
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		if f := strings.Fields(line); len(f) > 1 && f[1] == id {
			return true
		}
	}
	return false
}

// segmentsSince counts this user's segments of 1 MiB created in the last
// minute whose creator is gone: what the shm command would leave here.
func segmentsSince(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sysvipc/shm")
	if err != nil {
		t.Skip(err)
	}
	lines := strings.Split(string(b), "\n")
	head := strings.Fields(lines[0])
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	n := 0
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) < len(head) {
			continue
		}
		ctime, _ := strconv.ParseInt(f[col["ctime"]], 10, 64)
		cpid, _ := strconv.Atoi(f[col["cpid"]])
		if f[col["size"]] == "1048576" && f[col["cuid"]] == strconv.Itoa(os.Geteuid()) && time.Since(time.Unix(ctime, 0)) < time.Minute && syscall.Kill(cpid, 0) != nil {
			n++
		}
	}
	return n
}

// TestTrackerSemaphoresAndQueues: a command creating two System V
// semaphore sets, or two message queues holding a message each, leaves
// none once its Tracker is closed.
func TestTrackerSemaphoresAndQueues(t *testing.T) {
	bin := hookexectest.Leftover(t)
	for _, kind := range []struct{ mode, table string }{{"sem", "/proc/sysvipc/sem"}, {"msg", "/proc/sysvipc/msg"}} {
		for _, noNS := range []bool{true, false} {
			if !noNS && hookexec.Namespaces() != nil {
				continue
			}
			t.Run(kind.mode+"/namespaces="+strconv.FormatBool(!noNS), func(t *testing.T) {
				if _, err := os.Stat(kind.table); err != nil {
					t.Skip(err)
				}
				tr := hookexec.NewTracker()
				tr.NoNamespaces = noNS
				res, err := (&hookexec.Command{Argv: []string{bin, kind.mode}, Tracker: tr}).Run(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				ids := strings.Fields(string(res.Stdout))
				if len(ids) != 2 {
					t.Fatalf("stdout %q, want two IDs", res.Stdout)
				}
				if noNS {
					for _, id := range ids {
						if !ipcExists(t, kind.table, id) {
							t.Fatalf("%s %s is not in %s before Close: the test proves nothing", kind.mode, id, kind.table)
						}
					}
				}
				if err := tr.Close(); err != nil {
					t.Fatalf("Close() = %v", err)
				}
				if noNS {
					for _, id := range ids {
						if ipcExists(t, kind.table, id) {
							t.Errorf("%s %s outlived its request", kind.mode, id)
						}
					}
				}
			})
		}
	}
}

// ipcExists reports whether table (/proc/sysvipc/...) lists the ID id,
// created by this user.
func ipcExists(t *testing.T, table, id string) bool {
	t.Helper()
	b, err := os.ReadFile(table)
	if err != nil {
		t.Skip(err)
	}
	lines := strings.Split(string(b), "\n")
	col := map[string]int{}
	for i, h := range strings.Fields(lines[0]) {
		col[h] = i
	}
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) > col["cuid"] && f[1] == id && f[col["cuid"]] == strconv.Itoa(os.Geteuid()) {
			return true
		}
	}
	return false
}
