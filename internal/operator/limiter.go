package operator

import (
	"context"
	"sync"
	"time"

	"github.com/strata-dev/strata/internal/operator/hook"
)

// limiter is a token bucket for a hook's settings (executionMinInterval,
// executionBurst): up to burst runs at once, then one per interval.
type limiter struct {
	interval time.Duration
	burst    int

	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// newLimiter returns the limiter of settings, nil (no limit) for none.
func newLimiter(s *hook.Settings) *limiter {
	if s == nil || s.ExecutionMinInterval <= 0 {
		return nil
	}
	burst := max(s.ExecutionBurst, 1)
	return &limiter{interval: s.ExecutionMinInterval, burst: burst, tokens: float64(burst)}
}

// wait blocks until a run may start, or ctx is done.
func (l *limiter) wait(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	now := time.Now()
	if !l.last.IsZero() {
		l.tokens = min(float64(l.burst), l.tokens+float64(now.Sub(l.last))/float64(l.interval))
	}
	l.last = now
	var delay time.Duration
	if l.tokens >= 1 {
		l.tokens--
	} else {
		delay = time.Duration((1 - l.tokens) * float64(l.interval))
		l.tokens = 0
		l.last = now.Add(delay)
	}
	l.mu.Unlock()
	if delay == 0 {
		return nil
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
