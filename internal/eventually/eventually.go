// Package eventually is test support: it waits for a condition that some
// other goroutine or process makes true, by polling it. It is the one
// polling helper of strata's tests; prefer waiting on an event (a channel,
// a returned call) when the code under test offers one.
//
// Only tests import it (layering_test.go keeps it out of cmd/strata).
package eventually

import (
	"testing"
	"time"
)

// DefaultTimeout is how long True waits: generous, since only a broken
// program takes it, and a loaded machine must not fail a correct one.
const DefaultTimeout = time.Minute

// maxInterval bounds the pause between two polls; the first pauses are
// shorter, so that a condition that soon holds is seen soon.
const maxInterval = 100 * time.Millisecond

// True polls cond until it reports true, and fails t (t.Fatalf) when it
// has not after DefaultTimeout. cond returns, besides whether it holds, a
// description of the state it saw: the failure message ends with the last
// one, after what (the condition, in words).
func True(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	Within(t, DefaultTimeout, what, cond)
}

// Within is True with its own timeout.
func Within(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(timeout)
	pause := time.Millisecond
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(end) {
			if state == "" {
				t.Fatalf("%s: still not so after %v", what, timeout)
			}
			t.Fatalf("%s: still not so after %v; last seen: %s", what, timeout, state)
		}
		time.Sleep(pause)
		pause = min(2*pause, maxInterval)
	}
}
