package generator

import (
	"context"
	"strconv"
	"sync"
	"time"
)

// A responseCache keeps a plugin's encoded answers for a TTL and lets
// concurrent identical requests share one backend call. Errors are never
// kept: the next request tries again.
type responseCache struct {
	ttl        time.Duration // 0: nothing is kept once the call is done
	maxEntries int
	collapse   bool
	now        func() time.Time

	mu      sync.Mutex
	entries map[string]*cacheEntry
	// aliases map the digest of a raw request body to the key of its
	// canonical form, once a request with that body was decoded: a client
	// that sends the same bytes again (the controller does) is answered
	// without decoding its body again.
	aliases map[string]string
}

// A cacheEntry is one answer, or a call in progress while done is open.
// Its fields do not change once done is closed.
type cacheEntry struct {
	done    chan struct{}
	answer  answer // once done
	err     error
	expires time.Time
}

// An answer is an encoded response body with its Content-Length header
// value, formatted once: a kept answer is written without allocating.
type answer struct {
	body          []byte
	contentLength []string // shared by every response: read-only
}

func newAnswer(body []byte) answer {
	return answer{body: body, contentLength: []string{strconv.Itoa(len(body))}}
}

// lookup outcomes, as metrics label them.
const (
	cacheHit    = "hit"    // a kept answer
	cacheShared = "shared" // the answer of a call already in progress
	cacheMiss   = "miss"   // this request made the backend call
)

func newResponseCache(cfg CacheConfig) *responseCache {
	return &responseCache{
		ttl:        cfg.TTL,
		maxEntries: max(cfg.MaxEntries, 1),
		collapse:   cfg.Collapse,
		now:        time.Now,
		entries:    map[string]*cacheEntry{},
		aliases:    map[string]string{},
	}
}

// peek returns the kept answer for a raw body's digest, if there is a
// fresh one. It does not allocate: it is the path of nearly every request.
func (c *responseCache) peek(raw []byte) (answer, bool) {
	if c.ttl <= 0 {
		return answer{}, false
	}
	now := c.now() // outside the lock: it is the slowest part
	var e *cacheEntry
	c.mu.Lock()
	if key, ok := c.aliases[string(raw)]; ok {
		e = c.entries[key]
	}
	c.mu.Unlock()
	if e == nil || !isDone(e) || e.err != nil || !now.Before(e.expires) {
		return answer{}, false
	}
	return e.answer, true
}

// alias records that a raw body's digest stands for key.
func (c *responseCache) alias(raw []byte, key string) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.aliases[string(raw)]; ok {
		c.aliases[string(raw)] = key
		return
	}
	if len(c.aliases) >= c.maxEntries {
		clear(c.aliases) // cheap to rebuild: one decode per distinct body
	}
	c.aliases[string(raw)] = key
}

// enabled reports whether the cache does anything.
func (c *responseCache) enabled() bool { return c.ttl > 0 || c.collapse }

// get returns the answer for key: a kept one, the one of a call in
// progress, or the one fill computes. fill runs detached from ctx (other
// requests may be waiting for it); a request stops waiting when its ctx is
// done. note is told the outcome (cacheHit, cacheShared, cacheMiss) as
// soon as it is known, before any wait.
func (c *responseCache) get(ctx context.Context, key string, fill func() ([]byte, error), note func(string)) (answer, string, error) {
	if !c.enabled() {
		note(cacheMiss)
		b, err := fill()
		if err != nil {
			return answer{}, cacheMiss, err
		}
		return newAnswer(b), cacheMiss, nil
	}
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		select {
		case <-e.done:
			if c.now().Before(e.expires) {
				c.mu.Unlock()
				note(cacheHit)
				return e.answer, cacheHit, nil
			}
			delete(c.entries, key)
		default:
			c.mu.Unlock()
			note(cacheShared)
			select {
			case <-e.done:
				return e.answer, cacheShared, e.err
			case <-ctx.Done():
				return answer{}, cacheShared, ctx.Err()
			}
		}
	}
	e := &cacheEntry{done: make(chan struct{})}
	c.evict()
	c.entries[key] = e
	c.mu.Unlock()
	note(cacheMiss)

	body, err := fill()
	var a answer
	if err == nil {
		a = newAnswer(body)
	}

	c.mu.Lock()
	e.answer, e.err = a, err
	e.expires = c.now().Add(c.ttl)
	if err != nil || c.ttl <= 0 {
		if c.entries[key] == e {
			delete(c.entries, key)
		}
	}
	close(e.done)
	c.mu.Unlock()
	return a, cacheMiss, err
}

// evict makes room for one more entry: expired answers go first, then the
// answers closest to expiring. Calls in progress stay. c.mu is held.
func (c *responseCache) evict() {
	if len(c.entries) < c.maxEntries {
		return
	}
	now := c.now()
	for k, e := range c.entries {
		if isDone(e) && !now.Before(e.expires) {
			delete(c.entries, k)
		}
	}
	for len(c.entries) >= c.maxEntries {
		var oldest string
		var at time.Time
		for k, e := range c.entries {
			if isDone(e) && (oldest == "" || e.expires.Before(at)) {
				oldest, at = k, e.expires
			}
		}
		if oldest == "" {
			return // all in progress; they leave when done unless kept
		}
		delete(c.entries, oldest)
	}
}

func isDone(e *cacheEntry) bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}
