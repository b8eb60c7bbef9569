package worker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/worker"
	"github.com/strata-dev/strata/internal/worker/workertest"
)

// entry is the worker program of this test binary: TestMain runs it when
// a pool starts the binary as a worker.
const entry = "worker-test"

func TestMain(m *testing.M) {
	if code, ok := worker.Run(context.Background(), os.Args, os.Stderr, worker.Entry{Name: entry, Main: serve}); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// config is what the pool sends its workers.
type config struct {
	Greeting string
	// Start is how long a worker takes to start.
	Start time.Duration
}

// request asks the test handler to do Op.
type request struct {
	Op   string
	Text string
	// Bytes is what op hold keeps, or op grow allocates.
	Bytes int64
}

type answer struct{ Text string }

// counters are the test handler's: Served counts its requests, Held is
// what it keeps (a gauge).
type counters struct {
	Served int
	Held   int64
}

func (c counters) Add(o counters) counters {
	return counters{Served: c.Served + o.Served, Held: c.Held + o.Held}
}

func (c counters) Retired() counters { return counters{Served: c.Served} }

var _ worker.Counters[counters] = counters{}

type handler struct {
	cfg  config
	log  *slog.Logger
	n    int
	held [][]byte
}

func serve(ctx context.Context) error {
	return worker.Serve(ctx, func(cfg config, log *slog.Logger) (worker.Handler[request, answer, counters], error) {
		time.Sleep(cfg.Start)
		return &handler{cfg: cfg, log: log}, nil
	})
}

// sink keeps what op grow allocates reachable.
var sink [][]byte

func (h *handler) Serve(_ context.Context, req request, note func(string)) (answer, error) {
	h.n++
	switch req.Op {
	case "echo":
		return answer{Text: h.cfg.Greeting + " " + req.Text}, nil
	case "fail":
		return answer{Text: "dropped"}, errors.New("the handler says no to " + req.Text)
	case "log":
		h.log.With("who", "handler").Warn("a line from the worker", "text", req.Text)
		return answer{Text: "logged"}, nil
	case "hold":
		h.held = append(h.held, bytes.Repeat([]byte{1}, int(req.Bytes)))
		return answer{Text: "held"}, nil
	case "sleep":
		// Work that does not look at its context, as a template's loop.
		note("sleeping on " + req.Text)
		for {
			time.Sleep(time.Second)
		}
	case "grow":
		note("growing " + req.Text)
		for {
			sink = append(sink, bytes.Repeat([]byte{1}, 1<<20))
		}
	case "alloc":
		note("allocating " + req.Text)
		sink = append(sink, make([]byte, req.Bytes))
		return answer{Text: fmt.Sprint(len(sink[len(sink)-1]))}, nil
	case "exit":
		note("exiting")
		os.Exit(3)
	case "panic":
		panic("the handler panics on " + req.Text)
	case "kill":
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
	}
	return answer{}, fmt.Errorf("no op %q", req.Op)
}

func (h *handler) Counters() counters {
	c := counters{Served: h.n}
	for _, b := range h.held {
		c.Held += int64(len(b))
	}
	return c
}

func newPool(t *testing.T, opts worker.Options) *worker.Pool[request, answer, counters] {
	t.Helper()
	opts.Entry = entry
	if opts.Config == nil {
		opts.Config = config{Greeting: "hello"}
	}
	p := worker.New[request, answer, counters](opts)
	t.Cleanup(p.Close)
	return p
}

// TestDo: a request goes to a worker started with the pool's
// configuration, and its answer comes back; the worker serves the next.
func TestDo(t *testing.T) {
	p := newPool(t, worker.Options{Slots: 2})
	for i := range 3 {
		got, err := p.Do(t.Context(), request{Op: "echo", Text: fmt.Sprint(i)})
		if want := (answer{Text: fmt.Sprintf("hello %d", i)}); err != nil || got != want {
			t.Fatalf("Do(echo %d) = %+v, %v; want %+v", i, got, err, want)
		}
	}
	// The requests wait for the workers warming: none is started for
	// them.
	if s := p.Stats(); s.Requests != 3 || s.Started < 1 || s.Started > 2 || s.Live != int(s.Started) || s.TimedOut+s.OutOfMemory+s.Crashed != 0 {
		t.Errorf("Stats() = %+v, want 3 requests, at most 2 workers started, all live, none stopped", s)
	}
	if c := p.Counters(); c.Served != 3 {
		t.Errorf("Counters() = %+v, want 3 served", c)
	}
}

// TestNoConfig: a pool without a configuration starts its workers with
// the zero value of theirs.
func TestNoConfig(t *testing.T) {
	p := worker.New[request, answer, counters](worker.Options{Entry: entry})
	t.Cleanup(p.Close)
	if got, err := p.Do(t.Context(), request{Op: "echo", Text: "x"}); err != nil || got.Text != " x" {
		t.Fatalf("Do(echo) = %+v, %v; want the zero greeting", got, err)
	}
}

// TestHandlerError: the handler's error comes back as its text, not as a
// pool's *Error, and its worker serves on.
func TestHandlerError(t *testing.T) {
	p := newPool(t, worker.Options{})
	got, err := p.Do(t.Context(), request{Op: "fail", Text: "x"})
	var we *worker.Error
	if err == nil || err.Error() != "the handler says no to x" || errors.As(err, &we) || got != (answer{}) {
		t.Fatalf("Do(fail) = %+v, %v; want no answer and the handler's error", got, err)
	}
	if _, err := p.Do(t.Context(), request{Op: "echo"}); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Started != 1 || s.Crashed != 0 {
		t.Errorf("Stats() = %+v, want one worker for both requests", s)
	}
}

// TestStopped: a request that runs past its context, past its memory
// budget, or whose worker ends, fails with an *Error of its Kind naming
// the last note; it is counted; the worker is replaced and the next
// request served.
func TestStopped(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  request
		// timeout bounds the request; 0 is none.
		timeout time.Duration
		kind    worker.Kind
		note    string
		// cause is errors.Is the error; exit is in Error.Exit (its
		// runtime's message, not checked for the memory kinds under the
		// race detector, whose runtime says it otherwise).
		cause error
		exit  string
		// count is the Stats counter of the kind.
		count func(worker.Stats) uint64
	}{
		{
			name: "timeout", req: request{Op: "sleep", Text: "x"}, timeout: 2 * time.Second,
			kind: worker.TimedOut, note: "sleeping on x", cause: context.DeadlineExceeded,
			count: func(s worker.Stats) uint64 { return s.TimedOut },
		},
		{
			name: "heap", req: request{Op: "grow", Text: "y"},
			kind: worker.OutOfMemory, note: "growing y", exit: "memory budget exceeded",
			count: func(s worker.Stats) uint64 { return s.OutOfMemory },
		},
		{
			// One allocation past the address space limit fails at once.
			name: "allocation", req: request{Op: "alloc", Text: "z", Bytes: 4 << 30},
			kind: worker.OutOfMemory, note: "allocating z", exit: "fatal error",
			count: func(s worker.Stats) uint64 { return s.OutOfMemory },
		},
		{
			name: "exit", req: request{Op: "exit"},
			kind: worker.Crashed, note: "exiting", exit: "exit status 3",
			count: func(s worker.Stats) uint64 { return s.Crashed },
		},
		{
			name: "panic", req: request{Op: "panic", Text: "w"},
			kind: worker.Crashed, exit: "panic: the handler panics on w",
			count: func(s worker.Stats) uint64 { return s.Crashed },
		},
		{
			name: "killed", req: request{Op: "kill"},
			kind: worker.Killed, exit: "signal: killed",
			count: func(s worker.Stats) uint64 { return s.Crashed },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "allocation" && runtime.GOOS != "linux" {
				t.Skip("the address space limit (RLIMIT_AS) is Linux's")
			}
			if tc.name == "allocation" && raceDetector {
				t.Skip("the race detector's runtime fails an allocation past the address space limit as a crash of its own (make unit runs it)")
			}
			if raceDetector && tc.kind == worker.OutOfMemory {
				tc.exit = ""
			}
			p := newPool(t, worker.Options{Memory: 64 << 20})
			// The request is to reach a worker: on a loaded machine its
			// start can take longer than the timeout case's deadline.
			waitLive(t, p, 1)
			ctx := t.Context()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			_, err := p.Do(ctx, tc.req)
			t.Logf("Do(%s): %v", tc.req.Op, err)
			var we *worker.Error
			if !errors.As(err, &we) {
				t.Fatalf("Do(%s) error = %v, want a *worker.Error", tc.req.Op, err)
			}
			if we.Kind != tc.kind || we.Note != tc.note || !strings.Contains(we.Exit, tc.exit) || tc.cause != nil && !errors.Is(err, tc.cause) {
				t.Errorf("Do(%s) = %#v, want kind %v, note %q, exit holding %q, cause %v", tc.req.Op, we, tc.kind, tc.note, tc.exit, tc.cause)
			}
			if got, err := p.Do(t.Context(), request{Op: "echo", Text: "after"}); err != nil || got.Text != "hello after" {
				t.Errorf("Do(echo) after %s = %+v, %v", tc.name, got, err)
			}
			s := p.Stats()
			if tc.count(s) != 1 || s.TimedOut+s.OutOfMemory+s.Crashed != 1 || s.Requests != 2 || s.Started != 2 || s.Live != 1 {
				t.Errorf("Stats() = %+v, want the request counted as %v, 2 requests, a second worker, one live", s, tc.kind)
			}
		})
	}
}

// TestSlots: a request waits for a free slot; one stopped frees its slot
// at once, for the next.
func TestSlots(t *testing.T) {
	p := newPool(t, worker.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	busy := make(chan error, 1)
	go func() {
		_, err := p.Do(ctx, request{Op: "sleep", Text: "the slot"})
		busy <- err
	}()
	for i := 0; p.Stats().Requests == 0; i++ {
		if i > 1500 {
			t.Fatal("the first request did not reach a worker in 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The only slot is taken: a request with a short deadline waits, and
	// fails waiting.
	short, cancelShort := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancelShort()
	_, err := p.Do(short, request{Op: "echo"})
	var we *worker.Error
	if !errors.As(err, &we) || we.Kind != worker.Waiting || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do(echo) while the slot is taken: error %v, want one waiting for a worker", err)
	}
	cancel()
	if err := <-busy; !errors.As(err, &we) || we.Kind != worker.TimedOut || !errors.Is(err, context.Canceled) {
		t.Fatalf("Do(sleep) canceled: error %v, want it stopped", err)
	}
	// Without the kill the slot stayed taken for ever, and this failed
	// waiting for it.
	long, cancelLong := context.WithTimeout(t.Context(), time.Minute)
	defer cancelLong()
	if got, err := p.Do(long, request{Op: "echo", Text: "next"}); err != nil || got.Text != "hello next" {
		t.Fatalf("Do(echo) after the stopped request = %+v, %v", got, err)
	}
	if s := p.Stats(); s.Requests != 2 || s.TimedOut != 1 {
		t.Errorf("Stats() = %+v, want 2 requests (the one that waited is not one), 1 stopped", s)
	}
}

// TestSlowStart: a request waits for the worker of its slot to start,
// within its context: past it, it fails as stopped (its time went on the
// start) and is counted so; the worker serves the next.
func TestSlowStart(t *testing.T) {
	p := newPool(t, worker.Options{Config: config{Greeting: "late", Start: 2 * time.Second}})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := p.Do(ctx, request{Op: "echo"})
	var we *worker.Error
	if !errors.As(err, &we) || we.Kind != worker.TimedOut || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do(echo) while the worker starts: error %v, want it stopped", err)
	}
	if got, err := p.Do(t.Context(), request{Op: "echo", Text: "x"}); err != nil || got.Text != "late x" {
		t.Fatalf("Do(echo) = %+v, %v; want the worker's answer once started", got, err)
	}
	if s := p.Stats(); s.Started != 1 || s.Requests != 2 || s.TimedOut != 1 {
		t.Errorf("Stats() = %+v, want one worker started (the requests waited for it), 2 requests, 1 stopped", s)
	}
}

// TestCounters: the pool sums its workers' counters; a worker gone keeps
// its counts, not what it held.
func TestCounters(t *testing.T) {
	p := newPool(t, worker.Options{Slots: 1})
	for range 2 {
		if _, err := p.Do(t.Context(), request{Op: "hold", Bytes: 1000}); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff(counters{Served: 2, Held: 2000}, p.Counters()); diff != "" {
		t.Errorf("Counters() (-want +got):\n%s", diff)
	}
	// The worker ends; a new one serves.
	if _, err := p.Do(t.Context(), request{Op: "exit"}); err == nil {
		t.Fatal("Do(exit) succeeded")
	}
	if _, err := p.Do(t.Context(), request{Op: "hold", Bytes: 10}); err != nil {
		t.Fatal(err)
	}
	// The first worker's last answer said 2 served: its third request
	// never answered.
	if diff := cmp.Diff(counters{Served: 3, Held: 10}, p.Counters()); diff != "" {
		t.Errorf("Counters() after a worker ended (-want +got):\n%s", diff)
	}
}

// TestGrownReplaced: a worker whose address space has grown past its
// start, the request budget and what it may retain is replaced after its
// request; one that has not serves on.
func TestGrownReplaced(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the address space is read from /proc")
	}
	if raceDetector {
		t.Skip("the race detector's shadow memory counts under the address space limit (make unit runs it)")
	}
	p := newPool(t, worker.Options{Memory: 64 << 20, Retain: 16 << 20})
	for range 8 {
		if _, err := p.Do(t.Context(), request{Op: "echo"}); err != nil {
			t.Fatal(err)
		}
	}
	if s := p.Stats(); s.Started != 1 {
		t.Fatalf("Stats() = %+v after 8 small requests, want one worker", s)
	}
	// 40 MiB kept per request: past 64+16+128 MiB by the sixth.
	for i := 0; p.Stats().Started == 1; i++ {
		if i == 8 {
			t.Fatalf("Stats() = %+v: the worker holding %d MiB was not replaced", p.Stats(), 40*i)
		}
		if _, err := p.Do(t.Context(), request{Op: "hold", Bytes: 40 << 20}); err != nil {
			t.Fatal(err)
		}
	}
	if s := p.Stats(); s.Crashed+s.OutOfMemory != 0 {
		t.Errorf("Stats() = %+v, want the worker replaced, no request failed", s)
	}
}

// TestLogs: the handler's log lines at or above the pool's level are
// logged again by the pool, with their attributes.
func TestLogs(t *testing.T) {
	var buf syncBuffer
	relog := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	p := newPool(t, worker.Options{Relog: relog})
	if _, err := p.Do(t.Context(), request{Op: "log", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); !strings.Contains(got, `level=WARN msg="a line from the worker" who=handler text=x`) {
		t.Errorf("the log = %q, want the handler's line", got)
	}
}

// TestKilledWhileIdle: a worker killed between requests is replaced; the
// next request does not fail for it.
func TestKilledWhileIdle(t *testing.T) {
	p := newPool(t, worker.Options{})
	if _, err := p.Do(t.Context(), request{Op: "echo"}); err != nil {
		t.Fatal(err)
	}
	pids := workertest.Children(t)
	if len(pids) == 0 {
		t.Fatal("no worker among this process's children")
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for i := 0; len(workertest.Children(t)) > 0; i++ {
		if i > 500 {
			t.Fatal("the killed worker is still there after 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := p.Do(t.Context(), request{Op: "echo"}); err != nil {
		t.Fatalf("Do(echo) after the idle worker was killed: %v", err)
	}
	if s := p.Stats(); s.Crashed != 0 || s.Started < 2 {
		t.Errorf("Stats() = %+v, want no request crashed and a second worker started", s)
	}
}

// TestClose: Close stops the idle workers.
func TestClose(t *testing.T) {
	p := newPool(t, worker.Options{Slots: 2})
	for range 2 {
		if _, err := p.Do(t.Context(), request{Op: "echo"}); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	if s := p.Stats(); s.Live != 0 {
		t.Errorf("Stats() after Close = %+v, want no worker live", s)
	}
	// A worker still starting when Close was called is stopped as soon
	// as it is ready.
	for i := 0; len(workertest.Children(t)) > 0; i++ {
		if i > 500 {
			t.Fatalf("workers %v still running 10s after Close", workertest.Children(t))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestUnavailable: a pool whose program is not a worker fails its
// requests as Unavailable, saying why.
func TestUnavailable(t *testing.T) {
	p := newPool(t, worker.Options{Program: "/bin/true"})
	_, err := p.Do(t.Context(), request{Op: "echo"})
	var we *worker.Error
	if !errors.As(err, &we) || we.Kind != worker.Unavailable || !strings.Contains(err.Error(), "starting the worker /bin/true "+entry) {
		t.Fatalf("Do with /bin/true as the worker: error %v, want one saying it did not start", err)
	}
}

// TestRun: Run runs the entry the first argument names, prints its error,
// and leaves other command lines to the program.
func TestRun(t *testing.T) {
	fail := worker.Entry{Name: "failing", Main: func(context.Context) error { return errors.New("no pipes here") }}
	ok := worker.Entry{Name: "ok", Main: func(context.Context) error { return nil }}
	for _, tc := range []struct {
		args   []string
		code   int
		ran    bool
		stderr string
	}{
		{args: []string{"strata", "failing"}, code: 1, ran: true, stderr: "failing: no pipes here\n"},
		{args: []string{"strata", "ok", "x"}, code: 0, ran: true},
		{args: []string{"strata", "cmp", "failing"}},
		{args: []string{"strata"}},
		{args: []string{"failing"}},
	} {
		var stderr bytes.Buffer
		code, ran := worker.Run(t.Context(), tc.args, &stderr, fail, ok)
		if code != tc.code || ran != tc.ran || stderr.String() != tc.stderr {
			t.Errorf("Run(%q) = %d, %v, stderr %q; want %d, %v, %q", tc.args, code, ran, stderr.String(), tc.code, tc.ran, tc.stderr)
		}
	}
}

// TestNotStarted: the entry run by hand (no pipes) refuses, saying why.
func TestNotStarted(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), exe, entry)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || string(out) != entry+": "+worker.ErrNotStarted.Error()+"\n" {
		t.Fatalf("%s %s by hand: %v, output %q; want exit 1 and %q", exe, entry, err, out, worker.ErrNotStarted)
	}
}

// waitLive waits for n workers of p to be ready.
func waitLive(t *testing.T, p *worker.Pool[request, answer, counters], n int) {
	t.Helper()
	for i := 0; p.Stats().Live < n; i++ {
		if i > 1500 {
			t.Fatalf("Stats() = %+v: %d workers not ready after 30s", p.Stats(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
