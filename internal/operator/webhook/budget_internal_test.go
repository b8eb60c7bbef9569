package webhook

import (
	"testing"
	"time"
)

func TestRunBudget(t *testing.T) {
	for _, tc := range []struct {
		seconds int32
		want    time.Duration
	}{{1, 750 * time.Millisecond}, {2, 1500 * time.Millisecond}, {10, 9500 * time.Millisecond}, {30, 29500 * time.Millisecond}} {
		if got := runBudget(tc.seconds); got != tc.want {
			t.Errorf("runBudget(%d) = %v, want %v", tc.seconds, got, tc.want)
		}
	}
}
