// Package deadline runs work that cannot be interrupted (Go templates, a
// chart's render) under a context: the caller stops waiting when the
// context ends, the work goes on until it notices, its result discarded.
package deadline

import (
	"context"
	"fmt"
	"time"
)

// A StoppedError is Run's error when the context ended before the work
// did.
type StoppedError struct {
	// Err is the context's error (context.Canceled or
	// context.DeadlineExceeded), Cause its cause (context.Cause).
	Err, Cause error
}

func (e *StoppedError) Error() string { return "stopped: " + e.Cause.Error() }
func (e *StoppedError) Unwrap() error { return e.Cause }

// A PanicError is Run's error when the work panicked.
type PanicError struct{ Value any }

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Run runs fn on a goroutine of its own with ctx, bounded by timeout when
// it is positive, and returns fn's results. When ctx (or the timeout) ends
// first, Run returns at once with a *StoppedError; fn keeps running until
// it sees its context end, and what it returns then is dropped. A panic in
// fn is returned as a *PanicError instead of ending the program.
func Run[T any](ctx context.Context, timeout time.Duration, fn func(context.Context) (T, error)) (T, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1) // fn's send never blocks, even when no one waits
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{err: &PanicError{Value: p}}
			}
		}()
		v, err := fn(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, &StoppedError{Err: ctx.Err(), Cause: context.Cause(ctx)}
	}
}
