//go:build linux

package hookexec

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// nsFlags are the namespaces a tracked command starts in.
const nsFlags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC

var (
	nsOnce sync.Once
	nsErr  error
)

// Namespaces reports whether this process may start commands in new user,
// PID and IPC namespaces (see [Tracker]); the answer is found once, by
// starting a process that cannot run in them.
func Namespaces() error {
	nsOnce.Do(func() {
		cmd := &exec.Cmd{Path: "/nonexistent/strata-namespace-probe", Args: []string{"probe"}, Env: []string{}}
		cmd.SysProcAttr = &syscall.SysProcAttr{}
		setNamespaces(cmd.SysProcAttr)
		err := cmd.Start()
		if err == nil {
			cmd.Wait()
			return
		}
		// The namespaces were made and the execve failed: they work.
		if errors.Is(err, syscall.ENOENT) {
			return
		}
		nsErr = fmt.Errorf("starting commands in new user, PID and IPC namespaces: %w", err)
	})
	return nsErr
}

// setNamespaces has cmd start in its own namespaces. No user or group
// is mapped into the user namespace: writing the maps is the parent's
// work, and the thread that starts a sandboxed command is confined by
// Landlock, which (rightly) refuses it /proc. The command keeps its
// credentials, and so its access to files, and sees itself and the
// files of its user as the overflow user (nobody, 65534).
func setNamespaces(a *syscall.SysProcAttr) {
	a.Cloneflags |= nsFlags
}

// nsRefused reports whether starting a command failed because its
// namespaces were refused (a seccomp profile, a limit on namespaces
// reached): it is then started without them.
func nsRefused(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) ||
		errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EUSERS)
}

// closeDeadline bounds how long Close keeps killing what it finds.
const closeDeadline = 10 * time.Second

// Close kills what the commands run with t left behind and reports
// whether anything may still run: nil when nothing can, an error matching
// [ErrSurvivor] otherwise. Call it once every Run with t has returned; a
// Run after Close fails.
func (t *Tracker) Close() error {
	t.mu.Lock()
	running, ns, ran := t.running, t.ns, t.ran
	t.closed = true
	t.mu.Unlock()
	if running > 0 {
		return fmt.Errorf("%w: %d of its commands still run", ErrSurvivor, running)
	}
	if !ran || ns {
		// Every command was the init of its PID namespace, and has been
		// reaped: the kernel killed everything else in the namespace
		// first, and freed its IPC namespace.
		return nil
	}
	err := t.killLeftovers()
	if rerr := removeSharedMemory(t.started); rerr != nil && err == nil {
		err = fmt.Errorf("%w: removing System V shared memory: %w", ErrSurvivor, rerr)
	}
	if rerr := ipcSweep.closed(t.started); rerr != nil && err == nil {
		err = fmt.Errorf("%w: removing System V semaphores and message queues: %w", ErrSurvivor, rerr)
	}
	return err
}

// ipcSweep removes the System V semaphore sets and message queues that
// commands run in this process's IPC namespace left behind. The kernel
// does not record who created those (as it does for shared memory), so
// they are removed only at a moment when no such command runs: then
// every set and queue of this user created since the first of the
// Trackers closed meanwhile began is a leftover, as the processes of
// those Trackers were killed when they closed. A command cannot start
// while a sweep runs.
var ipcSweep ipcSweeper

type ipcSweeper struct {
	mu      sync.Mutex
	running int       // commands running in this process's IPC namespace
	pending time.Time // the start of the first Tracker closed since the last sweep; zero: none
}

// started counts a command that runs in this process's IPC namespace;
// ended, one that ended.
func (s *ipcSweeper) started() {
	s.mu.Lock()
	s.running++
	s.mu.Unlock()
}

func (s *ipcSweeper) ended() {
	s.mu.Lock()
	s.running--
	s.mu.Unlock()
}

// closed notes that a Tracker begun at begun closed, and sweeps when no
// command runs in this IPC namespace now.
func (s *ipcSweeper) closed(begun time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending.IsZero() || begun.Before(s.pending) {
		s.pending = begun
	}
	if s.running > 0 {
		return nil // a later Close sweeps
	}
	since := s.pending
	s.pending = time.Time{}
	err := removeIPC("/proc/sysvipc/sem", "semid", since, func(id uintptr) syscall.Errno {
		_, _, e := syscall.Syscall(syscall.SYS_SEMCTL, id, 0, ipcRMID) // semctl(id, 0, IPC_RMID)
		return e
	})
	if merr := removeIPC("/proc/sysvipc/msg", "msqid", since, func(id uintptr) syscall.Errno {
		_, _, e := syscall.Syscall(syscall.SYS_MSGCTL, id, ipcRMID, 0) // msgctl(id, IPC_RMID, NULL)
		return e
	}); err == nil {
		err = merr
	}
	return err
}

// ipcStarted counts a command about to start, in this process's IPC
// namespace as far as is known; ipcEnded, one that ended or that runs in
// its own.
func ipcStarted() { ipcSweep.started() }
func ipcEnded()   { ipcSweep.ended() }

// removeIPC removes the objects listed in table (/proc/sysvipc/sem or
// msg, whose ID column is idCol) of this process's user created at or
// after since (to the second), with rm.
func removeIPC(table, idCol string, since time.Time, rm func(id uintptr) syscall.Errno) error {
	b, err := os.ReadFile(table)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // no System V IPC in this kernel
		}
		return err
	}
	lines := bytes.Split(b, []byte("\n"))
	col := map[string]int{}
	for i, name := range bytes.Fields(lines[0]) {
		col[string(name)] = i
	}
	for _, name := range []string{idCol, "cuid", "ctime"} {
		if _, ok := col[name]; !ok {
			return fmt.Errorf("%s has no %s column", table, name)
		}
	}
	uid := int64(os.Geteuid())
	cut := since.Unix() - 1
	for _, line := range lines[1:] {
		fields := bytes.Fields(line)
		num := func(name string) int64 {
			i := col[name]
			if i >= len(fields) {
				return -1
			}
			n, err := strconv.ParseInt(string(fields[i]), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
		id := num(idCol)
		if id < 0 || num("cuid") != uid || num("ctime") < cut {
			continue
		}
		if e := rm(uintptr(id)); e != 0 && e != syscall.EINVAL && e != syscall.EIDRM {
			return fmt.Errorf("removing %d of %s: %w", id, table, e)
		}
	}
	return nil
}

// killLeftovers kills and reaps the children of this process started since
// t was made, that no running command accounts for, until a reading of the
// process table finds none.
func (t *Tracker) killLeftovers() error {
	selfGroup := syscall.Getpgrp()
	min := t.mark.ticks() - 1
	deadline := time.Now().Add(closeDeadline)
	pause := 100 * time.Microsecond
	var unattributed []int
	for {
		starting.Lock()
		lead := runningLeaders()
		procs, err := readChildren(lead)
		starting.Unlock()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrSurvivor, err)
		}
		found := 0
		unattributed = unattributed[:0]
		for _, p := range procs {
			if p.start < min {
				continue // started before: not this Tracker's
			}
			if _, ok := lead[p.pid]; ok {
				continue // a running command
			}
			_, inCommand := lead[p.pgrp]
			if inCommand || p.pgrp == selfGroup {
				if p.state == 'Z' && !liveThreads(p.pid) {
					continue // exited: its own parent reaps it
				}
				// Either a process of a running command or of this
				// process's own, or one of t's that joined such a
				// group: not to be killed, and not to be vouched for.
				unattributed = append(unattributed, p.pid)
				continue
			}
			found++
			// A zombie too: its main thread may have exited while
			// another lives; SIGKILL reaches the whole thread group.
			syscall.Kill(p.pid, syscall.SIGKILL)
			reap(p.pid)
		}
		if found == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d processes still ran %v after they were first killed", ErrSurvivor, found, closeDeadline)
		}
		time.Sleep(pause)
		pause = min2(2*pause, 20*time.Millisecond)
	}
	if len(unattributed) > 0 {
		return fmt.Errorf("%w: %d processes started since, in the process group of a running command or of the server, cannot be told apart from the request's", ErrSurvivor, len(unattributed))
	}
	return nil
}

func min2(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}

// liveThreads reports whether the process pid, a zombie, has threads
// left: its main thread exited, not the others.
func liveThreads(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false // reaped since
	}
	_, rest, ok := bytes.Cut(b, []byte("\nThreads:"))
	if !ok {
		return true // cannot tell
	}
	line, _, _ := bytes.Cut(rest, []byte("\n"))
	n, err := strconv.Atoi(string(bytes.TrimSpace(line)))
	return err != nil || n > 1
}

// reap reaps the child pid if it has exited; __WALL: clones that send no
// SIGCHLD too.
func reap(pid int) {
	var info [16]uint64
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid), uintptr(unsafe.Pointer(&info)),
			syscall.WEXITED|syscall.WNOHANG|wALL, 0, 0)
		if e != syscall.EINTR {
			return
		}
	}
}

// wALL is __WALL from <linux/wait.h>.
const wALL = 0x40000000

// removeSharedMemory removes the System V shared memory segments of this
// process's user created at or after since (to the second, the resolution
// the kernel keeps) whose creator no longer runs.
func removeSharedMemory(since time.Time) error {
	f, err := os.Open("/proc/sysvipc/shm")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil // no System V IPC in this kernel
		}
		return err
	}
	defer f.Close()
	uid := os.Geteuid()
	cut := since.Unix() - 1
	sc := bufio.NewScanner(f)
	var idx map[string]int
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if idx == nil {
			idx = map[string]int{}
			for i, name := range fields {
				idx[string(name)] = i
			}
			for _, name := range []string{"shmid", "cpid", "cuid", "ctime"} {
				if _, ok := idx[name]; !ok {
					return fmt.Errorf("/proc/sysvipc/shm has no %s column", name)
				}
			}
			continue
		}
		num := func(name string) int64 {
			i := idx[name]
			if i >= len(fields) {
				return -1
			}
			n, err := strconv.ParseInt(string(fields[i]), 10, 64)
			if err != nil {
				return -1
			}
			return n
		}
		if num("cuid") != int64(uid) || num("ctime") < cut {
			continue
		}
		if cpid := num("cpid"); cpid > 0 && syscall.Kill(int(cpid), 0) == nil {
			continue // its creator runs: not a leftover (yet)
		}
		id := num("shmid")
		if id < 0 {
			continue
		}
		if _, _, e := syscall.Syscall(syscall.SYS_SHMCTL, uintptr(id), ipcRMID, 0); e != 0 && e != syscall.EINVAL && e != syscall.EIDRM {
			return fmt.Errorf("removing shared memory segment %d: %w", id, e)
		}
	}
	return sc.Err()
}

// ipcRMID is IPC_RMID from <linux/ipc.h>.
const ipcRMID = 0
