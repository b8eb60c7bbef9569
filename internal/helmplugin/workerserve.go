package helmplugin

import (
	"bufio"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/params"
)

// The protocol between a Plugin and its render workers: gob messages over
// two pipes, the worker's file descriptors 3 (requests, from the Plugin)
// and 4 (answers). The Plugin sends a workerConfig, the worker answers a
// workerReady; then, one at a time, a workerRequest and its answers: at
// most one workerAnswer with Chart set (the chart is loaded) and one with
// Done set (the manifests or the error). The worker's stdout and stderr
// are for its log lines and the Go runtime's messages only.
const (
	workerRequestFD = 3
	workerAnswerFD  = 4
)

// workerConfig is what a worker needs of the Plugin's Options.
type workerConfig struct {
	Limits             Limits
	CacheEntries       int
	ChartCacheEntries  int
	ChartCacheBytes    int64
	DocumentCacheBytes int64
	Dependencies       DependencyOptions
	Codecs             document.Codecs
	// Memory is what one render may add to the worker's memory (bytes);
	// negative is no bound.
	Memory   int64
	LogLevel slog.Level
}

type workerReady struct {
	// AddressSpace is the worker's virtual memory size once started
	// (0 where the platform does not tell).
	AddressSpace int64
}

type workerRequest struct {
	// Request is the params.Request in JSON: gob would turn a pointer to
	// "" into nil and an empty slice into nil.
	Request []byte
	// Announce asks for the parameters announcement instead of a render.
	Announce bool
}

type workerAnswer struct {
	// Chart is the name of the chart the worker is rendering, sent once
	// it is loaded.
	Chart string
	// Done ends the answer: Manifests, or Err.
	Done      bool
	Manifests []string
	// Announcements is the announcement (Announce requests), in JSON.
	Announcements []byte
	Err           string
	Logs          []logLine
	Stats         Stats
	AddressSpace  int64
}

// A logLine is a log record the worker's plugin made while serving a
// request, logged again by the Plugin that asked.
type logLine struct {
	Level slog.Level
	Msg   string
	Attrs []string // key, value, key, value...
}

// WorkerMain serves the renders of a Plugin whose Options.Workers name this
// program (strata runs it as the hidden command `strata cmp helm-worker`):
// it reads its configuration and the requests from file descriptor 3 and
// writes its answers to file descriptor 4, rendering one chart at a time
// in-process, until file descriptor 3 is closed. Before each render it
// bounds its own memory to what it uses plus the render's budget (the
// address space with RLIMIT_AS where the platform has it, and the Go
// memory limit): a render past it ends the process, and the Plugin reports
// it and starts another.
func WorkerMain(ctx context.Context) error {
	in, out := os.NewFile(workerRequestFD, "requests"), os.NewFile(workerAnswerFD, "answers")
	for _, f := range []*os.File{in, out} {
		if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			return errors.New("the render worker is started by `strata cmp serve --builtin helm`, with its pipes on file descriptors 3 and 4; it is not run by hand")
		}
	}
	defer in.Close()
	defer out.Close()
	return serveWorker(ctx, in, out)
}

func serveWorker(ctx context.Context, r io.Reader, w io.Writer) error {
	dec := gob.NewDecoder(bufio.NewReader(r))
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := gob.NewEncoder(bw)
	send := func(a any) error {
		if err := enc.Encode(a); err != nil {
			return err
		}
		return bw.Flush()
	}
	var cfg workerConfig
	if err := dec.Decode(&cfg); err != nil {
		return fmt.Errorf("reading the render worker's configuration: %w", err)
	}
	rec := newLogRecorder(cfg.LogLevel)
	p := New(Options{
		Limits:             cfg.Limits,
		MaxConcurrent:      1,
		Logger:             slog.New(rec),
		CacheEntries:       cfg.CacheEntries,
		ChartCacheEntries:  cfg.ChartCacheEntries,
		ChartCacheBytes:    cfg.ChartCacheBytes,
		DocumentCacheBytes: cfg.DocumentCacheBytes,
		Dependencies:       cfg.Dependencies,
		Codecs:             cfg.Codecs,
	})
	if err := send(workerReady{AddressSpace: addressSpace()}); err != nil {
		return err
	}
	for {
		var msg workerRequest
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading a request: %w", err)
		}
		var req params.Request
		if err := json.Unmarshal(msg.Request, &req); err != nil {
			return fmt.Errorf("reading a request: %w", err)
		}
		var sendErr error
		loaded := func(name string) {
			sendErr = send(workerAnswer{Chart: name})
		}
		var (
			manifests []string
			anns      []byte
			err       error
		)
		restore := limitMemory(cfg.Memory)
		if msg.Announce {
			var list []params.Announcement
			if list, err = p.announce(ctx, &req); err == nil {
				anns, err = json.Marshal(list)
			}
		} else {
			manifests, err = p.generate(ctx, &req, loaded)
		}
		restore()
		if sendErr != nil {
			return sendErr
		}
		a := workerAnswer{Done: true, Manifests: manifests, Announcements: anns, Logs: rec.take(), Stats: p.Stats(), AddressSpace: addressSpace()}
		if err != nil {
			a.Manifests, a.Announcements, a.Err = nil, nil, err.Error()
		}
		if err := send(a); err != nil {
			return err
		}
	}
}

// limitMemory bounds what the process may add to its memory from now on
// to budget bytes (none when negative), three ways:
//
//   - the Go memory limit is set to what the runtime holds now plus the
//     budget, so that the collector works harder before the render is
//     stopped for garbage it could collect;
//   - a watchdog ends the process as soon as the live heap (measured at
//     each collection, which come often near the limit) has grown by 90%
//     of the budget: from there on the collector would run almost without
//     pause and the render crawl towards the limit;
//   - the address space (RLIMIT_AS, where the platform has it) is capped
//     at what is mapped now plus the budget and a margin for the heap's
//     64 MiB arenas: a single allocation past it (or a stack grown past
//     it) fails at once, and the runtime ends the process.
//
// It returns the function that lifts all three.
func limitMemory(budget int64) (restore func()) {
	if budget < 0 {
		return func() {}
	}
	inUse := goMemory()
	debug.SetMemoryLimit(inUse + budget)
	stop := make(chan struct{})
	go watchHeap(inUse+budget*9/10, budget, stop)
	lift := func() {}
	if as := addressSpace(); as > 0 {
		if l, err := setAddressSpaceLimit(as + budget + addressSpaceMargin); err == nil {
			lift = l
		}
	}
	return func() {
		close(stop)
		lift()
		debug.SetMemoryLimit(math.MaxInt64)
	}
}

// budgetExceeded starts the line the watchdog prints before it ends the
// process; the Plugin reads it as the Go runtime's out of memory.
const budgetExceeded = "fatal error: render memory budget exceeded"

// watchHeap ends the process when the live heap passes max.
func watchHeap(max, budget int64, stop <-chan struct{}) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		metrics.Read(s)
		if s[0].Value.Kind() == metrics.KindUint64 && int64(s[0].Value.Uint64()) > max {
			fmt.Fprintf(os.Stderr, "%s: the live heap is %d bytes, past 90%% of the render's budget of %d bytes over what the worker held before\n", budgetExceeded, s[0].Value.Uint64(), budget)
			os.Exit(2)
		}
	}
}

// addressSpaceMargin is added to a render's memory budget in its address
// space limit: the Go heap grows by arenas of 64 MiB, and its metadata and
// new threads' stacks take some more.
const addressSpaceMargin = 128 << 20

// goMemory is the memory the Go runtime holds from the system and has not
// given back.
func goMemory() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// A logRecorder is a slog.Handler that keeps the records of the request
// being served, for the answer.
type logRecorder struct {
	level slog.Level
	attrs []string
	mu    *sync.Mutex
	lines *[]logLine
}

func newLogRecorder(level slog.Level) *logRecorder {
	return &logRecorder{level: level, mu: new(sync.Mutex), lines: new([]logLine)}
}

func (h *logRecorder) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	attrs := append([]string(nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, a.Key, a.Value.String())
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(*h.lines) < maxWorkerLogLines {
		*h.lines = append(*h.lines, logLine{Level: r.Level, Msg: r.Message, Attrs: attrs})
	}
	return nil
}

// maxWorkerLogLines bounds the log lines a request's answer carries.
const maxWorkerLogLines = 1000

func (h *logRecorder) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append([]string(nil), h.attrs...)
	for _, a := range as {
		c.attrs = append(c.attrs, a.Key, a.Value.String())
	}
	return &c
}

func (h *logRecorder) WithGroup(string) slog.Handler { return h }

// take returns the lines recorded since the last call.
func (h *logRecorder) take() []logLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := *h.lines
	*h.lines = nil
	return l
}
