package deadline_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/deadline"
)

func TestRunReturnsResult(t *testing.T) {
	v, err := deadline.Run(t.Context(), time.Hour, func(context.Context) (int, error) { return 7, nil })
	if v != 7 || err != nil {
		t.Errorf("Run = %v, %v, want 7, nil", v, err)
	}
	want := errors.New("boom")
	if _, err := deadline.Run(t.Context(), 0, func(context.Context) (int, error) { return 0, want }); err != want {
		t.Errorf("Run = %v, want fn's error %v", err, want)
	}
}

func TestRunPanic(t *testing.T) {
	_, err := deadline.Run(t.Context(), 0, func(context.Context) (int, error) { panic("template blew up") })
	var pe *deadline.PanicError
	if !errors.As(err, &pe) || pe.Value != "template blew up" || err.Error() != "panic: template blew up" {
		t.Errorf("Run of a panicking fn = %v, want a *PanicError with its value", err)
	}
}

// TestRunStopped: Run returns when the context ends, while fn still runs
// (it ignores its context until released), with the context's error and
// cause; fn's late result is dropped without blocking it.
func TestRunStopped(t *testing.T) {
	release, finished := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancelCause(t.Context())
	cause := errors.New("the request was cancelled")
	cancel(cause)
	_, err := deadline.Run(ctx, 0, func(context.Context) (int, error) {
		defer close(finished)
		<-release
		return 1, nil
	})
	var stop *deadline.StoppedError
	if !errors.As(err, &stop) || stop.Err != context.Canceled || stop.Cause != cause || !errors.Is(err, cause) {
		t.Errorf("Run on an ended context = %v, want a *StoppedError of context.Canceled caused by %v", err, cause)
	}
	close(release)
	<-finished // fn's send did not block
}

func TestRunTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	_, err := deadline.Run(t.Context(), time.Millisecond, func(ctx context.Context) (int, error) {
		<-release // past its deadline, until the test ends
		return 0, nil
	})
	var stop *deadline.StoppedError
	if !errors.As(err, &stop) || !errors.Is(err, context.DeadlineExceeded) || stop.Err != context.DeadlineExceeded {
		t.Errorf("Run past its timeout = %v, want a *StoppedError of context.DeadlineExceeded", err)
	}
}
