package hookexec

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrSurvivor: a task that commands run with a [Tracker] started was
// still alive when the Tracker closed, or whether one was could not be
// established. The directories those commands could write must not be
// trusted.
var ErrSurvivor = errors.New("a process the commands started may still run")

// A Tracker follows everything the commands run with it start (set
// Command.Tracker), so that when the work they did for one request ends,
// [Tracker.Close] kills what they left behind (daemons, processes that
// called setsid or double-forked, threads of a process whose main thread
// exited, clones that send their parent no signal) and its System V IPC
// objects, and says whether anything may still run.
//
// Two mechanisms, the kernel's own where it allows:
//
//   - Namespaces. Each command starts in a new user, PID and IPC
//     namespace. It keeps this process's credentials, and so its access
//     to files; no user is mapped into its user namespace, so it sees
//     itself, and files of its user, as the overflow user (65534).
//     The command's main process is the init of its PID namespace: when it
//     exits, the kernel kills every other task in the namespace and waits
//     for them to be gone before the main process can be reaped, and no
//     task can leave a PID namespace. So once Run returns, nothing the
//     command started runs any more, and the IPC namespace, with every
//     shared memory segment, semaphore set and message queue in it, is
//     freed. The main process ignores a signal it has no handler for,
//     SIGTERM included, as every init does: a command stopped by a timeout
//     that does not handle SIGTERM is killed after its grace.
//   - Otherwise (user namespaces refused, as Kubernetes' RuntimeDefault
//     seccomp profile and some kernels do), the process tree: with
//     [AdoptOrphans], every process a command leaves behind is re-parented
//     to this process, however it detached. Close kills every child of
//     this process that started since the Tracker was made and is not a
//     running command, nor in the process group of one or of this process
//     (those it cannot attribute, and does not kill: Close then reports
//     ErrSurvivor), reaps them, and reads again until a reading finds
//     none. It removes the System V shared memory segments this user
//     created since, whose creator no longer runs; and, at the first
//     Close that finds no command running in this IPC namespace, the
//     semaphore sets and message queues this user created since the
//     first of the Trackers closed meanwhile began (the kernel does not
//     record their creator).
//
// A Tracker is made per request; its commands may run concurrently.
type Tracker struct {
	// NoNamespaces makes the Tracker follow the process tree even where
	// the kernel allows namespaces. Set it before the first Run. A
	// server with many requests in flight wants it: Go starts a command
	// in a new user namespace only with a full fork, which copies this
	// process's page tables and turns its next write to each page into a
	// copy-on-write fault, a cost that grows with the process's memory
	// and falls on all its goroutines (a vfork otherwise).
	NoNamespaces bool

	mark    Mark
	started time.Time

	mu      sync.Mutex
	running int
	closed  bool
	ns      bool // every command so far ran in its own namespaces
	ran     bool
	stop    chan struct{} // closed by Stop; made on first use
	cause   error         // Stop's cause
}

// NewTracker returns a Tracker of the commands started from now on.
func NewTracker() *Tracker {
	return &Tracker{mark: Now(), started: time.Now(), ns: true}
}

// Namespaced reports whether every command run with t so far ran in its
// own namespaces.
func (t *Tracker) Namespaced() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ns
}

// Stop kills the commands running with t at once (SIGKILL to their
// process groups, with no grace) and makes their Run return an error
// matching cause with errors.Is; a later Run with t fails without
// starting its command. A server calls it when a request's commands
// pass a budget that Run does not see, such as the disk they write.
// Only the first cause is kept. Close must still be called.
func (t *Tracker) Stop(cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cause != nil {
		return
	}
	if cause == nil {
		cause = errors.New("stopped")
	}
	t.cause = cause
	if t.stop == nil {
		t.stop = make(chan struct{})
	}
	close(t.stop)
}

// Stopped returns the cause given to Stop, or nil.
func (t *Tracker) Stopped() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cause
}

// stopped returns the channel Stop closes.
func (t *Tracker) stopped() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stop == nil {
		t.stop = make(chan struct{})
	}
	return t.stop
}

// begin registers a command about to start; it fails once t is closed
// or stopped.
func (t *Tracker) begin() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errors.New("hookexec: the command's Tracker is closed")
	}
	if t.cause != nil {
		return fmt.Errorf("its request was stopped: %w", t.cause)
	}
	t.running++
	t.ran = true
	return nil
}

func (t *Tracker) end(namespaced bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.running--
	if !namespaced {
		t.ns = false
	}
}
