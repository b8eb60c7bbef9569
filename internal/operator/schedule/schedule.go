// Package schedule is the addon operator's crontab schedules: parsing a
// crontab of 5 fields (minute hour day-of-month month day-of-week) or 6
// (seconds first), as shell-operator's schedule binding takes, and a
// Ticker that calls its entries' functions when their crontabs fire.
//
// Crontabs are parsed by robfig/cron/v3 with optional seconds, the
// @every/@hourly descriptors and a TZ= prefix; times are in the crontab's
// time zone, else the Ticker's location (UTC by default).
package schedule

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
)

// A Spec is a parsed crontab.
type Spec struct {
	crontab string
	sched   cron.Schedule
}

var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// maxCrontab bounds the crontab's length: it is untrusted input.
const maxCrontab = 1024

// Parse parses a crontab of 5 or 6 fields (seconds first), or a
// descriptor such as @hourly or "@every 10s", optionally after a time
// zone, "TZ=Europe/Berlin 0 3 * * *" (shell-operator's cron library takes
// TZ=; CRON_TZ= is accepted too). A crontab without one runs in the
// Ticker's location.
func Parse(crontab string) (*Spec, error) {
	s := strings.TrimSpace(crontab)
	if s == "" {
		return nil, fmt.Errorf("crontab is empty; write 5 fields (\"*/5 * * * *\": every 5 minutes) or 6 with seconds first (\"*/10 * * * * *\")")
	}
	if len(s) > maxCrontab {
		return nil, fmt.Errorf("crontab is longer than %d bytes", maxCrontab)
	}
	rest := s
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		tz, after, ok := strings.Cut(s, " ")
		if !ok {
			return nil, fmt.Errorf("crontab %q has a time zone and no schedule; write \"TZ=Europe/Berlin 0 3 * * *\"", crontab)
		}
		_, name, _ := strings.Cut(tz, "=")
		if _, err := time.LoadLocation(name); err != nil || name == "" {
			return nil, fmt.Errorf("crontab %q: unknown time zone %q; write an IANA name such as Europe/Berlin or UTC", crontab, name)
		}
		rest = strings.TrimSpace(after)
	}
	if !strings.HasPrefix(rest, "@") {
		if n := len(strings.Fields(rest)); n != 5 && n != 6 {
			return nil, fmt.Errorf("crontab %q has %d fields; write 5 (minute hour day-of-month month day-of-week) or 6 (seconds first)", crontab, n)
		}
	}
	sched, err := parser.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("crontab %q: %v", crontab, err)
	}
	return &Spec{crontab: s, sched: sched}, nil
}

// String returns the crontab.
func (s *Spec) String() string { return s.crontab }

// Next returns the first time after t the crontab fires; the zero time
// if it never does.
func (s *Spec) Next(t time.Time) time.Time { return s.sched.Next(t) }

// A Ticker calls the functions of its entries when their crontabs fire.
// Add entries, then Run it; entries may also be added and removed while
// it runs.
type Ticker struct {
	// Location is the time zone crontabs are read in; nil is UTC.
	Location *time.Location

	mu      sync.Mutex
	entries map[int]*entry
	nextID  int
	wake    chan struct{}
}

type entry struct {
	spec *Spec
	fire func(time.Time)
	next time.Time
}

// Add adds an entry: fire is called with the scheduled time each time the
// crontab fires, from the Ticker's goroutine (keep it short: queue work,
// do not do it). It returns the entry's id for Remove.
func (t *Ticker) Add(spec *Spec, fire func(time.Time)) int {
	return t.add(spec, fire)
}

// Remove removes the entry with id; unknown ids are ignored.
func (t *Ticker) Remove(id int) {
	t.remove(id)
}

// Run fires the entries until ctx is done. A tick missed because the
// process was busy fires once, late; ticks are not queued up.
func (t *Ticker) Run(ctx context.Context) {
	t.run(ctx)
}
