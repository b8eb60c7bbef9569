// Package queue holds the operator's task queues: the "main" queue and
// named queues, each a FIFO worked by one goroutine, as addon-operator's
// are.
//
// A task is handled until it succeeds. A failed task stays at the head of
// its queue and is retried after a backoff that grows from 5 s to about
// 30 s with jitter (Options.Backoff makes it fast in tests); a task marked
// AllowFailure turns a failure into success, reported to Options.OnDone.
// A handler may return follow-up tasks, which go to the head of the same
// queue, in order, before anything queued later: that is how a converge
// unfolds into its hook runs and module runs.
//
// Tasks with the same non-empty CompactKey are compacted: a task added
// while another one with its key waits (queued, not running, not in
// backoff) is merged into that one by Options.Merge, or dropped when Merge
// is nil. Repeated runs of one hook in a long queue become one run with all
// of their binding contexts. A task marked Neighbour is merged only into
// the task queued last in its queue, as shell-operator combines only
// consecutive runs of one hook: a run queued after another task keeps its
// place behind it, so events are handled in the order they came.
package queue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Main is the name of the queue every lifecycle task goes to.
const Main = "main"

// Defaults of Options' zero values.
const (
	DefaultBackoffInitial = 5 * time.Second
	DefaultBackoffMax     = 30 * time.Second
	// DefaultMaxQueues bounds the named queues hook configs may create.
	DefaultMaxQueues = 256
)

// ErrTooManyQueues is returned by Add for a queue beyond Options.MaxQueues.
var ErrTooManyQueues = errors.New("too many named queues")

// A Task is one unit of work. The queue reads Queue, CompactKey and
// AllowFailure; Kind, Description and Data belong to the handler.
type Task struct {
	// Queue is the queue's name; "" is Main.
	Queue string
	// Kind names what the task does (GlobalHookRun, ModuleRun, ...).
	Kind string
	// Description is a one-line summary for listings and logs.
	Description string
	// CompactKey, when set, makes the task compactable with others of the
	// same key (see the package doc).
	CompactKey string
	// Neighbour, with CompactKey, merges the task only into the last task
	// of its queue (when that one has the key and waits), not into any
	// waiting task with the key.
	Neighbour bool
	// AllowFailure turns a failed run into a success.
	AllowFailure bool
	// Data is the handler's payload.
	Data any

	id       uint64
	enqueued time.Time
	attempts int
	lastErr  string
	running  bool
	backoff  bool
}

// ID is the task's number, unique within a Set, given by Add.
func (t *Task) ID() uint64 { return t.id }

// Enqueued is when the task was added.
func (t *Task) Enqueued() time.Time { return t.enqueued }

// Attempts is how many times the task has failed so far.
func (t *Task) Attempts() int { return t.attempts }

// Handler runs one task. It returns the tasks to put at the head of the
// queue (after the handled task is removed) and an error when the task
// failed; a failed task's follow-ups are discarded.
type Handler func(ctx context.Context, t *Task) ([]*Task, error)

// Options configure a Set. The zero value is addon-operator's behaviour.
type Options struct {
	// Backoff returns the delay before retry number attempt (1 for the
	// first retry). Nil means DefaultBackoff.
	Backoff func(attempt int) time.Duration
	// Merge merges newer into older, both with the same CompactKey; nil
	// drops newer.
	Merge func(older, newer *Task)
	// OnDone, when set, is called after each run of a task: err is the
	// handler's error (nil on success), allowed is true when it was
	// forgiven by AllowFailure.
	OnDone func(t *Task, err error, allowed bool, took time.Duration)
	// OnAction, when set, is told how long each action on a queue took:
	// "AddLast" (a task appended or compacted into one queued), "AddFirst"
	// (follow-up tasks put at the head), "GetFirst" (the head taken to
	// run) and "RemoveFirst" (a finished head removed), the names
	// addon-operator's tasks_queue_action_duration_seconds uses. Called
	// without the Set's lock held.
	OnAction func(queue, action string, took time.Duration)
	// MaxQueues bounds the number of queues; 0 means DefaultMaxQueues,
	// negative no bound.
	MaxQueues int
	// History is how many finished runs History keeps, the latest; 0
	// means DefaultHistory, negative none.
	History int
}

// DefaultHistory is how many finished task runs a Set remembers.
const DefaultHistory = 500

// DefaultBackoff is 5 s doubling to 30 s, each delay with ±10 % jitter.
func DefaultBackoff(attempt int) time.Duration {
	return Exponential(DefaultBackoffInitial, DefaultBackoffMax)(attempt)
}

// Exponential returns a backoff doubling from initial up to max, each
// delay varied by up to ±10 % so that retries of several queues spread.
func Exponential(initial, max time.Duration) func(int) time.Duration {
	return func(attempt int) time.Duration {
		d := initial
		for i := 1; i < attempt && d < max; i++ {
			d *= 2
		}
		d = min(d, max)
		jitter := time.Duration(rand.Int64N(int64(d)/5+1)) - d/10
		return max0(d + jitter)
	}
}

func max0(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// A Set is the operator's queues. Create it with New, start it with Run.
type Set struct {
	opts    Options
	handler Handler

	mu      sync.Mutex
	queues  map[string]*queue
	order   []string // queue names in creation order, Main first
	nextID  uint64
	ctx     context.Context // set by Run
	wg      sync.WaitGroup
	changed chan struct{} // closed and replaced on every state change
	history []RunInfo     // ring of the last finished runs
	histAt  int           // next slot of history to write once it is full
}

type queue struct {
	name  string
	tasks []*Task
	wake  chan struct{}
}

// New returns a Set with the Main queue; handler runs every task.
func New(handler Handler, opts Options) *Set {
	if opts.Backoff == nil {
		opts.Backoff = DefaultBackoff
	}
	if opts.MaxQueues == 0 {
		opts.MaxQueues = DefaultMaxQueues
	}
	if opts.History == 0 {
		opts.History = DefaultHistory
	}
	s := &Set{opts: opts, handler: handler, queues: map[string]*queue{}, changed: make(chan struct{})}
	s.queueLocked(Main)
	return s
}

func (s *Set) queueLocked(name string) *queue {
	q := s.queues[name]
	if q == nil {
		q = &queue{name: name, wake: make(chan struct{}, 1)}
		s.queues[name] = q
		s.order = append(s.order, name)
		if s.ctx != nil {
			s.start(q)
		}
	}
	return q
}

// notifyLocked wakes whoever waits for a change of state.
func (s *Set) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Add appends tasks to the tails of their queues, compacting where their
// keys allow (see the package doc).
func (s *Set) Add(tasks ...*Task) error {
	if s.opts.OnAction != nil && len(tasks) > 0 {
		start := time.Now()
		defer func() {
			took := time.Since(start)
			for _, t := range tasks {
				s.opts.OnAction(t.Queue, "AddLast", took/time.Duration(len(tasks)))
			}
		}()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range tasks {
		if t.Queue == "" {
			t.Queue = Main
		}
		q := s.queues[t.Queue]
		if q == nil {
			if s.opts.MaxQueues > 0 && len(s.queues) >= s.opts.MaxQueues {
				return fmt.Errorf("queue %q: %w (at most %d); use fewer distinct queue names in hook configs", t.Queue, ErrTooManyQueues, s.opts.MaxQueues)
			}
			q = s.queueLocked(t.Queue)
		}
		if s.compactLocked(q, t) {
			continue
		}
		s.nextID++
		t.id = s.nextID
		t.enqueued = time.Now()
		q.tasks = append(q.tasks, t)
		poke(q)
	}
	s.notifyLocked()
	return nil
}

func (s *Set) compactLocked(q *queue, t *Task) bool {
	if t.CompactKey == "" {
		return false
	}
	cands := q.tasks
	if t.Neighbour && len(cands) > 0 {
		cands = cands[len(cands)-1:]
	}
	for _, old := range cands {
		if old.CompactKey == t.CompactKey && !old.running && !old.backoff {
			if s.opts.Merge != nil {
				s.opts.Merge(old, t)
			}
			return true
		}
	}
	return false
}

func poke(q *queue) {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Run works the queues until ctx is done, then waits for the running
// tasks to return (their context is ctx) and returns.
func (s *Set) Run(ctx context.Context) {
	s.mu.Lock()
	s.ctx = ctx
	for _, name := range s.order {
		s.start(s.queues[name])
	}
	s.mu.Unlock()
	<-ctx.Done()
	s.wg.Wait()
}

func (s *Set) start(q *queue) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.work(s.ctx, q)
	}()
}

func (s *Set) work(ctx context.Context, q *queue) {
	for {
		taken := time.Now()
		s.mu.Lock()
		var t *Task
		if len(q.tasks) > 0 {
			t = q.tasks[0]
			t.running, t.backoff = true, false
			s.notifyLocked()
		}
		s.mu.Unlock()
		if t != nil {
			s.action(q.name, "GetFirst", taken)
		}
		if t == nil {
			select {
			case <-ctx.Done():
				return
			case <-q.wake:
				continue
			}
		}
		start := time.Now()
		next, err := s.call(ctx, t)
		took := time.Since(start)
		if ctx.Err() != nil && err != nil {
			// Stopped mid-task: leave it queued, as a restart would find it.
			s.mu.Lock()
			t.running = false
			s.notifyLocked()
			s.mu.Unlock()
			return
		}
		allowed := err != nil && t.AllowFailure
		if s.opts.OnDone != nil {
			s.opts.OnDone(t, err, allowed, took)
		}
		removed := time.Now()
		s.mu.Lock()
		s.recordLocked(t, start, took, err, allowed)
		t.running = false
		if err == nil || allowed {
			q.tasks = q.tasks[1:]
			var added time.Time
			if err == nil && len(next) > 0 {
				added = time.Now()
				for _, n := range next {
					n.Queue = q.name
					s.nextID++
					n.id = s.nextID
					n.enqueued = added
				}
				q.tasks = slices.Insert(q.tasks, 0, next...)
			}
			s.notifyLocked()
			s.mu.Unlock()
			s.action(q.name, "RemoveFirst", removed)
			if !added.IsZero() {
				s.action(q.name, "AddFirst", added)
			}
			continue
		}
		t.attempts++
		t.lastErr = err.Error()
		t.backoff = true
		delay := s.opts.Backoff(t.attempts)
		s.notifyLocked()
		s.mu.Unlock()
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// action reports an action on queue name that began at start.
func (s *Set) action(name, action string, start time.Time) {
	if s.opts.OnAction != nil {
		s.opts.OnAction(name, action, time.Since(start))
	}
}

// call runs the handler; a panic becomes the task's error, so that one
// bad task cannot take the operator down (it stays at the head and is
// retried like any failure).
func (s *Set) call(ctx context.Context, t *Task) (next []*Task, err error) {
	defer func() {
		if r := recover(); r != nil {
			next, err = nil, fmt.Errorf("task %s panicked: %v", t.Description, r)
		}
	}()
	return s.handler(ctx, t)
}

// Idle reports whether every queue is empty.
func (s *Set) Idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idleLocked()
}

func (s *Set) idleLocked() bool {
	for _, q := range s.queues {
		if len(q.tasks) > 0 {
			return false
		}
	}
	return true
}

// WaitIdle blocks until every queue is empty or ctx is done.
func (s *Set) WaitIdle(ctx context.Context) error {
	for {
		s.mu.Lock()
		idle, ch := s.idleLocked(), s.changed
		s.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// WaitFailing blocks until some task has failed at least min times (it
// is then in backoff) and returns a snapshot of it, or until ctx is done.
// Callers that must stop on the first failure (a one-shot render) use it.
func (s *Set) WaitFailing(ctx context.Context, min int) (TaskInfo, error) {
	for {
		s.mu.Lock()
		ch := s.changed
		for _, name := range s.order {
			for _, t := range s.queues[name].tasks {
				if t.attempts >= min && t.backoff {
					info := info(t)
					s.mu.Unlock()
					return info, nil
				}
			}
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return TaskInfo{}, ctx.Err()
		case <-ch:
		}
	}
}

// Changed returns a channel closed at the next change of any queue.
func (s *Set) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Len is the number of tasks in the named queue.
func (s *Set) Len(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[name]; q != nil {
		return len(q.tasks)
	}
	return 0
}

// Pending reports whether a task of queue name satisfies match and is
// neither running nor in backoff.
func (s *Set) Pending(name string, match func(*Task) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[name]
	if q == nil {
		return false
	}
	return slices.ContainsFunc(q.tasks, func(t *Task) bool { return !t.running && !t.backoff && match(t) })
}

// Has reports whether queue name holds a task, queued, running or in
// backoff, for which match is true.
func (s *Set) Has(name string, match func(*Task) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[name]
	if q == nil {
		return false
	}
	return slices.ContainsFunc(q.tasks, match)
}

// TaskInfo is a task as listings show it.
type TaskInfo struct {
	ID          uint64    `json:"id"`
	Kind        string    `json:"kind"`
	Description string    `json:"description"`
	Status      string    `json:"status"` // queued, running or backoff
	Attempts    int       `json:"attempts,omitempty"`
	LastError   string    `json:"lastError,omitempty"`
	Enqueued    time.Time `json:"enqueued"`
}

// QueueInfo is a queue as listings show it.
type QueueInfo struct {
	Name  string     `json:"name"`
	Tasks []TaskInfo `json:"tasks"`
}

func info(t *Task) TaskInfo {
	status := "queued"
	switch {
	case t.running:
		status = "running"
	case t.backoff:
		status = "backoff"
	}
	return TaskInfo{ID: t.id, Kind: t.Kind, Description: t.Description, Status: status, Attempts: t.attempts, LastError: t.lastErr, Enqueued: t.enqueued}
}

// RunInfo is one finished run of a task, as the task history shows it.
type RunInfo struct {
	ID          uint64    `json:"id"`
	Queue       string    `json:"queue"`
	Kind        string    `json:"kind"`
	Description string    `json:"description"`
	Started     time.Time `json:"started"`
	// Duration is in seconds.
	Duration float64 `json:"duration"`
	// Outcome is succeeded, failed (the task stays at its queue's head
	// and is retried) or allowedFailure (failed, forgiven by
	// allowFailure, and removed).
	Outcome string `json:"outcome"`
	// Attempt counts the task's runs, 1 for the first.
	Attempt int    `json:"attempt"`
	Error   string `json:"error,omitempty"`
}

func (s *Set) recordLocked(t *Task, start time.Time, took time.Duration, err error, allowed bool) {
	if s.opts.History < 0 {
		return
	}
	r := RunInfo{ID: t.id, Queue: t.Queue, Kind: t.Kind, Description: t.Description, Started: start,
		Duration: took.Seconds(), Outcome: "succeeded", Attempt: t.attempts + 1}
	if r.Queue == "" {
		r.Queue = Main
	}
	if err != nil {
		r.Outcome, r.Error = "failed", err.Error()
		if allowed {
			r.Outcome = "allowedFailure"
		}
	}
	if len(s.history) < s.opts.History {
		s.history = append(s.history, r)
		return
	}
	s.history[s.histAt] = r
	s.histAt = (s.histAt + 1) % len(s.history)
}

// History returns the last finished runs of tasks (Options.History of
// them), oldest first.
func (s *Set) History() []RunInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]RunInfo, 0, len(s.history))
	out = append(out, s.history[s.histAt:]...)
	return append(out, s.history[:s.histAt]...)
}

// Snapshot lists every queue (Main first, then in creation order) with
// its tasks.
func (s *Set) Snapshot() []QueueInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]QueueInfo, 0, len(s.order))
	for _, name := range s.order {
		q := s.queues[name]
		qi := QueueInfo{Name: name, Tasks: make([]TaskInfo, 0, len(q.tasks))}
		for _, t := range q.tasks {
			qi.Tasks = append(qi.Tasks, info(t))
		}
		out = append(out, qi)
	}
	return out
}
