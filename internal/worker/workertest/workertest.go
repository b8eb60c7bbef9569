// Package workertest helps the tests of worker pools find the worker
// processes a test started.
package workertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Children returns the pids of this process's live child processes: on
// Linux, the entries of /proc whose parent is this process, zombies left
// out. It skips the test where there is no /proc.
func Children(t testing.TB) []int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	if len(stats) == 0 {
		t.Skip("no /proc")
	}
	var pids []int
	for _, f := range stats {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // the process ended
		}
		// pid (comm) state ppid ...
		_, rest, _ := strings.Cut(string(data), ") ")
		var state string
		var ppid int
		if _, err := fmt.Sscan(rest, &state, &ppid); err != nil || ppid != os.Getpid() || state == "Z" {
			continue
		}
		var pid int
		if _, err := fmt.Sscan(filepath.Base(filepath.Dir(f)), &pid); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
