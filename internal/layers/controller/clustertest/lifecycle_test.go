package clustertest_test

import (
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/layers/controller"
)

// TestStopDuringStartup stops Managers at several points of their start-up,
// before and after their caches synced: each must return cleanly
// (controller-runtime alone spins forever when stopped before the sync).
func TestStopDuringStartup(t *testing.T) {
	e := setup(t, "lifecycle")
	for _, d := range []time.Duration{0, 10 * time.Millisecond, 300 * time.Millisecond, 2 * time.Second} {
		r := e.start(controller.Manager{Namespace: "lifecycle", LeaderElection: d > 0, LeaderElectionNamespace: "lifecycle"})
		time.Sleep(d)
		r.stop(t)
	}
}
