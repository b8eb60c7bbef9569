package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// operatorEnv makes this test binary play an operator for launch.run: it
// serves /readyz on the address in the variable, answering 500 until it
// has run a child process (as an operator runs hooks) and allocated some
// memory, then 200; it exits 0 on SIGTERM. The mode in operatorModeEnv
// changes that: "exit" exits 3 before ever being ready, "never" never
// turns ready.
const (
	operatorEnv     = "OPBENCH_TEST_OPERATOR"
	operatorModeEnv = "OPBENCH_TEST_OPERATOR_MODE"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(operatorEnv); addr != "" {
		os.Exit(playOperator(addr, os.Getenv(operatorModeEnv)))
	}
	os.Exit(m.Run())
}

// ballast keeps the memory playOperator allocates reachable.
var ballast []byte

func playOperator(addr, mode string) int {
	fmt.Println("operator starting")
	if mode == "exit" {
		return 3
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	var ready atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go http.Serve(l, mux)
	if mode != "never" {
		if err := exec.Command("sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done").Run(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		ballast = make([]byte, 64<<20)
		for i := range ballast {
			ballast[i] = byte(i)
		}
		ready.Store(true)
	}
	<-term
	return 0
}

// fakeLaunch is a launch of this test binary as an operator.
func fakeLaunch(t *testing.T, mode string, timeout time.Duration) launch {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	return launch{
		name:    "fake operator",
		argv:    []string{os.Args[0], "-test.run=^$"},
		env:     append(os.Environ(), operatorEnv+"="+addr, operatorModeEnv+"="+mode),
		log:     filepath.Join(t.TempDir(), "operator.log"),
		ready:   "http://" + addr + "/readyz",
		timeout: timeout,
	}
}

func TestLaunchMeasures(t *testing.T) {
	l := fakeLaunch(t, "", time.Minute)
	m, err := l.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m.ready <= 0 {
		t.Errorf("ready = %v, want > 0", m.ready)
	}
	// The operator touched 64 MiB before it turned ready.
	if m.rssKB < 64<<10 {
		t.Errorf("peak RSS = %d KiB, want at least the 64 MiB the operator touched", m.rssKB)
	}
	// Its child (the "hook") was waited for before it turned ready, so its
	// CPU time is the children's, not the operator's.
	if m.hooksCPU <= 0 {
		t.Errorf("hooks' CPU = %v, want > 0: the child's loop was not counted", m.hooksCPU)
	}
	if m.settledRSSKB != 0 {
		t.Errorf("settled RSS = %d KiB without settle, want 0 (not measured)", m.settledRSSKB)
	}
	log, err := os.ReadFile(l.log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "operator starting") {
		t.Errorf("log %q lacks the operator's output", log)
	}
}

// TestLaunchSettledRSS: with settle, the resident set is read once the
// operator has run on that long; it still holds the 64 MiB it touched.
func TestLaunchSettledRSS(t *testing.T) {
	l := fakeLaunch(t, "", time.Minute)
	l.settle = 100 * time.Millisecond
	m, err := l.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m.settledRSSKB < 64<<10 {
		t.Errorf("settled RSS = %d KiB, want at least the 64 MiB the operator holds", m.settledRSSKB)
	}
}

func TestLaunchFailures(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		timeout time.Duration
		want    []string
	}{
		{"exit", time.Minute, []string{"exited before it was ready", "exit status 3", "operator starting"}},
		{"never", 2 * time.Second, []string{"not ready within 2s", "operator starting"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			_, err := fakeLaunch(t, tc.mode, tc.timeout).run(context.Background())
			if err == nil {
				t.Fatal("run = nil, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLaunchContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := fakeLaunch(t, "never", time.Minute).run(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("run with a cancelled context = %v, want context.Canceled", err)
	}
}

func TestProcCPU(t *testing.T) {
	// Burn CPU in this process and in a child it waits for.
	deadline := time.Now().Add(50 * time.Millisecond)
	for n := 0; time.Now().Before(deadline); n++ {
		_ = n * n
	}
	if err := exec.Command("sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done").Run(); err != nil {
		t.Fatal(err)
	}
	cpu, err := procCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if cpu[0] <= 0 || cpu[1] <= 0 {
		t.Errorf("procCPU = %v, want both the process's and its waited-for child's CPU time > 0", cpu)
	}
	if _, err := procCPU(1 << 30); err == nil {
		t.Error("procCPU of a process that does not exist = nil error")
	}
}

func TestSplitList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"addon-operator,strata", []string{"addon-operator", "strata"}},
		{" strata , ", []string{"strata"}},
		{"", nil},
	} {
		if got := splitList(tc.in); strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("splitList(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
