//go:build linux

package worker

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// setProcess makes the worker the leader of a process group of its
// own (a signal to the server's terminal does not reach it; killing it
// kills anything it started) and has the kernel kill it when the server
// dies.
func setProcess(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// kill kills the worker's process group. The worker must not have
// been reaped yet, so that its process group ID cannot have been reused.
func kill(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	_ = p.Kill()
}

// addressSpace is the process's virtual memory size (VmSize), 0 when it
// cannot be read.
func addressSpace() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f, _, _ := bytes.Cut(data, []byte(" "))
	pages, err := strconv.ParseInt(string(f), 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// setAddressSpaceLimit sets the soft RLIMIT_AS to n bytes (never above the
// hard limit) and returns the function that puts the previous one back.
func setAddressSpaceLimit(n int64) (restore func(), err error) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &old); err != nil {
		return nil, err
	}
	l := old
	if uint64(n) < l.Max {
		l.Cur = uint64(n)
	} else {
		l.Cur = l.Max
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &l); err != nil {
		return nil, err
	}
	return func() { _ = syscall.Setrlimit(syscall.RLIMIT_AS, &old) }, nil
}
