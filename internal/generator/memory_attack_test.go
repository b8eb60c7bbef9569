package generator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/generator"
	"github.com/strata-dev/strata/internal/memlimit"
	"github.com/strata-dev/strata/internal/rsswatch"
)

// childConfigEnv makes the test binary a generator server serving the
// configuration it names (runServerChild), for the memory attack test,
// which measures the server's memory as a process of its own.
const childConfigEnv = "STRATA_TEST_GENERATOR_CONFIG"

func TestMain(m *testing.M) {
	if cfg := os.Getenv(childConfigEnv); cfg != "" {
		os.Exit(runServerChild(cfg))
	}
	os.Exit(m.Run())
}

// runServerChild serves the configuration at path as generator serve
// does: the memory limit from STRATA_MEMORY_LIMIT, the Go memory limit and
// the memory budget derived from it.
func runServerChild(path string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg, err := generator.LoadConfig(path)
	if err != nil {
		log.Error("config", "err", err)
		return 1
	}
	srv, err := generator.New(cfg, log)
	if err != nil {
		log.Error("server", "err", err)
		return 1
	}
	l, err := memlimit.Setup(log, "generator", nil)
	if err != nil {
		log.Error("memory limit", "err", err)
		return 1
	}
	srv.SetMemoryBudget(l.Budget(generator.DefaultMemoryReserve), "--memory-budget")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := srv.Run(ctx); err != nil {
		log.Error("serve", "err", err)
		return 1
	}
	return 0
}

// attackConfig: a normal plugin printing 20 sets, a hostile one printing
// a 15 MB list of sets (under the default maxOutputBytes) with room for
// many calls at once, and one printing without end under a maxOutputBytes
// larger than the whole budget.
const attackConfig = `apiVersion: strata.dev/v1alpha1
kind: GeneratorConfig
listen: unix:%s
plugins:
  - name: normal
    allowUnauthenticated: true
    backend:
      command:
        argv: [sh, -c, 'cat >/dev/null; cat normal.json']
  - name: huge
    allowUnauthenticated: true
    concurrency: 64
    requestTimeout: 20s
    backend:
      command:
        argv: [cat, huge.json]
  - name: endless
    allowUnauthenticated: true
    requestTimeout: 20s
    backend:
      command:
        argv: ["yes", "{}"]
        maxOutputBytes: 1073741824
`

// TestAttackMemoryBudget calls a generator server, under deploy/generator's
// memory limit (256Mi), with many concurrent requests whose outputs
// together need several times its memory (12 clients at once, each asking
// twice for a 15 MB list, which costs some three times its size until it
// is answered) and with an output larger than the whole budget, while
// normal clients call a small plugin. The server must stay under its
// limit (a watchdog kills it past it, as the kernel would; without the
// budget it is killed), every answer must be the plugin's sets, the
// budget's named refusal (503, naming --memory-budget) or, for the large
// ones, their requestTimeout, and the normal clients must get their sets.
func TestAttackMemoryBudget(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc to measure the server's memory")
	}
	if raceDetector {
		t.Skip("measures the server's memory, which the race detector multiplies: make test runs it again without -race (go test -run '^TestAttack' ./internal/generator)")
	}
	const limit = 256 << 20
	dir, err := os.MkdirTemp("", "genmem") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "gen.sock")
	var normal []map[string]any
	for i := range 20 {
		normal = append(normal, map[string]any{"name": fmt.Sprintf("app-%d", i), "replicas": i % 4})
	}
	normalJSON, _ := json.Marshal(normal)
	huge := hugeSets(15 << 20)
	writeFiles(t, dir, map[string]string{
		"gen.yaml":    fmt.Sprintf(attackConfig, sock),
		"normal.json": string(normalJSON),
		"huge.json":   string(huge.data),
	})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childConfigEnv+"="+filepath.Join(dir, "gen.yaml"), memlimit.Env+"="+strconv.Itoa(limit), "GOMEMLIMIT=")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var peak atomic.Int64
	killed := make(chan struct{})
	watched := make(chan struct{})
	go func() { defer close(watched); rsswatch.Watch(cmd.Process.Pid, limit, &peak, killed) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		<-watched
	})
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		MaxIdleConnsPerHost: 64,
	}}
	call := func(plugin string, n int) (int, []byte, error) {
		body := fmt.Sprintf(`{"applicationSetName":"attack","input":{"parameters":{"n":%d}}}`, n)
		resp, err := client.Post("http://gen/"+plugin+generator.APIPath, "application/json", strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return resp.StatusCode, data, err
	}
	if err := waitServing(client, killed); err != nil {
		t.Fatalf("%v; the server's log:\n%s", err, stderr.String())
	}
	wantHuge, err := generator.EncodeOutput(huge.data)
	if err != nil {
		t.Fatal(err)
	}
	// refused reports whether an answer is the budget's named refusal.
	refused := func(code int, body []byte) bool {
		return code == http.StatusServiceUnavailable && bytes.Contains(body, []byte("--memory-budget")) &&
			bytes.Contains(body, []byte("generator server's"))
	}
	var (
		wg                     sync.WaitGroup
		hugeOK, hugeRefused    atomic.Int64
		hugeTimedOut           atomic.Int64
		normalOK, normalRefuse atomic.Int64
		hostileDone            = make(chan struct{})
	)
	for i := range 12 {
		wg.Go(func() {
			for n := range 2 {
				code, body, err := call("huge", i*10+n)
				switch {
				case err != nil:
					t.Errorf("huge: %v", err)
				case code == http.StatusOK && bytes.Equal(body, wantHuge):
					hugeOK.Add(1)
				case refused(code, body):
					hugeRefused.Add(1)
				case code == http.StatusGatewayTimeout && bytes.Contains(body, []byte("timed out")):
					// Its 20 s ran out while it was read, on a busy
					// machine, not while it waited for the budget.
					hugeTimedOut.Add(1)
				default:
					t.Errorf("huge: status %d, %d bytes: %.300s; want the %d sets or the budget's refusal", code, len(body), body, huge.count)
				}
			}
		})
	}
	for i := range 2 {
		wg.Go(func() {
			code, body, err := call("endless", i)
			if err != nil || !refused(code, body) || !bytes.Contains(body, []byte("printed")) {
				t.Errorf("endless: status %d, %v: %.500s; want 503 naming --memory-budget", code, err, body)
			}
		})
	}
	var normals sync.WaitGroup
	for i := range 4 {
		normals.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-hostileDone:
					if n > 0 {
						return
					}
				default:
				}
				code, body, err := call("normal", 1000+i*100000+n)
				var resp struct {
					Output struct {
						Parameters []map[string]any `json:"parameters"`
					} `json:"output"`
				}
				switch {
				case err != nil:
					t.Errorf("normal: %v", err)
					return
				case code == http.StatusOK && json.Unmarshal(body, &resp) == nil && len(resp.Output.Parameters) == 20:
					normalOK.Add(1)
				case refused(code, body):
					normalRefuse.Add(1)
				default:
					t.Errorf("normal: status %d: %.300s; want 20 sets or the budget's refusal", code, body)
					return
				}
			}
		})
	}
	wg.Wait()
	close(hostileDone)
	normals.Wait()
	select {
	case <-killed:
		t.Fatalf("the server passed its memory limit of %d MiB (RssAnon %d MiB) and was killed; its log:\n%s", limit>>20, peak.Load()>>20, stderr.String())
	default:
	}
	t.Logf("peak RssAnon %d MiB of %d MiB; huge: %d answered, %d refused, %d timed out; normal: %d answered, %d refused",
		peak.Load()>>20, limit>>20, hugeOK.Load(), hugeRefused.Load(), hugeTimedOut.Load(), normalOK.Load(), normalRefuse.Load())
	if hugeOK.Load() == 0 {
		t.Error("no huge list was answered: the budget refused everything")
	}
	if normalOK.Load() == 0 {
		t.Error("no normal request was answered")
	}
	// The metrics say what the budget did.
	resp, err := client.Get("http://gen/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	l, err := memlimit.Detector{Environ: []string{memlimit.Env + "=" + strconv.Itoa(limit)}}.Detect()
	if err != nil {
		t.Fatal(err)
	}
	budget := l.Budget(generator.DefaultMemoryReserve)
	for _, want := range []string{
		fmt.Sprintf("strata_generator_memory_budget_bytes %s", strconv.FormatFloat(float64(budget), 'g', -1, 64)),
		"strata_generator_memory_budget_held_bytes 0",
	} {
		if !bytes.Contains(metrics, []byte(want+"\n")) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if bytes.Contains(metrics, []byte("strata_generator_memory_budget_refusals_total 0\n")) {
		t.Error("strata_generator_memory_budget_refusals_total is 0 after the endless output's refusals")
	}
}

// waitServing waits until the server answers /healthz.
func waitServing(client *http.Client, killed <-chan struct{}) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get("http://gen/healthz")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-killed:
			return fmt.Errorf("the server was killed before it served")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server did not serve within 30 s: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sets is a JSON list of parameter sets and how many it holds.
type sets struct {
	data  []byte
	count int
}

// hugeSets is a JSON list of small parameter sets of about size bytes.
func hugeSets(size int) sets {
	var b bytes.Buffer
	b.WriteByte('[')
	n := 0
	for b.Len() < size-100 {
		if n > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"app-%07d","cluster":"https://10.0.%d.%d","replicas":%d}`, n, n/250%250, n%250, n%5)
		n++
	}
	b.WriteByte(']')
	return sets{b.Bytes(), n}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
