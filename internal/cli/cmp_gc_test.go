package cli

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"

	"github.com/strata-dev/strata/internal/eventually"
)

// gcSettings reads GOGC and the memory limit in force.
func gcSettings() (gogc, limit uint64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// unsetenv unsets name for the test, restoring it after.
func unsetenv(t *testing.T, name string) {
	t.Setenv(name, "")
	os.Unsetenv(name)
}

// TestOneShotGC: a one-shot run collects nothing until its heap nears
// oneShotHeap, then collects as GOGC=400; GOGC in the environment leaves
// the collector alone, GOMEMLIMIT keeps GOGC=400 from the start.
func TestOneShotGC(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
	unsetenv(t, "GOGC")
	unsetenv(t, "GOMEMLIMIT")
	oneShotGC()
	if gogc, limit := gcSettings(); gogc < 10_000 || limit != oneShotHeap {
		t.Fatalf("after oneShotGC: GOGC %d, limit %d; want no collection by GOGC and a limit of %d", gogc, limit, oneShotHeap)
	}
	// A collection (as the limit would start) frees the sentinel.
	runtime.GC()
	eventually.True(t, "GOGC=400 and no limit after the first collection", func() (bool, string) {
		runtime.GC()
		gogc, limit := gcSettings()
		return gogc == oneShotGOGC && limit == math.MaxInt64, fmt.Sprintf("GOGC %d, limit %d", gogc, limit)
	})

	debug.SetGCPercent(100)
	t.Setenv("GOMEMLIMIT", "1GiB")
	oneShotGC()
	if gogc, limit := gcSettings(); gogc != oneShotGOGC || limit != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT: GOGC %d, limit %d; want GOGC=400 and the limit left alone", gogc, limit)
	}
	debug.SetGCPercent(100)
	t.Setenv("GOGC", "100")
	oneShotGC()
	if gogc, _ := gcSettings(); gogc != 100 {
		t.Errorf("with GOGC: GOGC %d, want it left alone", gogc)
	}
}
