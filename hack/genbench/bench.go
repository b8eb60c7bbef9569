package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/strata-dev/strata/internal/generator"
)

//go:embed plugin.py
var pluginPy []byte

// script is the command backend: as cheap as a command can be, like true,
// printing the one parameter set.
const script = "#!/bin/sh\nprintf '[{\"a\":\"b\"}]'\n"

const token = "bench-token-0123456789"

// body is what every client sends, as the controller encodes it.
const body = `{"applicationSetName":"bench","input":{"parameters":{"branch":"main","repo":"example"}}}`

// A Bench runs the three servers and measures them.
type Bench struct {
	Concurrency []int
	Duration    time.Duration
	Warmup      time.Duration
	Timeout     time.Duration
	Count       int // runs per row; the table shows their median
	Python      string
	// ServerCPUs, when positive, runs strata's server with GOMAXPROCS set
	// to it: what Go 1.25+ sets by itself in a container with that CPU
	// limit. On a small machine it keeps the server's threads from
	// fighting the load client for the same cores.
	ServerCPUs int
	Targets    []string // of targetOff, targetOn, targetPython; all when empty
	Profiles   Profiles // of strata's server
	Log        io.Writer
}

// Profiles name the files strata's server writes its profiles to when it
// stops; an empty name writes none.
type Profiles struct {
	CPU   string // pprof CPU profile
	Mem   string // pprof allocation profile
	Trace string // runtime execution trace
}

// args returns the profiles as the server's flags, with absolute paths (the
// server runs in the bench's temporary directory).
func (p Profiles) args() ([]string, error) {
	var out []string
	for _, f := range []struct{ flag, path string }{{"-cpuprofile", p.CPU}, {"-memprofile", p.Mem}, {"-trace", p.Trace}} {
		if f.path == "" {
			continue
		}
		abs, err := filepath.Abs(f.path)
		if err != nil {
			return nil, err
		}
		out = append(out, f.flag, abs)
	}
	return out, nil
}

// A Row is one server at one concurrency.
type Row struct {
	Target      string
	Clients     int
	Requests    int
	Errors      int
	FirstError  string
	Elapsed     time.Duration
	P50, P99    time.Duration
	RequestsSec float64
}

// A Report holds the rows, grouped by concurrency.
type Report struct {
	Rows     []Row
	Duration time.Duration
	Count    int
	CPUs     int
}

const (
	targetOff    = "strata, command, cache off"
	targetOn     = "strata, command, cache on"
	targetPython = "python http.server"
)

func (b *Bench) logf(format string, args ...any) {
	fmt.Fprintf(b.Log, format+"\n", args...)
}

// Run starts the servers, measures every row and stops the servers.
func (b *Bench) Run(ctx context.Context) (*Report, error) {
	dir, err := os.MkdirTemp("", "genbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	files := map[string]string{"token": token + "\n", "params.sh": script, "plugin.py": string(pluginPy)}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o755); err != nil {
			return nil, err
		}
	}
	strataPort, err := freePort()
	if err != nil {
		return nil, err
	}
	pyPort, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`apiVersion: strata.dev/v1alpha1
kind: GeneratorConfig
listen: 127.0.0.1:%d
plugins:
- name: nocache
  token: {file: token}
  cache: {ttl: 0s, collapse: false}
  maxQueue: 1024
  backend: {command: {argv: [./params.sh]}}
- name: cached
  token: {file: token}
  cache: {ttl: 1h}
  maxQueue: 1024
  backend: {command: {argv: [./params.sh]}}
`, strataPort)
	if err := os.WriteFile(filepath.Join(dir, "gen.yaml"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	profArgs, err := b.Profiles.args()
	if err != nil {
		return nil, err
	}
	serveArgs := append([]string{"-serve", "gen.yaml"}, profArgs...)
	var env []string
	if b.ServerCPUs > 0 {
		env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(b.ServerCPUs))
	}
	strata, err := start(ctx, dir, os.Stderr, env, self, serveArgs...)
	if err != nil {
		return nil, err
	}
	defer strata.stop()
	// http.server prints a traceback for every client that hung up on it
	// (a timed-out request): kept in a file, shown if it does not start.
	pyLog, err := os.Create(filepath.Join(dir, "python.log"))
	if err != nil {
		return nil, err
	}
	defer pyLog.Close()
	python, err := start(ctx, dir, pyLog, nil, b.Python, "plugin.py", strconv.Itoa(pyPort), "token")
	if err != nil {
		return nil, fmt.Errorf("starting the Python plugin: %w", err)
	}
	defer python.stop()

	var targets []struct{ name, url string }
	for _, t := range []struct{ name, url string }{
		{targetOff, fmt.Sprintf("http://127.0.0.1:%d/nocache%s", strataPort, generator.APIPath)},
		{targetOn, fmt.Sprintf("http://127.0.0.1:%d/cached%s", strataPort, generator.APIPath)},
		{targetPython, fmt.Sprintf("http://127.0.0.1:%d%s", pyPort, generator.APIPath)},
	} {
		if len(b.Targets) == 0 || slices.Contains(b.Targets, t.name) {
			targets = append(targets, t)
		}
	}
	for _, t := range targets {
		if err := waitReady(ctx, t.url); err != nil {
			if t.name == targetPython {
				log, _ := os.ReadFile(pyLog.Name())
				return nil, fmt.Errorf("%s: %w\n%s", t.name, err, log)
			}
			return nil, fmt.Errorf("%s: %w", t.name, err)
		}
	}
	rep := &Report{Duration: b.Duration, CPUs: numCPU(), Count: max(b.Count, 1)}
	for _, n := range b.Concurrency {
		runs := map[string][]Row{}
		// The servers take turns, run after run, so that all see the same
		// machine load; each row is the median of its runs.
		for i := range rep.Count {
			for _, t := range targets {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				b.load(ctx, t.url, n, b.Warmup)
				row := b.load(ctx, t.url, n, b.Duration)
				row.Target = t.name
				b.logf("%-28s %3d clients, run %d: %8.0f req/s  p50 %-10s p99 %-10s errors %d %s",
					t.name, n, i+1, row.RequestsSec, fmtDur(row.P50), fmtDur(row.P99), row.Errors, row.FirstError)
				runs[t.name] = append(runs[t.name], row)
			}
		}
		for _, t := range targets {
			rep.Rows = append(rep.Rows, median(runs[t.name]))
		}
	}
	return rep, nil
}

// median combines the runs of one row: the median requests per second, p50
// and p99, and all the errors.
func median(runs []Row) Row {
	out := runs[0]
	mid := func(f func(Row) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	out.RequestsSec = mid(func(r Row) float64 { return r.RequestsSec })
	out.P50 = time.Duration(mid(func(r Row) float64 { return float64(r.P50) }))
	out.P99 = time.Duration(mid(func(r Row) float64 { return float64(r.P99) }))
	out.Errors, out.Requests, out.FirstError = 0, 0, ""
	for _, r := range runs {
		out.Errors += r.Errors
		out.Requests += r.Requests
		if out.FirstError == "" {
			out.FirstError = r.FirstError
		}
	}
	return out
}

// load sends requests to url from n clients for d.
func (b *Bench) load(ctx context.Context, url string, n int, d time.Duration) Row {
	header := map[string]string{
		"Content-Type":  "application/json",
		"Accept":        "application/json",
		"User-Agent":    generator.UserAgent,
		"Authorization": "Bearer " + token,
	}
	type result struct {
		lat      []time.Duration
		errors   int
		firstErr string
	}
	results := make([]result, n)
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[i]
			fail := func(msg string) {
				r.errors++
				if r.firstErr == "" {
					r.firstErr = msg
				}
			}
			c, err := newRawClient(url, header, body, b.Timeout)
			if err != nil {
				fail(err.Error())
				return
			}
			defer c.close()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t0 := time.Now()
				status, data, err := c.do()
				lat := time.Since(t0)
				switch {
				case err != nil:
					fail(err.Error())
				case status != 200:
					fail(fmt.Sprintf("status %d: %s", status, bytes.TrimSpace(data)))
				case !validAnswer(data):
					fail(fmt.Sprintf("unexpected answer %s", data))
				default:
					r.lat = append(r.lat, lat)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	row := Row{Clients: n, Elapsed: elapsed}
	var all []time.Duration
	for _, r := range results {
		all = append(all, r.lat...)
		row.Errors += r.errors
		if row.FirstError == "" {
			row.FirstError = r.firstErr
		}
	}
	slices.Sort(all)
	row.Requests = len(all)
	row.RequestsSec = float64(len(all)) / elapsed.Seconds()
	row.P50, row.P99 = percentile(all, 0.50), percentile(all, 0.99)
	return row
}

// validAnswer reports whether data is the expected response: one
// parameter set {"a": "b"}. Both servers' encodings are accepted.
func validAnswer(data []byte) bool {
	compact := bytes.ReplaceAll(data, []byte(" "), nil)
	return bytes.Contains(compact, []byte(`{"output":{"parameters":[{"a":"b"}]}}`))
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Markdown renders the table and the ratios. The target (issue 6) is
// judged at the highest concurrency: strata with its cache at least 5× the
// Python plugin's requests per second, p99 under 5 ms, no errors.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Median of %d runs of %s per row, %d CPUs, the load client on the same machine. "+
		"Latencies are those of successful requests; a request that fails or takes more than the timeout is an error.\n\n",
		max(r.Count, 1), fmtSeconds(r.Duration), r.CPUs)
	b.WriteString("| server | clients | requests/s | p50 | p99 | errors |\n|---|---:|---:|---:|---:|---:|\n")
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "| %s | %d | %.0f | %s | %s | %d |\n", row.Target, row.Clients, row.RequestsSec, fmtDur(row.P50), fmtDur(row.P99), row.Errors)
	}
	b.WriteString("\n| clients | cache on vs python, requests/s | cache off vs python |\n|---:|---:|---:|\n")
	byKey := map[string]Row{}
	var levels []int
	for _, row := range r.Rows {
		byKey[fmt.Sprint(row.Target, row.Clients)] = row
		if !slices.Contains(levels, row.Clients) {
			levels = append(levels, row.Clients)
		}
	}
	for _, n := range levels {
		on, off, py := byKey[fmt.Sprint(targetOn, n)], byKey[fmt.Sprint(targetOff, n)], byKey[fmt.Sprint(targetPython, n)]
		fmt.Fprintf(&b, "| %d | %s | %s |\n", n, ratio(on, py), ratio(off, py))
	}
	if len(levels) > 0 {
		n := slices.Max(levels)
		on, py := byKey[fmt.Sprint(targetOn, n)], byKey[fmt.Sprint(targetPython, n)]
		verdict := "met"
		switch {
		case py.RequestsSec > 0 && on.RequestsSec < 5*py.RequestsSec:
			verdict = "missed: under 5×"
		case on.P99 >= 5*time.Millisecond:
			verdict = "missed: p99 " + fmtDur(on.P99)
		case on.Errors > 0:
			verdict = fmt.Sprintf("missed: %d errors", on.Errors)
		}
		fmt.Fprintf(&b, "\nTarget at %d clients (cache on ≥ 5× python requests/s, p99 < 5 ms, no errors): %s.\n", n, verdict)
	}
	for _, row := range r.Rows {
		if row.Errors > 0 {
			fmt.Fprintf(&b, "\n%s, %d clients, first error: %s\n", row.Target, row.Clients, row.FirstError)
		}
	}
	return b.String()
}

func ratio(a, base Row) string {
	if base.RequestsSec == 0 {
		return "∞"
	}
	return fmt.Sprintf("%.1f×", a.RequestsSec/base.RequestsSec)
}

func fmtSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'g', -1, 64) + " s"
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}

// proc is a server started by the bench.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// start runs a server; a nil env is the bench's own environment.
func start(ctx context.Context, dir string, stderr io.Writer, env []string, name string, args ...string) (*proc, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stderr = stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	return p, nil
}

func (p *proc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady posts until the server answers 200, for up to 30 s.
func waitReady(ctx context.Context, url string) error {
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		last = err
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not ready after 30 s: %w", last)
}

// serveStrata runs strata's server as `strata generator serve` does.
func serveStrata(ctx context.Context, path string, prof Profiles, stderr io.Writer) (err error) {
	if prof.CPU != "" {
		f, err := os.Create(prof.CPU)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if prof.Trace != "" {
		f, err := os.Create(prof.Trace)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	if prof.Mem != "" {
		runtime.MemProfileRate = 4096
		defer func() {
			if werr := writeHeapProfile(prof.Mem); err == nil {
				err = werr
			}
		}()
	}
	cfg, err := generator.LoadConfig(path)
	if err != nil {
		return err
	}
	srv, err := generator.New(cfg, slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	if err := srv.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
