package generator

import (
	"context"
	"errors"
	"sync/atomic"
)

// ErrBusy: a plugin's backend is at its concurrency limit and its queue is
// full.
var ErrBusy = errors.New("the plugin is busy")

// A limiter bounds the backend calls in progress and the calls waiting.
type limiter struct {
	slots    chan struct{} // nil: no bound
	waiting  atomic.Int64
	maxQueue int64
}

func newLimiter(concurrency, maxQueue int) *limiter {
	l := &limiter{maxQueue: int64(maxQueue)}
	if concurrency > 0 {
		l.slots = make(chan struct{}, concurrency)
	}
	return l
}

// acquire takes a slot, waiting in the queue if there is room in it, until
// ctx is done. onWait is called with +1 and -1 around a wait.
func (l *limiter) acquire(ctx context.Context, onWait func(float64)) error {
	if l.slots == nil {
		return nil
	}
	select {
	case l.slots <- struct{}{}:
		return nil
	default:
	}
	if l.waiting.Add(1) > l.maxQueue {
		l.waiting.Add(-1)
		return ErrBusy
	}
	onWait(1)
	defer func() { l.waiting.Add(-1); onWait(-1) }()
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *limiter) release() {
	if l.slots != nil {
		<-l.slots
	}
}
