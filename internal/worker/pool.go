package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options tune a Pool.
type Options struct {
	// Entry is the name of the Entry the workers run: the program is
	// started with it as its first argument.
	Entry string
	// Program is the binary the workers run; "" is this process's own
	// (os.Executable), whose main runs its entries first (Run).
	Program string
	// Env is the workers' environment; nil is this process's.
	Env []string
	// Slots bounds the requests served at once, one worker each; 0 is 1.
	// A worker is started for every slot when the pool is made, and kept
	// warm between requests.
	Slots int
	// Memory bounds what one request may add to its worker's memory, in
	// bytes; 0 is DefaultMemory, negative no bound. The worker sets its Go
	// memory limit to what it holds plus Memory, ends when its live heap
	// has grown by 90% of Memory, and (on Linux) sets its address space
	// limit (RLIMIT_AS) to what it has mapped plus Memory plus 128 MiB
	// (the Go heap grows by arenas of 64 MiB).
	Memory int64
	// Retain is what a worker's handler may keep between requests (its
	// caches), in bytes: a worker whose address space has grown past what
	// it had at start plus Memory plus Retain (and a margin) is replaced
	// after its request.
	Retain int64
	// Config is sent to every worker as it starts (gob-encoded): the
	// value Serve's start function takes, of the same type; nil sends
	// that type's zero value.
	Config any
	// Logger receives the pool's own lines (a worker started, ended);
	// nil discards them.
	Logger *slog.Logger
	// Relog logs again the lines the workers' handlers made; nil is
	// Logger. Its level is the least the workers send.
	Relog *slog.Logger
}

// DefaultMemory is the memory budget of one request in a worker.
const DefaultMemory = 1 << 30

// startTimeout bounds how long a new worker may take to say it is ready.
const startTimeout = 30 * time.Second

// A Pool runs requests in worker processes, one request per worker at a
// time, at most Options.Slots at once. Idle workers wait warm for the
// next request; a worker killed or dead is replaced in the background.
// Its methods may be called concurrently.
type Pool[Req, Ans any, C Counters[C]] struct {
	opts    Options
	program string
	// startErr is why no worker can start: the program was not found,
	// the configuration could not be encoded.
	startErr error
	log      *slog.Logger
	relog    *slog.Logger
	hello    hello
	slots    chan struct{}

	mu      sync.Mutex
	idle    []*proc
	closed  bool
	live    map[*proc]C // the last counters of every worker
	retired C           // the sums of the workers gone
	warming int
	// warmed is closed, and replaced, when a worker warming ends (ready
	// or not).
	warmed chan struct{}
	stats  Stats
}

// Counters are what a worker's handler reports with every answer (its
// caches' hits and sizes, say): a Pool sums those of its workers, live
// and gone.
type Counters[C any] interface {
	// Add returns the sum of both.
	Add(C) C
	// Retired returns what stays counted of a worker gone: its counters
	// without what it held (gauges such as a cache's size are zero).
	Retired() C
}

// Stats count what became of a pool's workers and requests since the
// pool was made.
type Stats struct {
	// Started counts the workers started, Live those running now (idle
	// or serving).
	Started uint64
	Live    int
	// Requests counts the requests that had a slot; TimedOut those
	// stopped when their context ended, OutOfMemory those past their
	// memory budget, Crashed those whose worker ended otherwise (or did
	// not take the request).
	Requests, TimedOut, OutOfMemory, Crashed uint64
}

// A proc is one worker process.
type proc struct {
	cmd  *exec.Cmd
	req  *os.File // the write end of the request pipe
	bw   *bufio.Writer
	enc  *gob.Encoder
	dec  *gob.Decoder
	ans  *os.File // the read end of the answer pipe
	out  *crashLog
	done chan struct{} // closed when the process has been reaped
	// wait is the process's exit status, set before done is closed.
	wait error
	// retireAt is the address space past which it is replaced after a
	// request; 0 is never.
	retireAt int64
}

// New makes a pool and starts its workers in the background.
func New[Req, Ans any, C Counters[C]](opts Options) *Pool[Req, Ans, C] {
	if opts.Slots <= 0 {
		opts.Slots = 1
	}
	if opts.Memory == 0 {
		opts.Memory = DefaultMemory
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	relog := opts.Relog
	if relog == nil {
		relog = log
	}
	level := slog.LevelError + 4
	for l := slog.LevelDebug; l <= slog.LevelError; l += 4 {
		if relog.Enabled(context.Background(), l) {
			level = l
			break
		}
	}
	p := &Pool[Req, Ans, C]{
		opts: opts, program: opts.Program, log: log, relog: relog,
		hello: hello{Memory: opts.Memory, LogLevel: level},
		slots: make(chan struct{}, opts.Slots), live: map[*proc]C{}, warmed: make(chan struct{}),
	}
	if p.program == "" {
		exe, err := os.Executable()
		if err != nil {
			p.startErr = fmt.Errorf("finding this program's binary to run as a worker: %w", err)
		}
		p.program = exe
	}
	if opts.Config != nil {
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(opts.Config); err != nil {
			p.startErr = fmt.Errorf("encoding the workers' configuration: %w", err)
		}
		p.hello.Config = buf.Bytes()
	}
	for range opts.Slots {
		p.warm()
	}
	return p
}

// Stats returns the pool's counters.
func (p *Pool[Req, Ans, C]) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Live = len(p.live)
	return s
}

// Counters sums the counters of the workers' handlers: those of the live
// workers as of their last answers, and what stays of those gone
// (Counters.Retired).
func (p *Pool[Req, Ans, C]) Counters() C {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.retired
	for _, c := range p.live {
		s = s.Add(c)
	}
	return s
}

// count adds one to a counter of p.stats.
func (p *Pool[Req, Ans, C]) count(c *uint64) {
	p.mu.Lock()
	*c++
	p.mu.Unlock()
}

// warm starts a worker in the background and keeps it idle, unless the
// idle and starting workers already fill the slots.
func (p *Pool[Req, Ans, C]) warm() {
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
		close(p.warmed)
		p.warmed = make(chan struct{})
		if err != nil {
			p.log.Warn("starting a worker", "entry", p.opts.Entry, "error", err)
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
func (p *Pool[Req, Ans, C]) start() (*proc, error) {
	if p.startErr != nil {
		return nil, p.startErr
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
	w := &proc{req: reqW, ans: ansR, out: &crashLog{}, done: make(chan struct{})}
	w.bw = bufio.NewWriter(reqW)
	w.enc, w.dec = gob.NewEncoder(w.bw), gob.NewDecoder(bufio.NewReaderSize(ansR, 64<<10))
	cmd := exec.Command(p.program, p.opts.Entry)
	cmd.Env = p.opts.Env
	// Descriptors 3 and 4 (requestFD, answerFD).
	cmd.ExtraFiles = []*os.File{reqR, ansW}
	cmd.Stdout, cmd.Stderr = w.out, w.out
	cmd.WaitDelay = time.Second
	setProcess(cmd)
	w.cmd = cmd
	err = cmd.Start()
	reqR.Close()
	ansW.Close()
	if err != nil {
		reqW.Close()
		ansR.Close()
		return nil, fmt.Errorf("starting the worker %s %s: %w", p.program, p.opts.Entry, err)
	}
	go func() {
		w.wait = cmd.Wait()
		close(w.done)
	}()
	readyc := make(chan error, 1)
	var r ready
	go func() {
		err := w.send(p.hello)
		if err == nil {
			err = w.dec.Decode(&r)
		}
		readyc <- err
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case err = <-readyc:
	case <-timer.C:
		err = fmt.Errorf("not ready after %s", startTimeout)
	}
	if err != nil {
		w.stop()
		return nil, fmt.Errorf("starting the worker %s %s: %w (%s)", p.program, p.opts.Entry, err, w.exit())
	}
	if r.AddressSpace > 0 && p.opts.Memory >= 0 {
		w.retireAt = r.AddressSpace + p.opts.Memory + max(p.opts.Retain, 0) + addressSpaceMargin
	}
	p.mu.Lock()
	var zero C
	p.live[w] = zero
	p.stats.Started++
	p.mu.Unlock()
	p.log.Debug("worker started", "entry", p.opts.Entry, "pid", cmd.Process.Pid)
	return w, nil
}

func (w *proc) send(v any) error {
	if err := w.enc.Encode(v); err != nil {
		return err
	}
	return w.bw.Flush()
}

// stop kills the worker and waits for it to be reaped.
func (w *proc) stop() {
	w.req.Close()
	kill(w.cmd.Process)
	<-w.done
	w.ans.Close()
}

// exit says how the worker ended, once done.
func (w *proc) exit() string {
	select {
	case <-w.done:
	case <-time.After(time.Second):
		return "still running"
	}
	msg := "exited"
	if w.wait != nil {
		msg = w.wait.Error()
	}
	if f := w.out.fatal(); f != "" {
		msg += ": " + f
	}
	return msg
}

// get takes an idle worker, waits for one warming, or starts one. An
// idle worker that has ended meanwhile (killed from outside) is replaced,
// not handed out.
func (p *Pool[Req, Ans, C]) get(ctx context.Context) (*proc, error) {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 && p.warming > 0 && !p.closed {
			warmed := p.warmed
			p.mu.Unlock()
			select {
			case <-warmed:
				continue
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}
		if n == 0 {
			p.mu.Unlock()
			return p.start()
		}
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		select {
		case <-w.done:
			p.log.Warn("worker ended while idle", "entry", p.opts.Entry, "exit", w.exit())
			p.retire(w)
			p.warm()
			continue
		default:
		}
		return w, nil
	}
}

// put gives a worker back after a request, or replaces it when it has
// grown past its bound. Idle workers are taken last in, first out, so
// that the worker whose caches were used last serves next; when more are
// idle than there are slots (a worker was started while others were
// warming), the one idle longest goes.
func (p *Pool[Req, Ans, C]) put(w *proc, counters C, addressSpace int64) {
	p.mu.Lock()
	p.live[w] = counters
	grown := w.retireAt > 0 && addressSpace > w.retireAt
	keep := !p.closed && !grown
	var extra *proc
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
		p.log.Debug("worker replaced: it grew past its bound", "entry", p.opts.Entry, "address_space", addressSpace, "bound", w.retireAt)
		p.warm()
	}
}

// retire stops a worker and keeps what stays of its counters.
func (p *Pool[Req, Ans, C]) retire(w *proc) {
	w.stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.live[w]; ok {
		p.retired = p.retired.Add(c.Retired())
		delete(p.live, w)
	}
}

// Close stops the idle workers; the busy ones are stopped as their
// requests end, those starting as soon as they are ready. Requests after
// it start workers of their own, which stop after them.
func (p *Pool[Req, Ans, C]) Close() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, w := range idle {
		p.retire(w)
	}
}

// Do sends a request to a worker, waiting for a free slot, and returns
// its answer. A request that outlives ctx is stopped: its worker is
// killed, and replaced, and its slot is free at once. The error is an
// *Error when the pool ended the request (see Kind), else the handler's
// error (its text).
func (p *Pool[Req, Ans, C]) Do(ctx context.Context, req Req) (Ans, error) {
	var zero Ans
	start := time.Now()
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return zero, &Error{Kind: Waiting, After: time.Since(start), Err: context.Cause(ctx)}
	}
	defer func() { <-p.slots }()
	// A worker that ended before it took the request (killed from
	// outside while idle) fails the write at once: the request goes to
	// another one.
	var (
		w   *proc
		err error
	)
	for attempt := 0; ; attempt++ {
		if w, err = p.get(ctx); err != nil {
			if ctx.Err() != nil {
				// It had its slot: its time went on its worker's start.
				p.mu.Lock()
				p.stats.Requests++
				p.stats.TimedOut++
				p.mu.Unlock()
				return zero, &Error{Kind: TimedOut, After: time.Since(start), Err: context.Cause(ctx)}
			}
			return zero, &Error{Kind: Unavailable, After: time.Since(start), Err: err}
		}
		err = w.send(request[Req]{Req: req})
		if err == nil {
			break
		}
		p.retire(w)
		p.warm()
		if attempt == 1 {
			p.count(&p.stats.Crashed)
			return zero, &Error{Kind: Unavailable, After: time.Since(start), Exit: w.exit(), Err: fmt.Errorf("the worker did not take the request: %w", err)}
		}
	}
	type result struct {
		a   answer[Ans, C]
		err error
	}
	var (
		mu   sync.Mutex
		note string
	)
	lastNote := func() string {
		mu.Lock()
		defer mu.Unlock()
		return note
	}
	done := make(chan result, 1)
	p.count(&p.stats.Requests)
	go func() {
		for {
			var a answer[Ans, C]
			if err := w.dec.Decode(&a); err != nil {
				done <- result{err: err}
				return
			}
			if !a.Done {
				mu.Lock()
				note = a.Note
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
			return zero, p.ended(w, lastNote(), time.Since(start), r.err)
		}
		for _, l := range r.a.Logs {
			p.relog.Log(ctx, l.Level, l.Msg, stringsToAny(l.Attrs)...)
		}
		p.put(w, r.a.Counters, r.a.AddressSpace)
		if r.a.Err != "" {
			return zero, errors.New(r.a.Err)
		}
		return r.a.Ans, nil
	case <-ctx.Done():
		p.count(&p.stats.TimedOut)
		p.retire(w) // kills it: the reading goroutine then ends
		p.warm()
		return zero, &Error{Kind: TimedOut, Note: lastNote(), After: time.Since(start), Err: context.Cause(ctx)}
	}
}

// ended explains a worker that ended during a request, and replaces it.
func (p *Pool[Req, Ans, C]) ended(w *proc, note string, after time.Duration, err error) error {
	// The pipe closes as the process exits: give it a moment to be
	// reaped before it is killed, lest its own exit (a panic) read as
	// a kill.
	select {
	case <-w.done:
	case <-time.After(time.Second):
	}
	p.retire(w)
	p.warm()
	how := w.exit()
	p.log.Warn("worker ended", "entry", p.opts.Entry, "note", note, "exit", how, "error", err, "output", w.out.head())
	e := &Error{Kind: Crashed, Note: note, After: after, Exit: how, Err: err}
	switch {
	case w.out.outOfMemory():
		e.Kind = OutOfMemory
		p.count(&p.stats.OutOfMemory)
	case strings.Contains(how, "signal: killed"):
		e.Kind = Killed
		p.count(&p.stats.Crashed)
	default:
		p.count(&p.stats.Crashed)
	}
	return e
}

func stringsToAny(s []string) []any {
	a := make([]any, len(s))
	for i, v := range s {
		a[i] = v
	}
	return a
}
