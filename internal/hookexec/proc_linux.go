//go:build linux

package hookexec

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// openOutputFlags are added when opening a file a hook wrote: never follow a
// symbolic link, and never block opening a FIFO.
const openOutputFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// setProcessGroup makes the command the leader of a new process group, so
// that it and everything it starts can be signalled together.
func setProcessGroup(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return nil
}

// signalGroup sends sig to every process in the group pgid. The caller must
// not have reaped the group's leader, so that pgid cannot have been reused.
func signalGroup(pgid int, sig syscall.Signal) {
	// ESRCH only means that the group has no live member left.
	_ = syscall.Kill(-pgid, sig)
}

// pPID is P_PID from <sys/wait.h>: waitid's idtype for a single process.
const pPID = 1

// waitExited blocks until the child pid has exited, without reaping it: the
// zombie keeps its process ID, and with it the process-group ID, reserved.
func waitExited(pid int) error {
	var info [16]uint64 // siginfo_t is 128 bytes.
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info)), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return os.NewSyscallError("waitid", errno)
		}
	}
}

// maxRSS is the peak resident set of a finished process in bytes (Linux
// reports ru_maxrss in KiB).
func maxRSS(state *os.ProcessState) int64 {
	if ru, ok := state.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024
	}
	return 0
}

// setFileSizeLimit sets the RLIMIT_FSIZE of the process pid (prlimit).
func setFileSizeLimit(pid int, n int64) error {
	lim := syscall.Rlimit{Cur: uint64(n), Max: uint64(n)}
	_, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
	if e != 0 {
		return os.NewSyscallError("prlimit", e)
	}
	return nil
}

// ptraceRefused is set once starting a traced command failed with EPERM
// (a seccomp profile, Yama's ptrace_scope 2 or 3): from then on
// startLimited sets the limit after the start.
var ptraceRefused atomic.Bool

var ptraceProbe sync.Once

// FileSizeLimitMode says how Command.MaxFileSize is applied: "before the
// command runs" (it starts traced and stopped) or, where tracing is
// refused, "just after it starts". It finds out once, by starting a
// traced process that cannot run.
func FileSizeLimitMode() string {
	ptraceProbe.Do(func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd := &exec.Cmd{Path: "/nonexistent/strata-ptrace-probe", Args: []string{"probe"}, Env: []string{},
			SysProcAttr: &syscall.SysProcAttr{Ptrace: true}}
		if err := cmd.Start(); err == nil {
			cmd.Process.Kill()
			cmd.Wait()
		} else if errors.Is(err, syscall.EPERM) {
			ptraceRefused.Store(true)
		}
	})
	if ptraceRefused.Load() {
		return "just after it starts (tracing refused)"
	}
	return "before the command runs"
}

// startLimited starts cmd with the RLIMIT_FSIZE fsize (none when 0): the
// child starts traced, stops at its exec (SIGTRAP), gets the limit and is
// detached, so that it runs no instruction without it. The caller's
// goroutine must be locked to its thread: ptrace requests come from the
// thread that started the tracee.
func startLimited(cmd *exec.Cmd, fsize int64) error {
	if fsize <= 0 {
		return cmd.Start()
	}
	if ptraceRefused.Load() {
		if err := cmd.Start(); err != nil {
			return err
		}
		// Fails only if the command has exited already.
		_ = setFileSizeLimit(cmd.Process.Pid, fsize)
		return nil
	}
	cmd.SysProcAttr.Ptrace = true
	err := cmd.Start()
	cmd.SysProcAttr.Ptrace = false
	if err != nil {
		if cmd.Process != nil || !errors.Is(err, syscall.EPERM) {
			return err
		}
		// Tracing refused, or something else (the namespaces the command
		// is to start in): tracing is refused if it starts without.
		if err := cmd.Start(); err != nil {
			return err
		}
		ptraceRefused.Store(true)
		_ = setFileSizeLimit(cmd.Process.Pid, fsize)
		return nil
	}
	pid := cmd.Process.Pid
	var ws syscall.WaitStatus
	for {
		// The stop at the exec; __WALL: the command may be a clone of
		// another kind in its namespaces.
		_, err := syscall.Wait4(pid, &ws, syscall.WALL|syscall.WUNTRACED, nil)
		if err != syscall.EINTR {
			break
		}
	}
	if !ws.Stopped() {
		// Killed before it ran (SIGKILL is the one signal a stopped
		// tracee obeys): reaped here, nothing to limit.
		return nil
	}
	lerr := setFileSizeLimit(pid, fsize)
	if err := syscall.PtraceDetach(pid); err != nil {
		syscall.Kill(pid, syscall.SIGKILL)
		return fmt.Errorf("letting the command run after setting its file size limit: %w", err)
	}
	if lerr != nil {
		syscall.Kill(pid, syscall.SIGKILL)
		return fmt.Errorf("setting the command's file size limit: %w", lerr)
	}
	return nil
}
