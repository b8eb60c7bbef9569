package eventually_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/eventually"
)

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, as testing's does.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls Within in a goroutine of its own, as Fatalf ends it.
func run(timeout time.Duration, cond func() (bool, string)) (returned bool, msg string) {
	r := &recorder{}
	done := make(chan bool)
	go func() {
		ok := false
		defer func() { done <- ok }()
		eventually.Within(r, timeout, "the thing", cond)
		ok = true
	}()
	return <-done, r.msg
}

func TestWithin(t *testing.T) {
	var calls atomic.Int32
	tests := []struct {
		name     string
		timeout  time.Duration
		cond     func() (bool, string)
		returned bool
		msg      string
	}{
		{"holds at once", time.Hour, func() (bool, string) { return true, "" }, true, ""},
		{"holds on the third poll", time.Hour, func() (bool, string) { return calls.Add(1) == 3, "" }, true, ""},
		{"never holds", 0, func() (bool, string) { return false, "n=1" }, false, "the thing: still not so after 0s; last seen: n=1"},
		{"never holds, no state", 0, func() (bool, string) { return false, "" }, false, "the thing: still not so after 0s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			returned, msg := run(tc.timeout, tc.cond)
			if returned != tc.returned || msg != tc.msg {
				t.Errorf("Within returned %v, failed with %q; want %v, %q", returned, msg, tc.returned, tc.msg)
			}
		})
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("the third-poll condition was called %d times, want 3", n)
	}
}
