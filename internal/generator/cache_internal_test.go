package generator

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func newTestCache(ttl time.Duration, maxEntries int) (*responseCache, *fakeClock) {
	clock := &fakeClock{t: time.Unix(1000, 0)}
	c := newResponseCache(CacheConfig{TTL: ttl, MaxEntries: maxEntries, Collapse: true})
	c.now = clock.now
	return c, clock
}

func TestCacheExpiry(t *testing.T) {
	c, clock := newTestCache(time.Minute, 10)
	calls := 0
	fill := func() ([]byte, error) { calls++; return []byte(fmt.Sprint(calls)), nil }
	get := func() (string, string) {
		t.Helper()
		a, result, err := c.get(context.Background(), "k", fill, func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprint(len(a.body)); len(a.contentLength) != 1 || a.contentLength[0] != want {
			t.Errorf("get() answer has Content-Length %q, want [%s]", a.contentLength, want)
		}
		return string(a.body), result
	}
	for _, step := range []struct {
		advance      time.Duration
		body, result string
	}{
		{0, "1", cacheMiss},
		{30 * time.Second, "1", cacheHit},
		{29 * time.Second, "1", cacheHit},
		{time.Second, "2", cacheMiss}, // exactly the TTL: expired
		{59 * time.Second, "2", cacheHit},
	} {
		clock.t = clock.t.Add(step.advance)
		if body, result := get(); body != step.body || result != step.result {
			t.Errorf("after +%s: get() = %s (%s), want %s (%s)", step.advance, body, result, step.body, step.result)
		}
	}
}

func TestCacheAliases(t *testing.T) {
	c, clock := newTestCache(time.Minute, 10)
	raw := []byte("raw")
	if _, ok := c.peek(raw); ok {
		t.Fatal("peek found an answer in an empty cache")
	}
	if _, _, err := c.get(context.Background(), "k", func() ([]byte, error) { return []byte("x"), nil }, func(string) {}); err != nil {
		t.Fatal(err)
	}
	c.alias(raw, "k")
	if a, ok := c.peek(raw); !ok || string(a.body) != "x" || len(a.contentLength) != 1 || a.contentLength[0] != "1" {
		t.Errorf("peek(raw) = %q (Content-Length %q), %v; want x (1), true", a.body, a.contentLength, ok)
	}
	if _, ok := c.peek([]byte("other")); ok {
		t.Error("peek answered a body it has no alias for")
	}
	clock.t = clock.t.Add(time.Minute)
	if _, ok := c.peek(raw); ok {
		t.Error("peek returned an expired answer")
	}
	// Without a TTL nothing is kept, aliases neither.
	off, _ := newTestCache(0, 10)
	off.alias(raw, "k")
	if _, ok := off.peek(raw); ok {
		t.Error("peek answered with the cache off")
	}
}

func TestCacheEviction(t *testing.T) {
	c, clock := newTestCache(time.Hour, 3)
	put := func(k string) {
		t.Helper()
		if _, _, err := c.get(context.Background(), k, func() ([]byte, error) { return []byte(k), nil }, func(string) {}); err != nil {
			t.Fatal(err)
		}
		clock.t = clock.t.Add(time.Second)
	}
	for _, k := range []string{"a", "b", "c", "d"} {
		put(k)
	}
	if len(c.entries) != 3 {
		t.Fatalf("%d entries, want the bound of 3", len(c.entries))
	}
	if _, ok := c.entries["a"]; ok {
		t.Error("the oldest entry was kept, a newer one evicted")
	}
	// Expired entries go first.
	clock.t = clock.t.Add(time.Hour - 2*time.Second) // b and c expired, d not
	put("e")
	if _, ok := c.entries["d"]; !ok || len(c.entries) != 2 {
		t.Errorf("entries after evicting the expired ones: %v, want d and e", keys(c.entries))
	}
}

func keys(m map[string]*cacheEntry) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestCacheErrorsNotKept(t *testing.T) {
	c, _ := newTestCache(time.Hour, 10)
	boom := errors.New("boom")
	if _, _, err := c.get(context.Background(), "k", func() ([]byte, error) { return nil, boom }, func(string) {}); !errors.Is(err, boom) {
		t.Fatalf("get() error = %v, want boom", err)
	}
	if len(c.entries) != 0 {
		t.Errorf("a failed call left %d entries", len(c.entries))
	}
}

func TestCacheWaiterCancelled(t *testing.T) {
	c, _ := newTestCache(0, 10)
	release := make(chan struct{})
	started := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.get(context.Background(), "k", func() ([]byte, error) { close(started); <-release; return []byte("x"), nil }, func(string) {})
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, result, err := c.get(ctx, "k", nil, func(string) {}); result != cacheShared || !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled waiter got %s, %v; want shared, context.Canceled", result, err)
	}
	close(release)
	<-done
}
