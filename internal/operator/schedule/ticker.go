package schedule

import (
	"context"
	"slices"
	"time"
)

func (t *Ticker) loc() *time.Location {
	if t.Location == nil {
		return time.UTC
	}
	return t.Location
}

func (t *Ticker) add(spec *Spec, fire func(time.Time)) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.entries == nil {
		t.entries = map[int]*entry{}
	}
	t.nextID++
	id := t.nextID
	t.entries[id] = &entry{spec: spec, fire: fire, next: spec.Next(time.Now().In(t.loc()))}
	t.poke()
	return id
}

func (t *Ticker) remove(id int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.entries, id)
	t.poke()
}

// poke wakes Run to recompute its timer; t.mu is held.
func (t *Ticker) poke() {
	if t.wake == nil {
		t.wake = make(chan struct{}, 1)
	}
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

func (t *Ticker) wakeChan() chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.wake == nil {
		t.wake = make(chan struct{}, 1)
	}
	return t.wake
}

func (t *Ticker) run(ctx context.Context) {
	wake := t.wakeChan()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now().In(t.loc())
		due, next := t.collect(now)
		for _, d := range due {
			d.fire(d.at)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = max(time.Until(next), 0)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-timer.C:
		}
	}
}

type firing struct {
	fire func(time.Time)
	at   time.Time
}

// collect returns the entries due at now, moving them to their next
// time, and the earliest next time of all entries (zero when none).
func (t *Ticker) collect(now time.Time) (due []firing, next time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := make([]int, 0, len(t.entries))
	for id := range t.entries {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		e := t.entries[id]
		if e.next.IsZero() {
			continue // never fires
		}
		if !e.next.After(now) {
			due = append(due, firing{fire: e.fire, at: e.next})
			e.next = e.spec.Next(now)
		}
		if !e.next.IsZero() && (next.IsZero() || e.next.Before(next)) {
			next = e.next
		}
	}
	return due, next
}
