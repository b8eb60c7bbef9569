package cmpserver

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// ErrMemoryBudget is wrapped by the error of a request that needs more of
// the server's memory than its whole budget (Server.MemoryBudget): it is
// refused at once, with gRPC's ResourceExhausted, instead of running the
// server out of memory.
var ErrMemoryBudget = errors.New("the plugin's output needs more memory than the sidecar's budget")

// DefaultMemoryReserve is what a sidecar holds besides its requests' work
// (the Go runtime, the gRPC connections, the repository cache's index,
// the requests' file chunks): the budget derived from a memory limit is
// the Go memory limit less this (memlimit.Limit.Budget).
const DefaultMemoryReserve = 128 << 20

// freeAfter is the reservation past which the end of a request returns
// the memory the Go runtime holds to the system (debug.FreeOSMemory),
// so that a sidecar that read one large output does not keep its pages.
const freeAfter = 64 << 20

// A memoryBudget bounds the memory the requests of a server hold at once
// for their work: each request acquires, in one piece, what its output is
// estimated to cost before it is read (manifest.EstimateMemory) and holds
// it until its answer is sent. A request that needs more than the whole
// budget is refused; one that needs more than is free waits, in order of
// arrival, until its deadline.
type memoryBudget struct {
	size    int64
	sem     *semaphore.Weighted
	held    atomic.Int64
	freeing atomic.Bool
	// knob names the setting of the budget in errors.
	knob string
}

// newMemoryBudget returns a budget of size bytes, or nil (no budget) for
// size <= 0. knob names what sets it, for the error of a refused request.
func newMemoryBudget(size int64, knob string) *memoryBudget {
	if size <= 0 {
		return nil
	}
	return &memoryBudget{size: size, sem: semaphore.NewWeighted(size), knob: knob}
}

// A reservation is what one request holds of a memoryBudget: n in all,
// of which streamed for the output of its commands as it arrived
// (streamMemory).
type reservation struct {
	b        *memoryBudget
	mu       sync.Mutex
	n        int64
	streamed int64
}

type reservationKey struct{}

// begin starts a request's reservation: the plugin's work under ctx
// acquires with reserveMemory, and end releases all of it.
func (b *memoryBudget) begin(ctx context.Context) (context.Context, func()) {
	if b == nil {
		return ctx, func() {}
	}
	r := &reservation{b: b}
	return context.WithValue(ctx, reservationKey{}, r), r.end
}

func (r *reservation) end() {
	r.mu.Lock()
	n := r.n
	r.n = 0
	r.mu.Unlock()
	if n == 0 {
		return
	}
	r.b.sem.Release(n)
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

// reserveMemory acquires n bytes of the server's memory budget for the
// request of ctx, what is described by what (for errors), and holds them
// until the request ends. Without a budget (a local run) it does nothing.
// A request may reserve once only: one that reserved before waits for
// nothing more, so that no two requests hold part of the budget while each
// waits for the other's.
func reserveMemory(ctx context.Context, n int64, what string) error {
	r, _ := ctx.Value(reservationKey{}).(*reservation)
	if r == nil || n <= 0 {
		return nil
	}
	b := r.b
	if n > b.size {
		return fmt.Errorf("%w: %s takes an estimated %s of memory, and the requests of the sidecar may hold %s at once (%s); "+
			"split the application into smaller ones, or raise the sidecar's memory limit",
			ErrMemoryBudget, what, mib(n), mib(b.size), b.knob)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n > r.streamed {
		return fmt.Errorf("%s: the request reserved memory before (a request reserves once)", what)
	}
	if b.sem.TryAcquire(n) {
		r.n += n
		b.held.Add(n)
		return nil
	}
	// Wait holding nothing, so that no two requests each hold part of
	// the budget while waiting for the other's: give back what the
	// output took as it streamed, and wait for it and n in one piece.
	// The output stays in memory meanwhile, uncounted: at most the
	// command's stdout bound.
	all := n + r.streamed
	if all > b.size {
		return fmt.Errorf("%w: %s takes an estimated %s of memory besides the %s of the output, and the requests of the sidecar may hold %s at once (%s); "+
			"split the application into smaller ones, or raise the sidecar's memory limit",
			ErrMemoryBudget, what, mib(n), mib(r.streamed), mib(b.size), b.knob)
	}
	if r.streamed > 0 {
		b.sem.Release(r.streamed)
		b.held.Add(-r.streamed)
		r.n -= r.streamed
		r.streamed = 0
	}
	if err := b.sem.Acquire(ctx, all); err != nil {
		return fmt.Errorf("waiting for %s of the sidecar's memory budget (%s, %s held by other requests) for %s: %w",
			mib(all), mib(b.size), mib(b.held.Load()), what, context.Cause(ctx))
	}
	r.n += all
	b.held.Add(all)
	return nil
}

// streamMemory returns the hookexec.Command.Reserve of a command of the
// request of ctx, whose output is described by what: the buffer holding
// its stdout takes from the budget as it grows. When the budget has no
// room, the request waits (its command blocked on its full pipe) holding
// nothing: it gives back what its output took so far and waits, in order
// of arrival, for that and the new piece together, so that no two
// requests each hold part of the budget while waiting for the other's
// (the output read so far stays in memory meanwhile, uncounted: at most
// the command's stdout bound). An output that alone would pass the whole
// budget kills the command with an error matching ErrMemoryBudget, and so
// does the request's deadline while it waits. Nil without a budget.
func streamMemory(ctx context.Context, what string) func(int64) error {
	r, _ := ctx.Value(reservationKey{}).(*reservation)
	if r == nil {
		return nil
	}
	return func(n int64) error {
		b := r.b
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.streamed+n > b.size {
			return fmt.Errorf("%w: %s printed %s and went on, which would take more than the memory the requests of the sidecar may hold at once (%s; %s); "+
				"print less, split the application into smaller ones, or raise the sidecar's memory limit",
				ErrMemoryBudget, what, mib(r.streamed), mib(b.size), b.knob)
		}
		if b.sem.TryAcquire(n) {
			r.n += n
			r.streamed += n
			b.held.Add(n)
			return nil
		}
		all := r.streamed + n
		if r.streamed > 0 {
			b.sem.Release(r.streamed)
			b.held.Add(-r.streamed)
			r.n -= r.streamed
			r.streamed = 0
		}
		if err := b.sem.Acquire(ctx, all); err != nil {
			return fmt.Errorf("%w: %s printed %s and went on, and the request's time ran out while waiting for room in the sidecar's memory budget (%s; %s; %s held by other requests); retry later, or raise the sidecar's memory limit: %w",
				ErrMemoryBudget, what, mib(all-n), mib(b.size), b.knob, mib(b.held.Load()), context.Cause(ctx))
		}
		r.n += all
		r.streamed += all
		b.held.Add(all)
		return nil
	}
}

// mib formats n bytes in MiB.
func mib(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
