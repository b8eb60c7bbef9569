package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
)

// The worker's ends of the pipes.
const (
	requestFD = 3
	answerFD  = 4
)

// hello is the pool's first message: its settings.
type hello struct {
	// Memory is what one request may add to the worker's memory (bytes);
	// negative is no bound.
	Memory int64
	// LogLevel is the least level of the log lines worth sending back.
	LogLevel slog.Level
	// Config is Options.Config, gob-encoded on its own; empty when nil.
	Config []byte
}

// ready answers hello and the configuration.
type ready struct {
	// AddressSpace is the worker's virtual memory size once started (0
	// where the platform does not tell).
	AddressSpace int64
}

// request carries one request.
type request[Req any] struct{ Req Req }

// answer is a note (Done false) or a request's final answer.
type answer[Ans, C any] struct {
	Note string
	Done bool
	Ans  Ans
	// Err is the handler's error.
	Err          string
	Logs         []logLine
	Counters     C
	AddressSpace int64
}

// A logLine is a log record a handler made while serving a request,
// logged again by the pool.
type logLine struct {
	Level slog.Level
	Msg   string
	Attrs []string // key, value, key, value...
}

// A Handler serves the requests of one worker, one at a time.
type Handler[Req, Ans, C any] interface {
	// Serve answers a request. It may call note, any number of times, to
	// tell the pool what the request is about: the last note is named in
	// the pool's error if the worker is stopped (Error.Note).
	Serve(ctx context.Context, req Req, note func(string)) (Ans, error)
	// Counters are the handler's counters, sent with every answer: the
	// pool sums those of its workers (Pool.Counters).
	Counters() C
}

// Serve is a worker's main loop, which an Entry's Main calls: it reads
// the pool's settings and the configuration from file descriptor 3, makes
// its handler with start (log collects the handler's lines, sent back
// with each answer), and serves one request at a time, each under the
// pool's memory budget, until the pool closes the pipe. In a process the
// pool did not start it returns ErrNotStarted.
func Serve[Cfg, Req, Ans, C any](ctx context.Context, start func(cfg Cfg, log *slog.Logger) (Handler[Req, Ans, C], error)) error {
	in, out := os.NewFile(requestFD, "requests"), os.NewFile(answerFD, "answers")
	for _, f := range []*os.File{in, out} {
		if f == nil {
			return ErrNotStarted
		}
		if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			return ErrNotStarted
		}
	}
	defer in.Close()
	defer out.Close()
	return serve(ctx, in, out, start)
}

func serve[Cfg, Req, Ans, C any](ctx context.Context, r io.Reader, w io.Writer, start func(Cfg, *slog.Logger) (Handler[Req, Ans, C], error)) error {
	dec := gob.NewDecoder(bufio.NewReader(r))
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := gob.NewEncoder(bw)
	send := func(a any) error {
		if err := enc.Encode(a); err != nil {
			return err
		}
		return bw.Flush()
	}
	var h hello
	if err := dec.Decode(&h); err != nil {
		return fmt.Errorf("reading the pool's settings: %w", err)
	}
	var cfg Cfg
	if len(h.Config) > 0 {
		if err := gob.NewDecoder(bytes.NewReader(h.Config)).Decode(&cfg); err != nil {
			return fmt.Errorf("reading the worker's configuration: %w", err)
		}
	}
	rec := newLogRecorder(h.LogLevel)
	handler, err := start(cfg, slog.New(rec))
	if err != nil {
		return err
	}
	if err := send(ready{AddressSpace: addressSpace()}); err != nil {
		return err
	}
	for {
		var msg request[Req]
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading a request: %w", err)
		}
		// A note may come from another goroutine of the handler's, even
		// after Serve has returned: it is then dropped.
		var (
			mu      sync.Mutex
			served  bool
			sendErr error
		)
		note := func(s string) {
			mu.Lock()
			defer mu.Unlock()
			if !served && sendErr == nil {
				sendErr = send(answer[Ans, C]{Note: s})
			}
		}
		restore := limitMemory(h.Memory)
		ans, err := handler.Serve(ctx, msg.Req, note)
		restore()
		mu.Lock()
		served = true
		mu.Unlock()
		if sendErr != nil {
			return sendErr
		}
		a := answer[Ans, C]{Done: true, Ans: ans, Logs: rec.take(), Counters: handler.Counters(), AddressSpace: addressSpace()}
		if err != nil {
			var zero Ans
			a.Ans, a.Err = zero, err.Error()
		}
		if err := send(a); err != nil {
			return err
		}
	}
}

// A logRecorder is a slog.Handler that keeps the records of the request
// being served, for its answer.
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
	if len(*h.lines) < maxLogLines {
		*h.lines = append(*h.lines, logLine{Level: r.Level, Msg: r.Message, Attrs: attrs})
	}
	return nil
}

// maxLogLines bounds the log lines a request's answer carries.
const maxLogLines = 1000

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

var _ slog.Handler = (*logRecorder)(nil)
