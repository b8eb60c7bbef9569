//go:build linux

package hookexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Now returns the current Mark.
func Now() Mark {
	var ts syscall.Timespec
	// CLOCK_BOOTTIME (7): the clock of the start times in /proc/PID/stat.
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 7, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		panic("clock_gettime(CLOCK_BOOTTIME): " + e.Error()) // in every kernel since 2.6.39
	}
	return Mark(time.Duration(ts.Nano()))
}

// userHZ is the unit of /proc/PID/stat's start times: USER_HZ, 100 on
// every architecture Linux has (sysconf(_SC_CLK_TCK)).
const userHZ = 100

func (m Mark) ticks() int64 { return int64(time.Duration(m) / (time.Second / userHZ)) }

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER from <linux/prctl.h>.
const prSetChildSubreaper = 36

// reapEvery is how often AdoptOrphans looks for exited orphans; one is
// reaped once it has been seen exited twice, so that a child whose own
// caller is about to reap it (os/exec waits right away) is left to it.
const reapEvery = 2 * time.Second

// AdoptOrphans makes this process the subreaper of everything it starts
// (PR_SET_CHILD_SUBREAPER): a process whose parent exits is re-parented to
// this process rather than to init, so that every process started from
// here, directly or not, stays among its descendants, where [Survivors]
// looks. Without it, a command that daemonizes (forks, and lets the parent
// exit) leaves a process Survivors cannot see. AdoptOrphans also reaps
// those orphans once they exit, until ctx is done. Call it once, in a
// server, before it runs commands; the setting is for the whole process.
func AdoptOrphans(ctx context.Context) error {
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("becoming the subreaper of commands' orphans: %w", e)
	}
	go reapOrphans(ctx)
	return nil
}

func reapOrphans(ctx context.Context) {
	t := time.NewTicker(reapEvery)
	defer t.Stop()
	self := os.Getpid()
	seen := map[int]bool{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		procs, _, err := procScanner.scan()
		if err != nil {
			continue
		}
		now := map[int]bool{}
		for _, p := range procs {
			if p.ppid != self || p.state != 'Z' {
				continue
			}
			if !seen[p.pid] {
				now[p.pid] = true
				continue
			}
			// Exited two looks ago and still not reaped: an orphan, or a
			// child nobody waits for. Reap it if it is (still) a zombie;
			// WNOHANG: never block on a process ID reused since.
			var info [16]uint64
			for {
				_, _, e := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(p.pid), uintptr(unsafe.Pointer(&info)),
					syscall.WEXITED|syscall.WNOHANG, 0, 0)
				if e != syscall.EINTR {
					break
				}
			}
		}
		seen = now
	}
}

// Survivors returns how many processes that this one started or adopted
// are alive that started at or after since (within 10 ms, the resolution
// of the start times the kernel keeps), not counting the main processes of
// the commands Run is running, nor what those started.
//
// It is what a server that hands a directory to sandboxed commands needs
// to know before it hands the directory to others: once every command the
// directory was handed to has returned from Run, and provided
// [AdoptOrphans] was called, a result of 0 means nothing those commands
// started is still running, so nothing can write the directory any more.
// A process they left behind was re-parented to this process (it is a
// child now), and started after since. What a running command started
// descends from that command, whose sandbox is another; what a process
// left behind by earlier commands starts descends from that process,
// started before since, in the sandbox of those earlier commands. Neither
// counts. A process started since by this process's own code (not
// through Run) counts: the answer errs on the side of "still running".
//
// Survivors reads /proc; concurrent calls share one reading, which starts
// after the call.
func Survivors(since Mark) (int, error) {
	procs, lead, err := procScanner.scan()
	if err != nil {
		return 0, err
	}
	min := since.ticks() - 1
	n := 0
	for _, p := range procs {
		if p.state == 'Z' || p.state == 'X' || p.start < min {
			continue
		}
		if _, ok := lead[p.pid]; !ok {
			n++
		}
	}
	return n, nil
}

// proc is what Survivors reads of a process in /proc/PID/stat.
type proc struct {
	pid, ppid int
	pgrp, sid int
	state     byte
	start     int64 // clock ticks after boot
}

var procScanner scanner

// A scanner reads the process table for its callers, each getting a
// reading that started after its call; callers that come while one is
// under way share the next.
type scanner struct {
	mu       sync.Mutex
	cond     *sync.Cond
	started  int // readings started
	finished int // the number of the last reading finished
	running  bool
	procs    []proc
	leaders  map[int]struct{}
	err      error
}

func (s *scanner) scan() ([]proc, map[int]struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cond == nil {
		s.cond = sync.NewCond(&s.mu)
	}
	want := s.started + 1
	for s.finished < want {
		if s.running {
			s.cond.Wait()
			continue
		}
		s.running = true
		s.started++
		n := s.started
		s.mu.Unlock()
		starting.Lock()
		lead := runningLeaders()
		procs, err := readChildren(lead)
		starting.Unlock()
		s.mu.Lock()
		s.procs, s.leaders, s.err, s.finished, s.running = procs, lead, err, n, false
		s.cond.Broadcast()
	}
	return s.procs, s.leaders, s.err
}

// readChildren returns this process's children, from the children files
// of its threads, reading /proc/PID/stat only for those that are not in
// skip, which are returned with their process ID alone. Where the kernel
// has no children files (CONFIG_PROC_CHILDREN), it reads every process.
func readChildren(skip map[int]struct{}) ([]proc, error) {
	d, err := os.Open("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("listing this process's threads: %w", err)
	}
	tids, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("listing this process's threads: %w", err)
	}
	var (
		procs []proc
		buf   [4096]byte
		path  = make([]byte, 0, 64)
		stat  [1024]byte
	)
	for _, tid := range tids {
		path = append(append(append(path[:0], "/proc/self/task/"...), tid...), "/children\x00"...)
		n, ok := readSmall(path, buf[:])
		if !ok {
			if _, err := os.Stat("/proc/self/task/" + tid + "/children"); errors.Is(err, fs.ErrNotExist) && tid == strconv.Itoa(os.Getpid()) {
				return readProcs(os.Getpid())
			}
			continue // empty, or the thread ended
		}
		if n == len(buf) {
			return readProcs(os.Getpid()) // more children than the buffer holds
		}
		for _, f := range bytes.Fields(buf[:n]) {
			pid, err := strconv.Atoi(string(f))
			if err != nil {
				return nil, fmt.Errorf("/proc/self/task/%s/children: %q", tid, f)
			}
			if _, ok := skip[pid]; ok {
				procs = append(procs, proc{pid: pid, ppid: os.Getpid(), state: 'R'})
				continue
			}
			path = append(append(append(path[:0], "/proc/"...), f...), "/stat\x00"...)
			m, ok := readSmall(path, stat[:])
			if !ok {
				continue // gone
			}
			p, err := parseStat(stat[:m])
			if err != nil {
				return nil, fmt.Errorf("/proc/%d/stat: %w", pid, err)
			}
			p.pid = pid
			procs = append(procs, p)
		}
	}
	return procs, nil
}

// readProcs reads /proc/PID/stat of every process, and returns the
// children of parent. Processes that end while it reads are left out.
func readProcs(parent int) ([]proc, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	procs := make([]proc, 0, len(names))
	var buf [1024]byte
	path := make([]byte, 0, 32)
	for _, name := range names {
		if name == "" || name[0] < '1' || name[0] > '9' {
			continue
		}
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		path = append(append(append(path[:0], "/proc/"...), name...), "/stat\x00"...)
		n, ok := readSmall(path, buf[:])
		if !ok {
			continue // gone
		}
		p, err := parseStat(buf[:n])
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		p.pid = pid
		if p.ppid == parent {
			procs = append(procs, p)
		}
	}
	return procs, nil
}

// readSmall reads the NUL-terminated path into buf with plain system calls.
func readSmall(path []byte, buf []byte) (int, bool) {
	fd, _, e := syscall.Syscall6(syscall.SYS_OPENAT, uintptr(atFDCWD), uintptr(unsafe.Pointer(&path[0])),
		syscall.O_RDONLY|syscall.O_CLOEXEC, 0, 0, 0)
	if e != 0 {
		return 0, false
	}
	defer syscall.Close(int(fd))
	n, err := syscall.Read(int(fd), buf)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// atFDCWD is AT_FDCWD, a variable so that it converts to a uintptr.
var atFDCWD = -100

// parseStat reads the state, parent and start time from a /proc/PID/stat
// line: "pid (comm) state ppid ... starttime ...", where comm may hold
// spaces and parentheses, so the fields are counted after its last ')'.
func parseStat(b []byte) (proc, error) {
	var p proc
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return p, fmt.Errorf("no command name in %q", b)
	}
	fields := bytes.Fields(b[i+1:])
	// fields[0] is the state (field 3), fields[19] the start time (22).
	if len(fields) < 20 || len(fields[0]) != 1 {
		return p, fmt.Errorf("too few fields in %q", b)
	}
	p.state = fields[0][0]
	ppid, err := strconv.Atoi(string(fields[1]))
	if err != nil {
		return p, fmt.Errorf("parent %q: %w", fields[1], err)
	}
	start, err := strconv.ParseInt(string(fields[19]), 10, 64)
	if err != nil {
		return p, fmt.Errorf("start time %q: %w", fields[19], err)
	}
	p.ppid, p.start = ppid, start
	p.pgrp, _ = strconv.Atoi(string(fields[2]))
	p.sid, _ = strconv.Atoi(string(fields[3]))
	return p, nil
}
