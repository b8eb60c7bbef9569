package startgc

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// TestHeldThenResumed: in this test binary the collector is off from
// start-up unless GOGC is set, and comes back by itself within the
// fallback even though nothing calls Resume; Resume after that leaves a
// percentage set since alone.
func TestHeldThenResumed(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set: the collector is never held")
	}
	deadline := time.Now().Add(fallback + 5*time.Second)
	for {
		if p := gogc(); p > 0 {
			break
		} else if p == 0 {
			t.Fatal("no /gc/gogc:percent metric")
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector is still off well after the %s fallback", fallback)
		}
		time.Sleep(50 * time.Millisecond)
	}
	old := debug.SetGCPercent(250)
	defer debug.SetGCPercent(old)
	Resume()
	if p := gogc(); p != 250 {
		t.Errorf("Resume after the fallback changed the percentage to %d", p)
	}
}

// gogc reads the collector's percentage without changing it: negative
// when it is off, 0 when the metric is missing.
func gogc() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	v := s[0].Value.Uint64()
	if v > 1<<62 {
		return -1 // off reads as the largest value
	}
	return int64(v)
}
