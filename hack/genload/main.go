// Command genload is a load and fault run of the ApplicationSet plugin
// generator server under its shipped memory limit (make load-generator; see
// docs/benchmarks.md): it starts `strata generator serve --config` with
// STRATA_MEMORY_LIMIT set to deploy/generator's limit (256Mi) and a
// configuration of its own — a command plugin answering 20 parameter sets,
// a static plugin, and hostile plugins: a command printing without end
// (`yes`), one printing a JSON list just under the output limit, one that
// sleeps — and for -duration runs normal clients, calling as Argo CD's
// ApplicationSet controller does, beside hostile ones: oversized bodies,
// deeply nested JSON, slowloris (headers a byte at a time), many idle
// connections, wrong tokens, and calls to the hostile plugins. A watchdog
// samples the server's RssAnon every 5 ms and kills it past the limit, as
// the kernel would. It prints what the normal clients got (the goal is no
// error), the hostile clients' outcomes, and the peak memory, and exits 1
// when a normal client saw an error or the limit was passed.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/strata-dev/strata/hack/internal/loadrun"
	"github.com/strata-dev/strata/internal/rsswatch"
)

const token = "genload-token-0123456789abcdef"

// config is the generator server's configuration; the plugins' files are
// written beside it.
const config = `apiVersion: strata.dev/v1alpha1
kind: GeneratorConfig
plugins:
  - name: normal
    token: {file: token}
    backend:
      command:
        argv: [sh, -c, 'cat >/dev/null; cat normal.json']
  - name: static
    token: {file: token}
    backend:
      static:
        files: [static.yaml]
  - name: endless
    token: {file: token}
    backend:
      command:
        argv: ["yes"]
  - name: huge
    token: {file: token}
    concurrency: %d
    backend:
      command:
        argv: [cat, huge.json]
  - name: slow
    token: {file: token}
    requestTimeout: 3s
    backend:
      command:
        argv: [sleep, "3600"]
`

// Parameter sets of the normal plugins.
const (
	normalSets = 20
	staticSets = 3
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "genload:", err)
		os.Exit(1)
	}
}

type options struct {
	strata   string
	limit    int64
	duration time.Duration
	normal   int
	idle     int
	huge     int
	quick    bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("genload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.strata, "strata", "", "the strata binary (required)")
	fs.Int64Var(&o.limit, "limit", 256<<20, "the server's memory limit, bytes (deploy/generator: 256Mi)")
	fs.DurationVar(&o.duration, "duration", 2*time.Minute, "how long to run")
	fs.IntVar(&o.normal, "normal", 8, "normal clients")
	fs.IntVar(&o.idle, "idle", 1000, "idle connections held open")
	fs.IntVar(&o.huge, "huge", 2*runtime.NumCPU(), "clients calling the huge-list plugin, and its concurrency (a command plugin's default: 2 × CPUs)")
	fs.BoolVar(&o.quick, "quick", false, "a smoke run: 15 s (past the server's 10 s header timeout), 50 idle connections (overrides -duration and -idle)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case o.strata == "":
		return errors.New("-strata is required")
	case o.normal < 1:
		return errors.New("-normal must be at least 1")
	case o.huge < 1 || o.huge > 10000:
		return errors.New("-huge must be 1 to 10000")
	case o.limit < 1:
		return errors.New("-limit must be positive")
	}
	if o.quick {
		o.duration, o.idle = 15*time.Second, 50
	}
	return load(ctx, o, stdout)
}

func load(ctx context.Context, o options, stdout io.Writer) error {
	dir, err := os.MkdirTemp("", "genload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := writeFiles(dir, o.huge); err != nil {
		return err
	}
	sock := filepath.Join(dir, "gen.sock")
	cmd := exec.Command(o.strata, "generator", "serve", "--config", filepath.Join(dir, "gen.yaml"),
		"--listen", "unix:"+sock, "--log-format", "json")
	cmd.Env = append(os.Environ(), "STRATA_MEMORY_LIMIT="+strconv.FormatInt(o.limit, 10), "GOMEMLIMIT=")
	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return err
	}
	var peak atomic.Int64
	killed := make(chan struct{})
	go rsswatch.Watch(cmd.Process.Pid, o.limit, &peak, killed)
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		}
	}
	defer stop()
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}
	if err := waitReady(dial); err != nil {
		stop()
		log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		return fmt.Errorf("%w; the server's log:\n%s", err, log)
	}

	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		normalOK   int
		normalErrs []string
		hostile    loadrun.Tally
	)
	// The normal clients share a keep-alive transport, as the controller's
	// one http.Client does; each request has the controller's 30 s timeout.
	normalClient := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: dial, MaxIdleConnsPerHost: o.normal}}
	for i := range o.normal {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				plugin, want := "normal", normalSets
				if n%2 == 1 {
					plugin, want = "static", staticSets
				}
				body := fmt.Sprintf(`{"applicationSetName":"appset-%d","input":{"parameters":{"repo":"shop","client":%d,"n":%d}}}`, i, i, n)
				status, resp, err := post(context.Background(), normalClient, plugin, token, strings.NewReader(body))
				if err == nil && status != http.StatusOK {
					err = fmt.Errorf("%s: status %d: %s", plugin, status, clip(resp))
				}
				if err == nil {
					err = checkSets(resp, want)
				}
				if err != nil && ctx.Err() != nil {
					return // the run ended while it was in flight
				}
				mu.Lock()
				if err != nil {
					normalErrs = append(normalErrs, fmt.Sprintf("%s: %v", plugin, err))
				} else {
					normalOK++
				}
				mu.Unlock()
			}
		})
	}

	hostileClient := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DialContext: dial}}
	// repeat runs a hostile request again and again and tallies its
	// outcome: the status, or what the transport said.
	repeat := func(kind, plugin, tok string, body func() io.Reader) {
		wg.Go(func() {
			for ctx.Err() == nil {
				status, _, err := post(ctx, hostileClient, plugin, tok, body())
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					hostile.Add(kind, "error: "+transportError(err))
					time.Sleep(10 * time.Millisecond)
					continue
				}
				hostile.Add(kind, strconv.Itoa(status))
			}
		})
	}
	valid := `{"applicationSetName":"hostile","input":{"parameters":{}}}`
	oversized := bytes.Repeat([]byte("x"), 8<<20)
	oversizedBody := append([]byte(`{"applicationSetName":"big","input":{"parameters":{"blob":"`), oversized...)
	repeat("oversized body", "normal", token, func() io.Reader { return bytes.NewReader(oversizedBody) })
	// Without a length: chunked.
	repeat("oversized chunked", "normal", token, func() io.Reader { return io.MultiReader(bytes.NewReader(oversizedBody)) })
	deep := deepBody(1 << 20)
	repeat("deeply nested JSON", "normal", token, func() io.Reader { return bytes.NewReader(deep) })
	repeat("wrong token", "normal", "not-the-token", func() io.Reader { return strings.NewReader(valid) })
	repeat("no token", "normal", "", func() io.Reader { return strings.NewReader(valid) })
	for range 2 {
		repeat("endless output", "endless", token, func() io.Reader { return strings.NewReader(valid) })
	}
	for range o.huge {
		repeat("huge list", "huge", token, func() io.Reader { return strings.NewReader(valid) })
	}
	for range 8 {
		repeat("slow command", "slow", token, func() io.Reader { return strings.NewReader(valid) })
	}
	var heldMax atomic.Int64
	for range 20 {
		wg.Go(func() {
			for ctx.Err() == nil {
				held, outcome := slowloris(ctx, dial)
				if ctx.Err() != nil {
					return
				}
				heldMax.Store(max(heldMax.Load(), int64(held)))
				hostile.Add("slowloris", outcome)
			}
		})
	}
	for range o.idle {
		wg.Go(func() {
			for ctx.Err() == nil {
				outcome := idleConn(ctx, dial)
				if ctx.Err() != nil {
					return
				}
				hostile.Add("idle connection", outcome)
			}
		})
	}
	start := time.Now()
	wg.Wait()
	elapsed := time.Since(start)
	select {
	case <-killed:
	default:
		// The server still answers after the run (unless it was killed).
		status, resp, err := post(context.Background(), normalClient, "normal", token, strings.NewReader(`{"applicationSetName":"after","input":{"parameters":{}}}`))
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("status %d: %s", status, clip(resp))
		}
		if err != nil {
			normalErrs = append(normalErrs, fmt.Sprintf("normal, after the run: %v", err))
		} else {
			normalOK++
		}
	}
	stop()

	fmt.Fprintf(stdout, "server: strata generator serve --config, STRATA_MEMORY_LIMIT=%d (%d MiB), %s\n", o.limit, o.limit>>20, elapsed.Round(time.Second))
	fmt.Fprintf(stdout, "normal clients: %d (command plugin, %d sets; static plugin, %d sets), requests ok: %d, errors: %d\n",
		o.normal, normalSets, staticSets, normalOK, len(normalErrs))
	for i, e := range normalErrs {
		if i == 5 {
			fmt.Fprintf(stdout, "  ... %d more\n", len(normalErrs)-5)
			break
		}
		fmt.Fprintf(stdout, "  %s\n", e)
	}
	fmt.Fprintf(stdout, "hostile clients, outcomes (status or transport error) × count:\n%s", hostile.String())
	fmt.Fprintf(stdout, "huge list: %d clients, the plugin's concurrency %d\n", o.huge, o.huge)
	fmt.Fprintf(stdout, "slowloris: the longest a connection was held: %s; idle connections: %d held open\n",
		time.Duration(heldMax.Load()).Round(100*time.Millisecond), o.idle)
	fmt.Fprintf(stdout, "peak RssAnon: %d MiB of %d MiB\n", peak.Load()>>20, o.limit>>20)
	select {
	case <-killed:
		return errors.New("the server passed its memory limit and was killed")
	default:
	}
	if len(normalErrs) > 0 {
		return fmt.Errorf("%d errors seen by normal clients", len(normalErrs))
	}
	return nil
}

// writeFiles writes the configuration and the plugins' files into dir.
func writeFiles(dir string, huge int) error {
	var normal []map[string]any
	for i := range normalSets {
		normal = append(normal, map[string]any{"name": fmt.Sprintf("app-%d", i), "server": "https://kubernetes.default.svc", "replicas": i % 4})
	}
	normalJSON, err := json.Marshal(normal)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"gen.yaml":    fmt.Appendf(nil, config, huge),
		"token":       []byte(token + "\n"),
		"normal.json": normalJSON,
		"static.yaml": []byte("- region: eu-west-1\n  replicas: 3\n- region: eu-central-1\n  replicas: 2\n- region: us-east-1\n  replicas: 3\n"),
		"huge.json":   hugeList(15 << 20),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// hugeList is a JSON list of small parameter sets, about size bytes: valid
// output, just under the default maxOutputBytes (16 MiB).
func hugeList(size int) []byte {
	var b bytes.Buffer
	b.WriteString("[")
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"name":"cluster-%d","n":%d}`, i, i)
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// deepBody is a request whose parameters nest lists about size bytes deep.
func deepBody(size int) []byte {
	depth := (size - 100) / 2
	var b bytes.Buffer
	b.WriteString(`{"applicationSetName":"deep","input":{"parameters":{"x":`)
	b.Write(bytes.Repeat([]byte("["), depth))
	b.Write(bytes.Repeat([]byte("]"), depth))
	b.WriteString("}}}")
	return b.Bytes()
}

func post(ctx context.Context, c *http.Client, plugin, tok string, body io.Reader) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://generator/"+plugin+"/api/v1/getparams.execute", body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("reading the response: %w", err)
	}
	return resp.StatusCode, data, nil
}

// checkSets checks an answer holds want parameter sets.
func checkSets(body []byte, want int) error {
	var resp struct {
		Output struct {
			Parameters []map[string]any `json:"parameters"`
		} `json:"output"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return fmt.Errorf("decoding the answer: %v: %s", err, clip(body))
	}
	if got := len(resp.Output.Parameters); got != want {
		return fmt.Errorf("%d parameter sets, want %d", got, want)
	}
	return nil
}

// transportError names a client-side error briefly, for the tally.
func transportError(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	}
	return clip([]byte(err.Error()))
}

// slowloris sends a request's headers a byte every 100 ms and returns how
// long the server kept the connection, and what ended it.
func slowloris(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error)) (time.Duration, string) {
	c, err := dial(ctx, "", "")
	if err != nil {
		return 0, "dial: " + transportError(err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	start := time.Now()
	done := make(chan string, 1)
	go func() {
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			done <- "closed by the server"
			return
		}
		done <- "answered " + strings.TrimSpace(strings.TrimPrefix(line, "HTTP/1.1 "))
	}()
	header := "POST /normal/api/v1/getparams.execute HTTP/1.1\r\nHost: generator\r\nAuthorization: Bearer " + token +
		"\r\nContent-Type: application/json\r\n" + strings.Repeat("X-Padding: slowly\r\n", 1000)
	for i := 0; ; i++ {
		select {
		case outcome := <-done:
			return time.Since(start), outcome
		case <-time.After(100 * time.Millisecond):
		}
		if i < len(header) {
			if _, err := c.Write([]byte{header[i]}); err != nil {
				<-done
				return time.Since(start), "closed by the server"
			}
		}
	}
}

// idleConn opens a connection, sends nothing, and returns what ended it.
func idleConn(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error)) string {
	c, err := dial(ctx, "", "")
	if err != nil {
		time.Sleep(100 * time.Millisecond)
		return "dial: " + transportError(err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if _, err := c.Read(make([]byte, 1)); err != nil {
		return "closed by the server"
	}
	return "server wrote first"
}

func waitReady(dial func(context.Context, string, string) (net.Conn, error)) error {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DialContext: dial}}
	for range 300 {
		if resp, err := c.Get("http://generator/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("the server was not ready within 30 s")
}

func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
