package cmpserver_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
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

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
	"github.com/strata-dev/strata/internal/cmpserver/tarball"
	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/hookexec/hookexectest"
	"github.com/strata-dev/strata/internal/memlimit"
	"github.com/strata-dev/strata/internal/rsswatch"
)

// childSocketEnv makes the test binary a plugin sidecar serving on the
// socket it names (runSidecarChild), for the attack tests, which measure
// the sidecar's memory as a process of its own.
const childSocketEnv = "STRATA_TEST_SIDECAR_SOCKET"

func TestMain(m *testing.M) {
	if sock := os.Getenv(childSocketEnv); sock != "" {
		os.Exit(runSidecarChild(sock))
	}
	code := m.Run()
	hookexectest.Cleanup()
	os.Exit(code)
}

// childPlugin is the plugin the child sidecar serves: it prints the
// application's out.yaml.
const childPlugin = `apiVersion: argoproj.io/v1alpha1
kind: ConfigManagementPlugin
metadata:
  name: mem
spec:
  generate:
    command: [cat, out.yaml]
`

// runSidecarChild serves childPlugin as cmp serve does: the memory limit
// from STRATA_MEMORY_LIMIT, the Go memory limit and the request budget
// derived from it.
func runSidecarChild(sock string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	l, err := memlimit.Setup(log, "cmp", nil)
	if err != nil {
		log.Error("memory limit", "err", err)
		return 1
	}
	cfg, err := cmpserver.ParseConfig([]byte(childPlugin), "plugin.yaml")
	if err != nil {
		log.Error("config", "err", err)
		return 1
	}
	store, err := tarball.NewStore(filepath.Join(filepath.Dir(sock), "repos"), -1)
	if err != nil {
		log.Error("store", "err", err)
		return 1
	}
	defer store.Close()
	p := cmpserver.NewCommandPlugin(cfg, cmpserver.CommandOptions{Env: os.Environ(), NoSandbox: true, Logger: log})
	srv := &cmpserver.Server{Plugin: p, Store: store, Logger: log, MemoryBudget: l.Budget(cmpserver.DefaultMemoryReserve), MemoryBudgetFrom: "--memory-budget"}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := srv.Serve(ctx, sock); err != nil {
		log.Error("serve", "err", err)
		return 1
	}
	return 0
}

// A childSidecar is a sidecar running as a child process under a memory
// limit, its anonymous memory sampled every few milliseconds.
type childSidecar struct {
	client pluginpb.ConfigManagementPluginServiceClient
	limit  int64
	peak   atomic.Int64 // RssAnon, bytes
}

// startChildSidecar starts the test binary as a sidecar with
// STRATA_MEMORY_LIMIT=limit, and a watchdog that records its peak RssAnon
// and kills it past the limit, as the kernel would kill a container.
func startChildSidecar(t *testing.T, limit int64) *childSidecar {
	t.Helper()
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc to measure the sidecar's memory")
	}
	if raceDetector {
		t.Skip("measures the sidecar's memory, which the race detector multiplies, as it does its time: runs without -race (make unit)")
	}
	dir, err := os.MkdirTemp("", "cmpmem") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "mem.sock")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childSocketEnv+"="+sock, memlimit.Env+"="+strconv.FormatInt(limit, 10), "GOMEMLIMIT=")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &childSidecar{limit: limit}
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopWatch:
				return
			case <-tick.C:
			}
			rss, ok := rsswatch.RssAnon(cmd.Process.Pid)
			if !ok {
				return
			}
			if rss > c.peak.Load() {
				c.peak.Store(rss)
			}
			if rss > limit {
				cmd.Process.Kill() // the OOM killer
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(stopWatch)
		<-watched
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("sidecar's log:\n%s", stderr.String())
		}
	})
	eventually.True(t, "the sidecar listens on "+sock, func() (bool, string) {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			return false, err.Error()
		}
		conn.Close()
		return true, ""
	})
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(cmpserver.DefaultMaxMessageSize)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	c.client = pluginpb.NewConfigManagementPluginServiceClient(conn)
	return c
}

// generate asks the sidecar for the manifests of a repository whose
// out.yaml is out, and returns how many it got.
func (c *childSidecar) generate(t *testing.T, app string, out []byte) (int, error) {
	tgz := tarGz(t, map[string]string{"out.yaml": string(out)})
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	stream, err := c.client.GenerateManifest(ctx)
	if err != nil {
		return 0, err
	}
	if err := cmpserver.SendApp(stream, &pluginpb.ManifestRequestMetadata{AppName: app, AppRelPath: "."}, tgz); err != nil {
		return 0, err
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return 0, err
	}
	return len(resp.GetManifests()), nil
}

// hostileMap is one ConfigMap of n small values, in YAML.
func hostileMap(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n")
	for i := range n {
		fmt.Fprintf(&b, "  k%d: \"%d\"\n", i, i)
	}
	return []byte(b.String())
}

// hostileList is one manifest holding a list of n small integers.
func hostileList(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Thing\nmetadata:\n  name: big\nlist:\n")
	for i := range n {
		fmt.Fprintf(&b, "- %d\n", 1000000+i)
	}
	return []byte(b.String())
}

// normalApp is an application of 300 ConfigMaps of 20 values each.
func normalApp(name string) []byte {
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%d\ndata:\n", name, i)
		for k := range 20 {
			fmt.Fprintf(&b, "  key%d: value %d of %s\n", k, k, name)
		}
	}
	return []byte(b.String())
}

// attackLimit is the memory limit of the child sidecars: a quarter of
// deploy/cmp's 1Gi, with the inputs scaled by a quarter too, so
// that each test takes seconds.
const attackLimit = 256 << 20

// runNormalClients runs n normal clients, each generating rounds times,
// until stop is closed (after at least one round each), and returns the
// errors they saw.
func runNormalClients(t *testing.T, c *childSidecar, n int, stop <-chan struct{}) func() []error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("normal%d", i)
			out := normalApp(name)
			for round := 0; ; round++ {
				got, err := c.generate(t, name, out)
				if err == nil && got != 300 {
					err = fmt.Errorf("%d manifests, want 300", got)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s round %d: %w", name, round, err))
					mu.Unlock()
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		})
	}
	return func() []error {
		wg.Wait()
		return errs
	}
}

// checkRefused checks that err is the clean refusal of the memory budget.
func checkRefused(t *testing.T, what string, err error) {
	t.Helper()
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("%s: error %v, want ResourceExhausted", what, err)
	}
	for _, want := range []string{"needs more memory than the sidecar's budget", "--memory-budget", "split the application"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q, want it to say %q", what, err, want)
		}
	}
}

// TestAttackSidecarLargeMap: a manifest just under --max-manifest-values,
// a 33 MB map, took the sidecar to 1.55 GB (deploy/cmp limit 1Gi). Here a
// quarter: an 8 MB map (500,000 values) under a 256 MiB limit, with
// normal clients alongside.
func TestAttackSidecarLargeMap(t *testing.T) {
	c := startChildSidecar(t, attackLimit)
	stop := make(chan struct{})
	wait := runNormalClients(t, c, 3, stop)
	big := hostileMap(500_000)
	t.Logf("hostile map: %d bytes", len(big))
	for round := range 2 {
		_, err := c.generate(t, "hostile", big)
		checkRefused(t, fmt.Sprintf("the %d-byte map, round %d", len(big), round), err)
	}
	close(stop)
	for _, err := range wait() {
		t.Errorf("normal client: %v", err)
	}
	if peak := c.peak.Load(); peak == 0 || peak > attackLimit {
		t.Errorf("the sidecar's peak anonymous memory = %d bytes, want 1 to %d (the limit)", peak, attackLimit)
	} else {
		t.Logf("peak RssAnon %d MiB of a %d MiB limit", peak>>20, attackLimit>>20)
	}
}

// TestAttackSidecarConcurrentLists: 4 concurrent 25 MB lists took the
// sidecar to 3.6 GB. Here a quarter: 4 concurrent 6 MB lists under a
// 256 MiB limit, with normal clients alongside.
func TestAttackSidecarConcurrentLists(t *testing.T) {
	c := startChildSidecar(t, attackLimit)
	stop := make(chan struct{})
	wait := runNormalClients(t, c, 3, stop)
	list := hostileList(700_000)
	t.Logf("hostile list: %d bytes", len(list))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			_, err := c.generate(t, fmt.Sprintf("hostile%d", i), list)
			checkRefused(t, fmt.Sprintf("list %d of %d bytes", i, len(list)), err)
		})
	}
	wg.Wait()
	close(stop)
	for _, err := range wait() {
		t.Errorf("normal client: %v", err)
	}
	if peak := c.peak.Load(); peak == 0 || peak > attackLimit {
		t.Errorf("the sidecar's peak anonymous memory = %d bytes, want 1 to %d (the limit)", peak, attackLimit)
	} else {
		t.Logf("peak RssAnon %d MiB of a %d MiB limit", peak>>20, attackLimit>>20)
	}
}

// TestAttackSidecarSharedBudget: outputs that each fit the budget, but
// not all at once: 4 concurrent 3 MB lists (each estimated at some 60% of
// the budget) wait for each other and all succeed, under the limit.
func TestAttackSidecarSharedBudget(t *testing.T) {
	c := startChildSidecar(t, attackLimit)
	list := hostileList(110_000)
	var (
		wg sync.WaitGroup
		ok atomic.Int32
	)
	for i := range 4 {
		wg.Go(func() {
			n, err := c.generate(t, fmt.Sprintf("medium%d", i), list)
			if err != nil || n != 1 {
				t.Errorf("medium list %d: %d manifests, error %v; want 1, nil", i, n, err)
				return
			}
			ok.Add(1)
		})
	}
	wg.Wait()
	if peak := c.peak.Load(); peak == 0 || peak > attackLimit {
		t.Errorf("the sidecar's peak anonymous memory = %d bytes, want 1 to %d (the limit)", peak, attackLimit)
	} else {
		t.Logf("%d of 4 succeeded; peak RssAnon %d MiB of a %d MiB limit", ok.Load(), peak>>20, attackLimit>>20)
	}
}
