package memlimit

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// ErrBudget is wrapped by the error of a request refused by a Budget
// whose BudgetOptions name no error of their own.
var ErrBudget = errors.New("the request needs more memory than the server's budget")

// The small requests' part of a budget: the first smallChunk bytes of
// each request are taken from an eighth of the budget kept for them, when
// the budget is at least minSmallPoolBudget, so that a request printing a
// few parameter sets or manifests does not queue behind large ones (its
// command may have exited, its output in the pipe, by the time it waits).
const (
	smallChunk         = 128 << 10
	minSmallPoolBudget = 8 << 20
)

// freeAfter is the reservation past which the end of a request returns
// the memory the Go runtime holds to the system (debug.FreeOSMemory),
// so that a server that read one large output does not keep its pages.
const freeAfter = 64 << 20

// BudgetOptions say how a Budget's errors read.
type BudgetOptions struct {
	// Knob names what sets the budget's size ("--memory-budget, by
	// default ..."): the errors name it, so that a user knows what to
	// raise.
	Knob string
	// Server names the server in errors ("sidecar", "generator server").
	Server string
	// Advice is what the user of a request that is too large may do
	// besides raising the memory limit ("split the application into
	// smaller ones").
	Advice string
	// Err is wrapped by every refusal (ErrBudget when nil): a server's
	// sentinel that its callers check with errors.Is.
	Err error
}

// A Budget bounds the memory the requests of a server hold at once for
// their work: a request begins a reservation (Begin), its work takes from
// the budget what the output of its commands takes as it arrives (Stream)
// and what working on the output is estimated to cost (Reserve), and holds
// it until the request ends, so that what the requests hold never passes
// the budget. A request that needs more than the whole budget is refused
// at once. One that needs more than is free waits, in order of arrival,
// until its deadline, keeping what it holds, as long as some request
// holding part of the budget is not waiting (and so will give its part
// back); when every request holding part of it waits, none would, and the
// one holding the least is refused. The sidecar (cmp serve --memory-budget)
// and the generator server (generator serve --memory-budget) use it.
type Budget struct {
	size     int64
	most     int64 // what one request may hold: size less the small part, plus a smallChunk
	mainSize int64 // of sem
	sem      *semaphore.Weighted
	held     atomic.Int64
	freeing  atomic.Bool
	o        BudgetOptions
	// onRefuse, when set, is called once for each refusal (OnRefuse).
	onRefuse func()

	// small is the part of the budget kept for the first smallChunk
	// bytes of each request, which never wait behind large requests
	// (nil for a budget too small to spare it); sem has the rest.
	small *semaphore.Weighted

	mu sync.Mutex
	// holders are the requests holding part of sem, mainHeld what they
	// hold of it; waiting, the requests waiting for more of it, of which
	// waitingHolders hold part of it.
	holders        int
	mainHeld       int64
	waiting        map[*reservation]waiter
	waitingHolders int
	seq            uint64
}

// A waiter is a request waiting for n bytes of a budget: seq orders the
// waits (as the semaphore queues them), holds says it holds part of the
// budget, cancel ends its wait.
type waiter struct {
	n      int64
	seq    uint64
	holds  bool
	cancel context.CancelCauseFunc
}

// errPreempted is the cause of the wait of the request refused because
// every request holding part of the budget waited for more.
var errPreempted = errors.New("every request holding part of the memory budget waited for more of it")

// NewBudget returns a budget of size bytes, or nil (no budget: every
// method does nothing) for size <= 0.
func NewBudget(size int64, o BudgetOptions) *Budget {
	if size <= 0 {
		return nil
	}
	if o.Err == nil {
		o.Err = ErrBudget
	}
	if o.Server == "" {
		o.Server = "server"
	}
	b := &Budget{size: size, o: o, waiting: map[*reservation]waiter{}}
	pool := int64(0)
	if size >= minSmallPoolBudget {
		pool = size / 8
		b.small = semaphore.NewWeighted(pool)
	}
	b.sem = semaphore.NewWeighted(size - pool)
	b.mainSize = size - pool
	b.most = size
	if pool > 0 {
		b.most = size - pool + smallChunk
	}
	return b
}

// OnRefuse sets a function called at each refusal (a metric's Inc).
func (b *Budget) OnRefuse(f func()) {
	if b != nil {
		b.onRefuse = f
	}
}

// Size is the budget in bytes; 0 for none.
func (b *Budget) Size() int64 {
	if b == nil {
		return 0
	}
	return b.size
}

// Held is what the requests hold of the budget now.
func (b *Budget) Held() int64 {
	if b == nil {
		return 0
	}
	return b.held.Load()
}

// refuse counts a refusal and returns err.
func (b *Budget) refuse(err error) error {
	if b.onRefuse != nil {
		b.onRefuse()
	}
	return err
}

// A reservation is what one request holds of a Budget: n in all, of which
// streamed for the output of its commands as it arrived (Stream). held
// mirrors n for the victim choice of another request, which may not take
// mu.
type reservation struct {
	b        *Budget
	mu       sync.Mutex
	n        int64 // small + main
	small    int64 // of b.small
	main     int64 // of b.sem
	credit   int64 // of main, paid ahead (Prepay) and not yet used
	streamed int64
	held     atomic.Int64 // main
}

type reservationKey struct{}

// Begin starts a request's reservation: the work under the returned
// context acquires with Reserve and Stream, and end releases all of it.
func (b *Budget) Begin(ctx context.Context) (_ context.Context, end func()) {
	if b == nil {
		return ctx, func() {}
	}
	r := &reservation{b: b}
	return context.WithValue(ctx, reservationKey{}, r), r.end
}

// WithReservationOf returns ctx carrying the reservation of from, if it
// has one: work done on behalf of the request of from, under a context of
// its own (one that outlives the request), takes from its reservation.
func WithReservationOf(ctx, from context.Context) context.Context {
	if r, ok := from.Value(reservationKey{}).(*reservation); ok {
		return context.WithValue(ctx, reservationKey{}, r)
	}
	return ctx
}

func (r *reservation) end() {
	r.mu.Lock()
	n, small, main := r.n, r.small, r.main
	r.n, r.small, r.main, r.streamed, r.credit = 0, 0, 0, 0, 0
	r.held.Store(0)
	r.mu.Unlock()
	if n == 0 {
		return
	}
	if small > 0 {
		r.b.small.Release(small)
	}
	if main > 0 {
		// Counted free before it is, never the other way round: a wait
		// that begins meanwhile must not see a stalemate that is not.
		r.b.mu.Lock()
		r.b.holders--
		r.b.mainHeld -= main
		r.b.mu.Unlock()
		r.b.sem.Release(main)
		r.b.mu.Lock()
		r.b.preempt()
		r.b.mu.Unlock()
	}
	r.b.held.Add(-n)
	if n >= freeAfter && r.b.freeing.CompareAndSwap(false, true) {
		// The garbage of a large output would otherwise stay mapped
		// until the runtime's scavenger returns it, minutes later.
		go func() {
			defer r.b.freeing.Store(false)
			debug.FreeOSMemory()
		}()
	}
}

// Reserve acquires n bytes of the budget for the request of ctx, for what
// is described by what (for errors), and holds them until the request
// ends. Without a reservation in ctx it does nothing.
func Reserve(ctx context.Context, n int64, what string) error {
	r, _ := ctx.Value(reservationKey{}).(*reservation)
	if r == nil || n <= 0 {
		return nil
	}
	b := r.b
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n-r.credit+n > b.most {
		besides := ""
		if r.n > 0 {
			besides = fmt.Sprintf(" besides the %s the request holds", mib(r.n))
		}
		return b.refuse(fmt.Errorf("%w: %s takes an estimated %s of memory%s, and the requests of the %s may hold %s at once (%s); "+
			"%s, or raise the %s's memory limit",
			b.o.Err, what, mib(n), besides, b.o.Server, mib(b.size), b.o.Knob, b.o.Advice, b.o.Server))
	}
	if err := r.acquire(ctx, n); err != nil {
		return b.refuse(fmt.Errorf("%w: waiting for %s of the %s's memory budget (%s; %s; %s held by other requests) for %s: %w; retry later, or raise the %s's memory limit",
			b.o.Err, mib(n), b.o.Server, mib(b.size), b.o.Knob, mib(b.held.Load()-r.n), what, err, b.o.Server))
	}
	return nil
}

// Stream returns the hookexec.Command.Reserve of a command of the request
// of ctx, whose output is described by what: the buffer holding its
// stdout takes from the budget as it grows. When the budget has no room,
// the request waits, its command blocked on its full pipe (see Budget).
// An output that alone would pass the whole budget is refused, and so is
// one still waiting at the request's deadline or chosen to give way; the
// refusal kills the command. Nil without a reservation.
func Stream(ctx context.Context, what string) func(int64) error {
	r, _ := ctx.Value(reservationKey{}).(*reservation)
	if r == nil {
		return nil
	}
	return func(n int64) error {
		b := r.b
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.n-r.credit+n > b.most {
			return b.refuse(fmt.Errorf("%w: %s printed %s and went on, which would take more than the memory the requests of the %s may hold at once (%s; %s); "+
				"print less, %s, or raise the %s's memory limit",
				b.o.Err, what, mib(r.streamed), b.o.Server, mib(b.size), b.o.Knob, b.o.Advice, b.o.Server))
		}
		if err := r.acquire(ctx, n); err != nil {
			return b.refuse(fmt.Errorf("%w: %s printed %s and went on, and no room came in the %s's memory budget (%s; %s; %s held by other requests): %w; retry later, or raise the %s's memory limit",
				b.o.Err, what, mib(r.streamed), b.o.Server, mib(b.size), b.o.Knob, mib(b.held.Load()-r.n), err, b.o.Server))
		}
		r.streamed += n
		return nil
	}
}

// acquire takes n more bytes for r, waiting when there is no room (see
// Budget); r.mu is held. Its error is the cause of a failed wait: the
// request's own, or errPreempted.
func (r *reservation) acquire(ctx context.Context, n int64) error {
	b := r.b
	if r.credit >= n {
		r.credit -= n
		return nil
	}
	n -= r.credit
	r.credit = 0
	if b.small != nil && r.small+n <= smallChunk && b.small.TryAcquire(n) {
		r.small += n
		r.n += n
		b.held.Add(n)
		return nil
	}
	return r.acquireMain(ctx, n)
}

// acquireMain takes n bytes of b.sem for r, waiting when there is no room;
// r.mu is held.
func (r *reservation) acquireMain(ctx context.Context, n int64) error {
	b := r.b
	if !b.sem.TryAcquire(n) {
		if err := r.wait(ctx, n); err != nil {
			return err
		}
	}
	b.mu.Lock()
	if r.main == 0 {
		b.holders++
	}
	b.mainHeld += n
	b.mu.Unlock()
	r.main += n
	r.n += n
	r.held.Store(r.main)
	b.held.Add(n)
	return nil
}

// wait waits for n bytes of the budget. A request holding nothing waits
// until its deadline: others hold what it waits for and give it back when
// they end. A request holding part of the budget waits likewise unless
// every request holding part of it would then be waiting: none would give
// anything back, so the one holding the least has its wait cancelled (it
// loses the least work, and the one holding the most always goes on).
func (r *reservation) wait(ctx context.Context, n int64) error {
	b := r.b
	wctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	holds := r.main > 0
	b.mu.Lock()
	b.seq++
	b.waiting[r] = waiter{n: n, seq: b.seq, holds: holds, cancel: cancel}
	if holds {
		b.waitingHolders++
	}
	b.preempt()
	b.mu.Unlock()
	err := b.sem.Acquire(wctx, n)
	b.mu.Lock()
	if w, ok := b.waiting[r]; ok {
		delete(b.waiting, r)
		if w.holds {
			b.waitingHolders--
		}
	}
	b.mu.Unlock()
	if err != nil {
		if cause := context.Cause(wctx); errors.Is(cause, errPreempted) {
			return fmt.Errorf("%w, and this one held the least (%s)", cause, mib(r.main))
		}
		return context.Cause(ctx)
	}
	return nil
}

// preempt cancels the wait of the waiting request holding the least when
// every request holding part of the budget waits; b.mu is held. It runs
// when a request begins to wait and when a holder ends (what it gave back
// may not be enough for the first in line).
func (b *Budget) preempt() {
	if b.holders == 0 || b.waitingHolders < b.holders {
		return
	}
	// The first in line gets what it waits for when there is room for it
	// (it may have got it already, and not yet left the waiting).
	var first, victim *reservation
	for r, w := range b.waiting {
		if first == nil || w.seq < b.waiting[first].seq {
			first = r
		}
		if w.holds && (victim == nil || r.held.Load() < victim.held.Load()) {
			victim = r
		}
	}
	if b.waiting[first].n <= b.mainSize-b.mainHeld {
		return
	}
	b.waiting[victim].cancel(errPreempted)
	delete(b.waiting, victim)
	b.waitingHolders--
}

// Prepay acquires n bytes of the budget for the request of ctx ahead of
// its work, in one piece: what its output is expected to cost (the
// previous output of the same command, say). The request's Stream and
// Reserve take from it first, so that a request whose output is as large
// as expected waits once, holding nothing, instead of at each growth of
// its buffer while holding part of the budget. n is capped to what one
// request may hold. Without a reservation in ctx it does nothing.
func Prepay(ctx context.Context, n int64, what string) error {
	r, _ := ctx.Value(reservationKey{}).(*reservation)
	if r == nil || n <= 0 {
		return nil
	}
	b := r.b
	r.mu.Lock()
	defer r.mu.Unlock()
	n = min(n, b.most-smallChunk-r.n)
	if n <= 0 || r.credit > 0 {
		return nil
	}
	if err := r.acquireMain(ctx, n); err != nil {
		return b.refuse(fmt.Errorf("%w: waiting for %s of the %s's memory budget (%s; %s; %s held by other requests) for %s: %w; retry later, or raise the %s's memory limit",
			b.o.Err, mib(n), b.o.Server, mib(b.size), b.o.Knob, mib(b.held.Load()-r.n), what, err, b.o.Server))
	}
	r.credit = n
	return nil
}

// mib formats n bytes in MiB.
func mib(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
