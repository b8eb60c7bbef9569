//go:build linux

package hookexec

import (
	"os"
	"os/exec"
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
