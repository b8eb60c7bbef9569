package cmpserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/strata-dev/strata/internal/cmpserver/tarball"
	"github.com/strata-dev/strata/internal/hookexec"
)

// ErrDiskBudget is wrapped by the error of a request whose commands wrote
// more into its workspace than the server's disk budgets allow
// (Server.MaxWrittenBytes, Server.MaxWrittenBytesTotal): its commands are
// killed and it fails with gRPC's ResourceExhausted.
var ErrDiskBudget = errors.New("the plugin's commands wrote more than the sidecar's disk budget")

// Defaults of the disk budgets for what a request's commands write
// (cmp serve --max-written-bytes, --max-written-bytes-total).
const (
	DefaultMaxWrittenBytes      = 1 << 30
	DefaultMaxWrittenBytesTotal = 4 << 30
)

// How a diskGuard watches a workspace: it looks at the work volume's
// free space every diskTick, and walks the workspace (tarball.Workspace.
// Usage) when the volume shrank by a sixteenth of the request's budget
// since the last walk, or diskWalkEvery after it, and never sooner after
// the last walk than twice the time that walk took (so that walking a
// large repository costs at most a third of a core), nor later than ten
// times.
const (
	diskTick      = 50 * time.Millisecond
	diskWalkEvery = 250 * time.Millisecond
)

// A diskGuard bounds what the commands of the server's requests write into
// their workspaces (the copy of the repository and the temporary
// directory), per request and in all, while they run: it measures each
// request's workspace as its commands run, and stops the request
// (hookexec.Tracker.Stop) whose writes pass a budget. A nil *diskGuard
// bounds nothing.
type diskGuard struct {
	perRequest, total         int64
	perRequestFlag, totalFlag string
	metrics                   *Metrics

	mu      sync.Mutex
	written map[*diskWatch]int64 // the last measure of each request watched and not stopped
}

// newDiskGuard returns a guard of the budgets (0 or less: none), or nil
// when there is neither.
func newDiskGuard(perRequest, total int64, m *Metrics) *diskGuard {
	if perRequest <= 0 && total <= 0 {
		return nil
	}
	return &diskGuard{perRequest: perRequest, total: total, perRequestFlag: "--max-written-bytes", totalFlag: "--max-written-bytes-total",
		metrics: m, written: map[*diskWatch]int64{}}
}

// A diskWatch watches one request's workspace.
type diskWatch struct {
	g    *diskGuard
	ws   *tarball.Workspace
	tr   *hookexec.Tracker
	stop chan struct{}
	done chan struct{}
	once sync.Once
	last int64 // the volume's use at the last walk; run's until done
}

type diskWatchKey struct{}

// watch starts watching the workspace of a request whose commands run
// with tr, and returns ctx carrying the per-request budget for the
// commands' RLIMIT_FSIZE (maxFileSize), and the watch. Without a guard, a
// Tracker or a private workspace, it watches nothing (a nil *diskWatch).
func (g *diskGuard) watch(ctx context.Context, ws *tarball.Workspace, tr *hookexec.Tracker) (context.Context, *diskWatch) {
	if g == nil || tr == nil || ws.TempDir() == "" {
		return ctx, nil
	}
	w := &diskWatch{g: g, ws: ws, tr: tr, stop: make(chan struct{}), done: make(chan struct{})}
	w.last, _ = volumeUsed(ws.TempDir())
	g.mu.Lock()
	g.written[w] = 0
	g.mu.Unlock()
	go w.run()
	return context.WithValue(ctx, diskWatchKey{}, w), w
}

// finish ends the watch once the request's commands are done, and returns
// the error that stopped them, if any. When the work volume grew by more
// than a walk's trigger since the last walk (a command shorter than the
// walks' interval wrote), or the plugin failed (perr: a command that
// reached the file size limit may have failed on EFBIG rather than died of
// SIGXFSZ, as a PID namespace's first process does, and the file system
// may not count its delayed writes yet), it measures the workspace a last
// time.
func (w *diskWatch) finish(perr error) error {
	if w == nil {
		return nil
	}
	w.end()
	if err := w.tr.Stopped(); err != nil {
		return err
	}
	if used, ok := volumeUsed(w.ws.TempDir()); ok && used-w.last < w.trigger() && perr == nil {
		return nil
	}
	u, err := w.ws.Usage()
	if err != nil {
		u, err = w.ws.Usage()
	}
	if err != nil {
		w.g.metrics.diskStopped("request")
		err = fmt.Errorf("%w: what the plugin's commands wrote into the request's workspace cannot be measured: %w; keep the workspace's directories readable and less than 256 deep",
			ErrDiskBudget, err)
		w.tr.Stop(err)
		return err
	}
	w.g.mu.Lock()
	w.g.written[w] = 0 // counted once more, for the total
	w.g.mu.Unlock()
	err = w.g.check(w, u)
	w.g.forget(w)
	if err != nil {
		w.tr.Stop(err)
	}
	return err
}

// end stops the watch; the request's measure leaves the total.
func (w *diskWatch) end() {
	if w == nil {
		return
	}
	w.once.Do(func() {
		close(w.stop)
		<-w.done
		w.g.forget(w)
	})
}

func (g *diskGuard) forget(w *diskWatch) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.written, w)
	g.metrics.setWritten(g.sumLocked())
}

// trigger is how much the work volume must grow for a walk before its
// time: a sixteenth of the request's budget, at least 1 MiB.
func (w *diskWatch) trigger() int64 {
	return max(w.g.perRequest/16, 1<<20)
}

// maxFileSize returns the RLIMIT_FSIZE for the commands of ctx's request:
// its disk budget and a block, so that a file stopped by the limit has
// passed the budget, and the request is stopped with the budget's error;
// 0 for none.
func maxFileSize(ctx context.Context) int64 {
	w, _ := ctx.Value(diskWatchKey{}).(*diskWatch)
	if w == nil || w.g.perRequest <= 0 {
		return 0
	}
	return w.g.perRequest + 4096
}

// diskBudgetOf returns the per-request budget of ctx's request and the
// flag that sets it, for an error about a file that passed it; 0 and ""
// without one.
func diskBudgetOf(ctx context.Context) (int64, string) {
	w, _ := ctx.Value(diskWatchKey{}).(*diskWatch)
	if w == nil || w.g.perRequest <= 0 {
		return 0, ""
	}
	return w.g.perRequest, w.g.perRequestFlag
}

func (w *diskWatch) run() {
	defer close(w.done)
	t := time.NewTicker(diskTick)
	defer t.Stop()
	trigger := w.trigger()
	dir := w.ws.TempDir()
	failed := 0
	lastWalk, walkTook := time.Now(), time.Duration(0)
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		since := now.Sub(lastWalk)
		used, ok := volumeUsed(dir)
		grew := ok && used-w.last >= trigger
		if since < 2*walkTook || (!grew && since < max(diskWalkEvery, 10*walkTook)) {
			continue
		}
		u, err := w.ws.Usage()
		lastWalk, walkTook, w.last = time.Now(), time.Since(now), used
		if err != nil {
			// A walk may fail as a command renames what it reads; a
			// workspace that cannot be measured twice in a row is not
			// left to fill the disk.
			if failed++; failed < 2 {
				continue
			}
			w.g.metrics.diskStopped("request")
			w.tr.Stop(fmt.Errorf("%w: the plugin's commands were stopped: what they wrote into the request's workspace cannot be measured: %w; keep the workspace's directories readable and less than 256 deep",
				ErrDiskBudget, err))
			return
		}
		failed = 0
		if err := w.g.check(w, u); err != nil {
			w.tr.Stop(err)
			return
		}
	}
}

// check records u, the latest measure of w, and returns the error that
// stops w's request when it passes a budget.
func (g *diskGuard) check(w *diskWatch, u tarball.Usage) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.written[w]; !ok {
		return nil // ended
	}
	g.written[w] = u.Bytes
	if g.perRequest > 0 && u.Bytes > g.perRequest {
		delete(g.written, w)
		g.metrics.diskStopped("request")
		return &diskError{u: u, budget: g.perRequest, flag: g.perRequestFlag}
	}
	if g.total <= 0 {
		g.metrics.setWritten(g.sumLocked())
		return nil
	}
	sum := g.sumLocked()
	g.metrics.setWritten(sum)
	if sum <= g.total {
		return nil
	}
	delete(g.written, w)
	g.metrics.diskStopped("total")
	return &diskError{u: u, budget: g.total, flag: g.totalFlag, all: sum, requests: len(g.written) + 1}
}

func (g *diskGuard) sumLocked() int64 {
	var sum int64
	for _, n := range g.written {
		sum += n
	}
	return sum
}

// A diskError stops a request whose commands wrote past a disk budget.
type diskError struct {
	u        tarball.Usage
	budget   int64
	flag     string
	all      int64 // for the total: what the requests in flight wrote
	requests int
}

func (e *diskError) Error() string {
	entries := fmt.Sprintf("%d new entries", e.u.Entries)
	if e.u.Entries == 1 {
		entries = "1 new entry"
	}
	what := fmt.Sprintf("the plugin's commands were stopped: they wrote %s (%d bytes) into the request's copy of the repository and its temporary directory (%s", mib(e.u.Bytes), e.u.Bytes, entries)
	if e.u.Largest != "" {
		what += fmt.Sprintf("; the largest file, %s, %s", e.u.Largest, mib(e.u.LargestSize))
	}
	what += ")"
	if e.all == 0 {
		return fmt.Sprintf("%s, more than the disk budget of a request, %s (%d bytes; cmp serve %s): write less there, or raise %s",
			what, mib(e.budget), e.budget, e.flag, e.flag)
	}
	return fmt.Sprintf("%s, and the %d requests in flight %s in all, more than the disk budget of all requests, %s (%d bytes; cmp serve %s): retry later, or raise %s",
		what, e.requests, mib(e.all), mib(e.budget), e.budget, e.flag, e.flag)
}

func (e *diskError) Unwrap() error { return ErrDiskBudget }
