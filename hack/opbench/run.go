package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/strata-dev/strata/internal/rsswatch"
)

// launch is one operator process to measure.
type launch struct {
	name  string   // for messages
	argv  []string // program and arguments
	env   []string // the whole environment
	log   string   // file receiving stdout and stderr ("" is this process's stderr)
	ready string   // URL answering 200 once the first converge is done

	// timeout bounds the wait for ready.
	timeout time.Duration
	// settle, when above zero, is how long the operator runs on once
	// ready before its resident set is read (measurement.settledRSSKB).
	settle time.Duration
	// atStart and atReady, when set, are called right before the process
	// starts and as soon as it is ready.
	atStart, atReady func()
	// started, when set, is called with the process's pid once it has
	// started.
	started func(pid int)
	// during, when set, runs once the operator is ready (and has settled),
	// before it is stopped: the watch scenario's events. Its error fails
	// the run.
	during func(ctx context.Context, pid int) error
}

// measurement is what one run of an operator took.
type measurement struct {
	// ready is the time from starting the process until its readiness URL
	// first answered 200.
	ready time.Duration
	// cpu is the CPU time (user + system) the operator process had used
	// when it turned ready; hooksCPU is that of the child processes it had
	// waited for by then (its hooks).
	cpu, hooksCPU time.Duration
	// rssKB is the operator process's peak resident set over its whole
	// life (wait4's ru_maxrss), its children not included: the binary's
	// file pages it touched count in it.
	rssKB int64
	// peakAnon is the peak of its anonymous resident memory (RssAnon,
	// sampled while it ran): the memory a user pays for, which file pages
	// the kernel may drop do not lower.
	peakAnon int64
	// settledRSSKB is its resident set (VmRSS) once it has run for
	// launch.settle after it turned ready: what a converged operator
	// holds. 0 when not measured.
	settledRSSKB int64
	// controlPlaneCPU is the CPU time etcd and kube-apiserver used from
	// the operator's start until it was ready (set by the cluster mode).
	controlPlaneCPU time.Duration
}

// pollEvery is how often the readiness URL is asked. Each request costs the
// operator a little CPU, which is counted in its figures; at 10ms that is
// a few hundred requests in a run of seconds.
const pollEvery = 10 * time.Millisecond

// stopGrace is how long an operator gets to exit after SIGTERM before it
// is killed.
const stopGrace = 30 * time.Second

// run starts l, waits until it is ready, stops it and returns the figures.
func (l launch) run(ctx context.Context) (measurement, error) {
	var m measurement
	cmd := exec.Command(l.argv[0], l.argv[1:]...)
	cmd.Env = l.env
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if l.log != "" {
		f, err := os.Create(l.log)
		if err != nil {
			return m, err
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	if l.atStart != nil {
		l.atStart()
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return m, fmt.Errorf("starting %s: %w", l.name, err)
	}
	if l.started != nil {
		l.started(cmd.Process.Pid)
	}
	var peakAnon atomic.Int64
	go rsswatch.Watch(cmd.Process.Pid, math.MaxInt64, &peakAnon, make(chan struct{}))
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	stop := func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(stopGrace):
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("%s did not exit within %v of SIGTERM; killed", l.name, stopGrace)
		}
		return nil
	}

	client := &http.Client{Timeout: time.Second}
	deadline := time.NewTimer(l.timeout)
	defer deadline.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for ready := false; !ready; {
		select {
		case <-exited:
			return m, fmt.Errorf("%s exited before it was ready (%v)%s", l.name, waitErr, l.logTail())
		case <-deadline.C:
			_ = stop()
			return m, fmt.Errorf("%s not ready within %v%s", l.name, l.timeout, l.logTail())
		case <-ctx.Done():
			_ = stop()
			return m, ctx.Err()
		case <-tick.C:
		}
		resp, err := client.Get(l.ready)
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			m.ready = time.Since(start)
			ready = true
		}
	}
	if l.atReady != nil {
		l.atReady()
	}
	cpu, err := procCPU(cmd.Process.Pid)
	if err != nil {
		_ = stop()
		return m, err
	}
	m.cpu, m.hooksCPU = cpu[0], cpu[1]
	if l.settle > 0 {
		select {
		case <-exited:
			return m, fmt.Errorf("%s exited after it was ready (%v)%s", l.name, waitErr, l.logTail())
		case <-ctx.Done():
			_ = stop()
			return m, ctx.Err()
		case <-time.After(l.settle):
		}
		if m.settledRSSKB, err = procRSS(cmd.Process.Pid); err != nil {
			_ = stop()
			return m, err
		}
	}
	if l.during != nil {
		if err := l.during(ctx, cmd.Process.Pid); err != nil {
			_ = stop()
			return m, fmt.Errorf("%w%s", err, l.logTail())
		}
		select {
		case <-exited:
			return m, fmt.Errorf("%s exited while measured (%v)%s", l.name, waitErr, l.logTail())
		default:
		}
	}
	if err := stop(); err != nil {
		return m, err
	}
	if waitErr != nil && !signalled(waitErr, syscall.SIGTERM) {
		return m, fmt.Errorf("%s on SIGTERM: %w%s", l.name, waitErr, l.logTail())
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.rssKB = ru.Maxrss
	}
	m.peakAnon = peakAnon.Load()
	return m, nil
}

// signalled reports whether err is the exit of a process killed by sig
// (an operator may let SIGTERM end it rather than exit 0).
func signalled(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// logTail returns the end of the operator's log, for an error message.
func (l launch) logTail() string {
	if l.log == "" {
		return ""
	}
	data, err := os.ReadFile(l.log)
	if err != nil {
		return ""
	}
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return "; the end of its log " + l.log + ":\n" + string(data)
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture's user ABI.
const clockTick = time.Second / 100

// procCPU reads the CPU time pid has used and that of the children it has
// waited for, from /proc/PID/stat.
func procCPU(pid int) ([2]time.Duration, error) {
	var out [2]time.Duration
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return out, fmt.Errorf("reading the operator's CPU time: %w", err)
	}
	// The command name, in parentheses, may hold spaces; the fields after
	// it start with the state (field 3); utime, stime, cutime and cstime
	// are fields 14 to 17.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return out, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, data)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 15 {
		return out, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, data)
	}
	var t [4]int64
	for k := range t {
		if t[k], err = strconv.ParseInt(f[11+k], 10, 64); err != nil {
			return out, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, data)
		}
	}
	out[0] = time.Duration(t[0]+t[1]) * clockTick
	out[1] = time.Duration(t[2]+t[3]) * clockTick
	return out, nil
}

// procRSS reads the resident set of pid in KiB (VmRSS of
// /proc/PID/status).
func procRSS(pid int) (int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("reading the operator's resident set: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("unexpected /proc/%d/status line %q", pid, line)
			}
			return kb, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
