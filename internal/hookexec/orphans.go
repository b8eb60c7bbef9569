package hookexec

import (
	"sync"
	"time"
)

// A Mark is a point in time on the clock the kernel dates processes by
// (CLOCK_BOOTTIME), for [Survivors]: take one with [Now] before handing a
// directory to the commands that may use it.
type Mark time.Duration

// leaders holds the main processes of the commands Run is running, by
// process ID: Survivors does not count them (they are running, not
// survivors), only what they started.
var leaders = struct {
	sync.Mutex
	pids map[int]struct{}
}{pids: map[int]struct{}{}}

// starting is held for reading by Run from before it starts a command
// until its process is in leaders, and for writing by a reading of the
// process table: so a reading never finds a command's process that is not
// yet known to be one.
var starting sync.RWMutex

func addLeader(pid int) {
	leaders.Lock()
	leaders.pids[pid] = struct{}{}
	leaders.Unlock()
}

func removeLeader(pid int) {
	leaders.Lock()
	delete(leaders.pids, pid)
	leaders.Unlock()
}

func runningLeaders() map[int]struct{} {
	leaders.Lock()
	defer leaders.Unlock()
	m := make(map[int]struct{}, len(leaders.pids))
	for pid := range leaders.pids {
		m[pid] = struct{}{}
	}
	return m
}
