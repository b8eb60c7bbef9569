//go:build linux

package rsswatch_test

import (
	"os"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/rsswatch"
)

func TestRssAnon(t *testing.T) {
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = 1 // touched: resident, anonymous
	}
	rss, ok := rsswatch.RssAnon(os.Getpid())
	if !ok || rss < 64<<20 {
		t.Errorf("RssAnon(self) = %d, %v; want at least the 64 MiB just touched", rss, ok)
	}
	_ = buf[len(buf)-1]
	if _, ok := rsswatch.RssAnon(1 << 30); ok {
		t.Error("RssAnon of a process that does not exist = ok")
	}
}

// TestWatchKills: a process past the limit is killed and reported; one
// that ends on its own ends the watch.
func TestWatchKills(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var peak atomic.Int64
	killed := make(chan struct{})
	done := make(chan struct{})
	go func() { rsswatch.Watch(cmd.Process.Pid, 1, &peak, killed); close(done) }()
	select {
	case <-killed:
	case <-time.After(30 * time.Second):
		t.Fatal("a process past a 1-byte limit was not killed")
	}
	<-done
	if err := cmd.Wait(); err == nil {
		t.Error("sleep exited cleanly, want it killed")
	}
	if peak.Load() <= 1 {
		t.Errorf("peak %d, want the RssAnon seen", peak.Load())
	}

	cmd = exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed = make(chan struct{})
	done = make(chan struct{})
	go func() { rsswatch.Watch(cmd.Process.Pid, 1<<40, &peak, killed); close(done) }()
	_ = cmd.Wait()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the watch went on after the process ended")
	}
}
