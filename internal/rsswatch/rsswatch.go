//go:build linux

// Package rsswatch measures a process's anonymous resident memory
// (RssAnon: what a user pays for, not the file pages shared with others)
// and stops a process past a limit, as a container's memory limit would:
// the watchdog of the load runs (hack/cmpload, hack/genload) and of the
// memory attack tests. It exists for those; the product does not use it.
package rsswatch

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Interval is how often Watch reads the process's memory.
const Interval = 5 * time.Millisecond

// RssAnon returns the anonymous resident memory of process pid in bytes,
// from /proc/PID/status; false when the process is gone or the line is
// missing.
func RssAnon(pid int) (int64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// Watch records the peak RssAnon of process pid in peak, every Interval,
// until the process is gone; past limit it kills the process (SIGKILL),
// closes killed and returns.
func Watch(pid int, limit int64, peak *atomic.Int64, killed chan<- struct{}) {
	for {
		rss, ok := RssAnon(pid)
		if !ok {
			return
		}
		if rss > peak.Load() {
			peak.Store(rss)
		}
		if rss > limit {
			syscall.Kill(pid, syscall.SIGKILL)
			close(killed)
			return
		}
		time.Sleep(Interval)
	}
}
