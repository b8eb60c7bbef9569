// Package loadrun is what the load and fault runs of the servers that
// reconcile a cluster share (hack/layersload, and the operator's run): a
// server started as a child process under its deploy manifest's memory
// limit, watched by a watchdog on its RssAnon (internal/rsswatch), and the
// tally of outcomes they report.
package loadrun

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/strata-dev/strata/internal/memlimit"
	"github.com/strata-dev/strata/internal/rsswatch"
)

// A Server is a server process under a memory limit: STRATA_MEMORY_LIMIT
// set to it, as the deploy manifests set it with the downward API, and a
// watchdog that kills the process past it, as the kernel would.
type Server struct {
	Limit int64
	// Log is the file the server's stdout and stderr go to.
	Log string

	cmd    *exec.Cmd
	peak   atomic.Int64
	killed chan struct{}
	exited chan struct{}
	err    error // once exited is closed
	once   sync.Once
}

// Start starts argv with env added to this process's environment (and
// STRATA_MEMORY_LIMIT=limit, GOMEMLIMIT unset, unless env sets them), its
// output in dir/name.log.
func Start(dir, name string, limit int64, argv []string, env ...string) (*Server, error) {
	s := &Server{Limit: limit, Log: filepath.Join(dir, name+".log"), killed: make(chan struct{}), exited: make(chan struct{})}
	log, err := os.Create(s.Log)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Env = append(os.Environ(), memlimit.Env+"="+strconv.FormatInt(limit, 10), "GOMEMLIMIT=")
	s.cmd.Env = append(s.cmd.Env, env...)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	go rsswatch.Watch(s.cmd.Process.Pid, limit, &s.peak, s.killed)
	go func() {
		s.err = s.cmd.Wait()
		log.Close()
		close(s.exited)
	}()
	return s, nil
}

// Peak is the highest RssAnon seen, in bytes.
func (s *Server) Peak() int64 { return s.peak.Load() }

// Killed is closed when the watchdog killed the server past its limit.
func (s *Server) Killed() <-chan struct{} { return s.killed }

// Exited is closed when the server's process has ended.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Failure says why the server is not running as it should: killed past
// its limit, or exited; "" while it runs.
func (s *Server) Failure() string {
	select {
	case <-s.killed:
		return fmt.Sprintf("killed past its memory limit of %d MiB (RssAnon %d MiB)", s.Limit>>20, s.peak.Load()>>20)
	default:
	}
	select {
	case <-s.exited:
		return fmt.Sprintf("exited: %v", s.err)
	default:
	}
	return ""
}

// Stop ends the server: SIGTERM, then SIGKILL after grace.
func (s *Server) Stop(grace time.Duration) {
	s.once.Do(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(grace):
			s.cmd.Process.Kill()
			<-s.exited
		}
	})
}

// LogTail returns the last n lines of the server's log.
func (s *Server) LogTail(n int) string {
	data, _ := os.ReadFile(s.Log)
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// A Tally counts outcomes by kind of client and outcome.
type Tally struct {
	mu sync.Mutex
	m  map[string]map[string]int
}

// Add counts one outcome of a kind.
func (t *Tally) Add(kind, outcome string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]map[string]int{}
	}
	if t.m[kind] == nil {
		t.m[kind] = map[string]int{}
	}
	t.m[kind][outcome]++
}

// Count returns how often kind had outcome.
func (t *Tally) Count(kind, outcome string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[kind][outcome]
}

// String lists the kinds, one a line, with their outcomes × counts.
func (t *Tally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	kinds := make([]string, 0, len(t.m))
	for k := range t.m {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, kind := range kinds {
		fmt.Fprintf(&b, "  %-26s ", kind)
		outcomes := make([]string, 0, len(t.m[kind]))
		for o := range t.m[kind] {
			outcomes = append(outcomes, o)
		}
		slices.Sort(outcomes)
		for i, o := range outcomes {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s × %d", o, t.m[kind][o])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Errors collects the errors normal clients saw.
type Errors struct {
	mu   sync.Mutex
	list []string
	ok   int
}

// Done counts an operation: ok, or its error.
func (e *Errors) Done(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.list = append(e.list, err.Error())
	} else {
		e.ok++
	}
}

// Counts returns the operations that went well and the errors.
func (e *Errors) Counts() (ok int, errs []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ok, slices.Clone(e.list)
}
