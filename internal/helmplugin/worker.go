package helmplugin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/strata-dev/strata/internal/params"
)

// WorkerOptions make a Plugin render in worker processes: each render runs
// in a warm process of its own, bounded in memory, killed when it runs
// past its time (Options.Timeout, the request's context) or memory budget
// and replaced by a new one, so that no chart can wedge the server's
// render slots or end the server. Without Command the Plugin renders
// in-process: a render past its deadline is then abandoned but keeps its
// slot until it ends, and a render past the memory the process can have
// ends the process.
type WorkerOptions struct {
	// Command starts a worker: a program that calls WorkerMain. strata
	// starts itself: `strata cmp helm-worker`. Empty renders in-process.
	Command []string
	// Env is the workers' environment; nil is the server's.
	Env []string
	// Memory bounds what one render may add to its worker's memory, in
	// bytes; 0 is DefaultRenderMemory, negative no bound. The worker sets
	// its address space limit (RLIMIT_AS, on Linux) to what it has mapped
	// before the render plus Memory plus 128 MiB (the Go heap grows by
	// arenas of 64 MiB), and its Go memory limit to what it holds plus
	// Memory.
	Memory int64
}

// DefaultRenderMemory is the memory budget of one render in a worker.
const DefaultRenderMemory = 1 << 30

// workerStartTimeout bounds how long a new worker may take to say it is
// ready.
const workerStartTimeout = 30 * time.Second

// A pool runs renders in worker processes, one render per worker at a
// time, at most cap(slots) at once. Idle workers wait warm for the next
// request; a worker killed or dead is replaced in the background.
type pool struct {
	opts WorkerOptions
	cfg  workerConfig
	log  *slog.Logger
	// relog logs the workers' log lines again, which carry the plugin's
	// attributes already.
	relog  *slog.Logger
	slots  chan struct{}
	budget int64 // the memory budget, negative for none

	mu      sync.Mutex
	idle    []*worker
	closed  bool
	live    map[*worker]Stats // the last counters of every worker
	retired Stats             // the sums of the workers gone
	warming int
	counts  WorkerStats
}

// WorkerStats count what became of the render workers of a Plugin with
// Options.Workers, since it was made.
type WorkerStats struct {
	// Started counts the workers started, Live those running now (idle or
	// rendering).
	Started uint64
	Live    int
	// Renders counts the renders sent to a worker; TimedOut those stopped
	// past their time budget (or their request's deadline),
	// OutOfMemory those past their memory budget, Crashed those whose
	// worker ended otherwise.
	Renders, TimedOut, OutOfMemory, Crashed uint64
}

// WorkerStats returns the counters of the plugin's render workers (zero
// when it renders in-process).
func (p *Plugin) WorkerStats() WorkerStats {
	if p.pool == nil {
		return WorkerStats{}
	}
	p.pool.mu.Lock()
	defer p.pool.mu.Unlock()
	s := p.pool.counts
	s.Live = len(p.pool.live)
	return s
}

// count adds one to a counter of p.counts.
func (p *pool) count(c *uint64) {
	p.mu.Lock()
	*c++
	p.mu.Unlock()
}

// A worker is one render worker process.
type worker struct {
	cmd  *exec.Cmd
	req  *os.File // the write end of the request pipe
	bw   *bufio.Writer
	enc  *gob.Encoder
	dec  *gob.Decoder
	ans  *os.File // the read end of the answer pipe
	err  *crashLog
	done chan struct{} // closed when the process has been reaped
	// wait is the process's exit status, set before done is closed.
	wait error
	// start is the worker's address space once started; retireAt the
	// size past which it is replaced after a render.
	start, retireAt int64
}

func newPool(opts WorkerOptions, cfg workerConfig, slots int, log, relog *slog.Logger) *pool {
	budget := opts.Memory
	if budget == 0 {
		budget = DefaultRenderMemory
	}
	cfg.Memory = budget
	p := &pool{opts: opts, cfg: cfg, log: log, relog: relog, slots: make(chan struct{}, slots), budget: budget, live: map[*worker]Stats{}}
	for range slots {
		p.warm()
	}
	return p
}

// warm starts a worker in the background and keeps it idle, unless the
// idle and starting workers already fill the slots.
func (p *pool) warm() {
	p.mu.Lock()
	if p.closed || len(p.idle)+p.warming >= cap(p.slots) {
		p.mu.Unlock()
		return
	}
	p.warming++
	p.mu.Unlock()
	go func() {
		w, err := p.start()
		p.mu.Lock()
		defer p.mu.Unlock()
		p.warming--
		if err != nil {
			p.log.Warn("starting a render worker", "error", err)
			return
		}
		if p.closed || len(p.idle) >= cap(p.slots) {
			delete(p.live, w)
			go w.stop()
			return
		}
		// First out last: its caches are empty.
		p.idle = slices.Insert(p.idle, 0, w)
	}()
}

// start starts a worker and waits for it to be ready.
func (p *pool) start() (*worker, error) {
	if len(p.opts.Command) == 0 {
		return nil, errors.New("no render worker command")
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ansR, ansW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	w := &worker{req: reqW, ans: ansR, err: &crashLog{}, done: make(chan struct{})}
	w.bw = bufio.NewWriter(reqW)
	w.enc, w.dec = gob.NewEncoder(w.bw), gob.NewDecoder(bufio.NewReaderSize(ansR, 64<<10))
	cmd := exec.Command(p.opts.Command[0], p.opts.Command[1:]...)
	cmd.Env = p.opts.Env
	// Descriptors 3 and 4 (workerRequestFD, workerAnswerFD).
	cmd.ExtraFiles = []*os.File{reqR, ansW}
	cmd.Stdout, cmd.Stderr = w.err, w.err
	cmd.WaitDelay = time.Second
	setWorkerProcess(cmd)
	w.cmd = cmd
	err = cmd.Start()
	reqR.Close()
	ansW.Close()
	if err != nil {
		reqW.Close()
		ansR.Close()
		return nil, fmt.Errorf("starting the render worker %s: %w", p.opts.Command[0], err)
	}
	go func() {
		w.wait = cmd.Wait()
		close(w.done)
	}()
	ready := make(chan error, 1)
	var r workerReady
	go func() {
		if err := w.send(p.cfg); err != nil {
			ready <- err
			return
		}
		ready <- w.dec.Decode(&r)
	}()
	timer := time.NewTimer(workerStartTimeout)
	defer timer.Stop()
	select {
	case err = <-ready:
	case <-timer.C:
		err = fmt.Errorf("not ready after %s", workerStartTimeout)
	}
	if err != nil {
		w.stop()
		return nil, fmt.Errorf("starting the render worker: %w (%s)", err, w.exit())
	}
	w.start = r.AddressSpace
	if r.AddressSpace > 0 && p.budget >= 0 {
		w.retireAt = r.AddressSpace + p.budget + p.cfg.ChartCacheBytes + p.cfg.DocumentCacheBytes + addressSpaceMargin
	}
	p.mu.Lock()
	p.live[w] = Stats{}
	p.counts.Started++
	p.mu.Unlock()
	p.log.Debug("render worker started", "pid", cmd.Process.Pid)
	return w, nil
}

func (w *worker) send(v any) error {
	if err := w.enc.Encode(v); err != nil {
		return err
	}
	return w.bw.Flush()
}

// stop kills the worker and waits for it to be reaped.
func (w *worker) stop() {
	w.req.Close()
	killWorker(w.cmd.Process)
	<-w.done
	w.ans.Close()
}

// exit says how the worker ended, once done.
func (w *worker) exit() string {
	select {
	case <-w.done:
	case <-time.After(time.Second):
		return "still running"
	}
	msg := "exited"
	if w.wait != nil {
		msg = w.wait.Error()
	}
	if f := w.err.fatal(); f != "" {
		msg += ": " + f
	}
	return msg
}

// get takes an idle worker, or starts one. An idle worker that has ended
// meanwhile (killed from outside) is replaced, not handed out.
func (p *pool) get() (*worker, error) {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			return p.start()
		}
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		select {
		case <-w.done:
			p.log.Warn("render worker ended while idle", "exit", w.exit())
			p.retire(w)
			p.warm()
			continue
		default:
		}
		return w, nil
	}
}

// put gives a worker back after a render, or replaces it when it has
// grown past its bound. Idle workers are taken last in, first out, so
// that the worker whose caches were used last serves next; when more are
// idle than there are slots (a worker was started while others were
// warming), the one idle longest goes.
func (p *pool) put(w *worker, a *workerAnswer) {
	p.mu.Lock()
	p.live[w] = a.Stats
	grown := w.retireAt > 0 && a.AddressSpace > w.retireAt
	keep := !p.closed && !grown
	var extra *worker
	if keep {
		if len(p.idle) >= cap(p.slots) {
			extra = p.idle[0]
			p.idle = p.idle[1:]
		}
		p.idle = append(p.idle, w)
	}
	p.mu.Unlock()
	if extra != nil {
		p.retire(extra)
	}
	if !keep {
		p.retire(w)
	}
	if grown {
		p.log.Debug("render worker replaced: it grew past its bound", "address_space", a.AddressSpace, "bound", w.retireAt)
		p.warm()
	}
}

// retire stops a worker and keeps its counters.
func (p *pool) retire(w *worker) {
	w.stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.live[w]; ok {
		// Its counters stay; what its caches held is gone.
		for _, c := range []*CacheStats{&s.Charts, &s.Documents, &s.Values, &s.Announcements} {
			c.Bytes, c.Entries = 0, 0
		}
		p.retired = addStats(p.retired, s)
		delete(p.live, w)
	}
}

// close stops the idle workers; the busy ones are stopped as their renders
// end.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, w := range idle {
		p.retire(w)
	}
}

// stats sums the counters of the workers' caches.
func (p *pool) stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.retired
	for _, w := range p.live {
		s = addStats(s, w)
	}
	return s
}

func addStats(a, b Stats) Stats {
	add := func(x, y CacheStats) CacheStats {
		return CacheStats{Hits: x.Hits + y.Hits, Misses: x.Misses + y.Misses, Evictions: x.Evictions + y.Evictions, Bytes: x.Bytes + y.Bytes, Entries: x.Entries + y.Entries}
	}
	return Stats{Charts: add(a.Charts, b.Charts), Documents: add(a.Documents, b.Documents), Values: add(a.Values, b.Values), Announcements: add(a.Announcements, b.Announcements)}
}

// generate renders in a worker. A render that outlives ctx, or the
// worker, is stopped: the worker is killed, and replaced.
func (p *pool) generate(ctx context.Context, req *params.Request) ([]string, error) {
	a, err := p.run(ctx, req, false)
	if err != nil {
		return nil, err
	}
	if a.Manifests == nil {
		return []string{}, nil
	}
	return a.Manifests, nil
}

// announce makes the parameters announcement in a worker, as generate
// renders.
func (p *pool) announce(ctx context.Context, req *params.Request) ([]params.Announcement, error) {
	a, err := p.run(ctx, req, true)
	if err != nil {
		return nil, err
	}
	var anns []params.Announcement
	if err := json.Unmarshal(a.Announcements, &anns); err != nil {
		return nil, fmt.Errorf("reading the render worker's announcement: %w", err)
	}
	return anns, nil
}

// run sends a request to a worker: a render, or an announcement.
func (p *pool) run(ctx context.Context, req *params.Request, announce bool) (*workerAnswer, error) {
	start := time.Now()
	where := appDir(req)
	verb := "rendering"
	if announce {
		verb = "announcing the parameters of"
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting to render the chart in %s: %w", where, context.Cause(ctx))
	}
	defer func() { <-p.slots }()
	js, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	// A worker that ended before it took the request (killed from
	// outside while idle) fails the write at once: the request goes to
	// another one.
	var w *worker
	for attempt := 0; ; attempt++ {
		if w, err = p.get(); err != nil {
			return nil, fmt.Errorf("%s the chart in %s: %w", verb, where, err)
		}
		err = w.send(workerRequest{Request: js, Announce: announce})
		if err == nil {
			break
		}
		p.retire(w)
		p.warm()
		if attempt == 1 {
			p.count(&p.counts.Crashed)
			return nil, fmt.Errorf("%s the chart in %s: the render worker did not take the request: %w (%s)", verb, where, err, w.exit())
		}
	}
	type result struct {
		a   workerAnswer
		err error
	}
	var (
		mu    sync.Mutex
		chart string
	)
	named := func() string {
		mu.Lock()
		defer mu.Unlock()
		if chart == "" {
			return "the chart in " + where
		}
		return fmt.Sprintf("chart %q in %s", chart, where)
	}
	done := make(chan result, 1)
	p.count(&p.counts.Renders)
	go func() {
		for {
			var a workerAnswer
			if err := w.dec.Decode(&a); err != nil {
				done <- result{err: err}
				return
			}
			if !a.Done {
				mu.Lock()
				chart = a.Chart
				mu.Unlock()
				continue
			}
			done <- result{a: a}
			return
		}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			// The worker died, or broke the protocol.
			p.retire(w)
			p.warm()
			return nil, p.crashError(verb, named(), w, r.err)
		}
		for _, l := range r.a.Logs {
			p.relog.Log(ctx, l.Level, l.Msg, stringsToAny(l.Attrs)...)
		}
		p.put(w, &r.a)
		if r.a.Err != "" {
			return nil, errors.New(r.a.Err)
		}
		return &r.a, nil
	case <-ctx.Done():
		p.count(&p.counts.TimedOut)
		p.retire(w) // kills it: the reading goroutine then ends
		p.warm()
		p.log.Warn("render stopped", "app", req.AppName, "render", named(), "after", time.Since(start).Round(time.Millisecond), "reason", context.Cause(ctx))
		return nil, fmt.Errorf("%s %s did not finish in %s and was stopped: %w", verb, named(), time.Since(start).Round(time.Millisecond), context.Cause(ctx))
	}
}

// crashError explains a worker that ended during a render.
func (p *pool) crashError(verb, what string, w *worker, err error) error {
	how := w.exit()
	p.log.Warn("render worker ended", "render", what, "exit", how, "error", err, "output", w.err.head())
	if w.err.outOfMemory() {
		p.count(&p.counts.OutOfMemory)
		if verb != "rendering" {
			return fmt.Errorf("%s %s: reading the chart's values and values files needed more than the render memory budget of %s and was stopped (%s); use smaller values files, or a larger budget (strata cmp serve --helm-render-memory)",
				verb, what, formatBytes(p.budget), how)
		}
		return fmt.Errorf("rendering %s: the render needed more than its memory budget of %s and was stopped (%s); a template builds a value without bound (a repeat, a string or list doubled in a loop, tpl calling itself?), or the chart needs a larger budget (strata cmp serve --helm-render-memory)",
			what, formatBytes(p.budget), how)
	}
	p.count(&p.counts.Crashed)
	if strings.Contains(how, "signal: killed") {
		return fmt.Errorf("%s %s: the render worker was killed (%s), by the kernel's OOM killer if the container's memory limit is below the render budgets (--helm-max-concurrent × --helm-render-memory plus the caches); the server goes on with a new one", verb, what, how)
	}
	return fmt.Errorf("%s %s: the render worker ended unexpectedly (%s); the server goes on with a new one", verb, what, how)
}

func stringsToAny(s []string) []any {
	a := make([]any, len(s))
	for i, v := range s {
		a[i] = v
	}
	return a
}

// appDir names the application's directory inside its repository.
func appDir(req *params.Request) string {
	rel, err := filepath.Rel(req.RepoRoot, req.AppPath)
	if err != nil || rel == "." {
		return "the repository's root"
	}
	return filepath.ToSlash(rel)
}

func formatBytes(n int64) string {
	switch {
	case n < 0:
		return "none"
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// A crashLog takes a worker's stdout and stderr: the Go runtime's message
// when it ends (its first lines are kept) and whatever else it prints
// (dropped past a bound).
type crashLog struct {
	mu   sync.Mutex
	line []byte // the line being written
	// first is the runtime's first "fatal error:" or "panic:" line, and
	// the lines after it up to maxCrashLog bytes.
	first bytes.Buffer
}

const maxCrashLog = 8 << 10

func (c *crashLog) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(c.line) < 4096 {
				c.line = append(c.line, b[:min(len(b), 4096-len(c.line))]...)
			}
			break
		}
		if len(c.line) < 4096 {
			c.line = append(c.line, b[:min(i, 4096-len(c.line))]...)
		}
		c.addLine(string(c.line))
		c.line = c.line[:0]
		b = b[i+1:]
	}
	return n, nil
}

func (c *crashLog) addLine(l string) {
	if c.first.Len() == 0 {
		// The Go runtime's messages, and the race detector's (==PID==).
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "runtime: ") || strings.HasPrefix(l, "==") {
			c.first.WriteString(l + "\n")
		}
		return
	}
	if c.first.Len() < maxCrashLog {
		c.first.WriteString(l + "\n")
	}
}

// fatal is the runtime's first message line, "" if it printed none.
func (c *crashLog) fatal() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range strings.Split(c.first.String(), "\n") {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || strings.Contains(l, "ERROR:") {
			return l
		}
	}
	l, _, _ := strings.Cut(c.first.String(), "\n")
	return l
}

func (c *crashLog) head() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first.String()
}

// outOfMemory tells whether the runtime said it ran out of memory (an
// allocation past the address space limit) or of stack.
func (c *crashLog) outOfMemory() bool {
	c.mu.Lock()
	s := c.first.String()
	c.mu.Unlock()
	return strings.Contains(s, "out of memory") || strings.Contains(s, budgetExceeded) || strings.Contains(s, "failed to allocate") || strings.Contains(s, "cannot allocate memory") ||
		strings.Contains(s, "stack exceeds") || strings.Contains(s, "stack overflow") || strings.Contains(s, "failed to reserve")
}

var _ io.Writer = (*crashLog)(nil)
