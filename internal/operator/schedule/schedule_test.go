package schedule_test

import (
	"context"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/operator/schedule"
)

func TestParse(t *testing.T) {
	base := time.Date(2026, 3, 10, 12, 34, 56, 0, time.UTC)
	tests := []struct {
		crontab string
		next    time.Time
	}{
		{"*/5 * * * *", time.Date(2026, 3, 10, 12, 35, 0, 0, time.UTC)},
		{"0 * * * *", time.Date(2026, 3, 10, 13, 0, 0, 0, time.UTC)},
		{"*/10 * * * * *", time.Date(2026, 3, 10, 12, 35, 0, 0, time.UTC)},
		{"58 * * * * *", time.Date(2026, 3, 10, 12, 34, 58, 0, time.UTC)},
		{"0 0 1 * *", time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)},
		{"30 9 * * MON-FRI", time.Date(2026, 3, 11, 9, 30, 0, 0, time.UTC)},
		{"@hourly", time.Date(2026, 3, 10, 13, 0, 0, 0, time.UTC)},
		{"@every 10s", time.Date(2026, 3, 10, 12, 35, 6, 0, time.UTC)},
		{"  * * * * *  ", time.Date(2026, 3, 10, 12, 35, 0, 0, time.UTC)},
		// What shell-operator's cron library (robfig/cron.v2) also takes:
		// a time zone, ? for any, names, N/step from N to the end,
		// descriptors, and @every below a second rounded up to one.
		{"TZ=Asia/Tokyo 0 0 * * *", time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)},
		{"CRON_TZ=Asia/Tokyo 0 22 * * *", time.Date(2026, 3, 10, 13, 0, 0, 0, time.UTC)},
		{"TZ=UTC @hourly", time.Date(2026, 3, 10, 13, 0, 0, 0, time.UTC)},
		{"0 0 ? * SUN", time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC)},
		{"0 0 1 jan *", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"50/5 * * * *", time.Date(2026, 3, 10, 12, 50, 0, 0, time.UTC)},
		{"@midnight", time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC)},
		{"@annually", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"@every 0.1s", time.Date(2026, 3, 10, 12, 34, 57, 0, time.UTC)},
	}
	for _, tc := range tests {
		s, err := schedule.Parse(tc.crontab)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.crontab, err)
			continue
		}
		if got := s.Next(base); !got.Equal(tc.next) {
			t.Errorf("Parse(%q).Next(%v) = %v, want %v", tc.crontab, base, got, tc.next)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ crontab, want string }{
		{"", `crontab is empty; write 5 fields ("*/5 * * * *": every 5 minutes) or 6 with seconds first ("*/10 * * * * *")`},
		{"* * * *", `crontab "* * * *" has 4 fields; write 5 (minute hour day-of-month month day-of-week) or 6 (seconds first)`},
		{"* * * * * * *", `crontab "* * * * * * *" has 7 fields; write 5 (minute hour day-of-month month day-of-week) or 6 (seconds first)`},
		{"61 * * * *", `crontab "61 * * * *": end of range (61) above maximum (59): 61`},
		{"TZ=Nowhere/Atlantis * * * * *", `crontab "TZ=Nowhere/Atlantis * * * * *": unknown time zone "Nowhere/Atlantis"; write an IANA name such as Europe/Berlin or UTC`},
		{"TZ=UTC", `crontab "TZ=UTC" has a time zone and no schedule; write "TZ=Europe/Berlin 0 3 * * *"`},
		{"TZ=UTC * * * *", `crontab "TZ=UTC * * * *" has 4 fields; write 5 (minute hour day-of-month month day-of-week) or 6 (seconds first)`},
		{"@sometimes", `crontab "@sometimes": unrecognized descriptor: @sometimes`},
	}
	for _, tc := range tests {
		_, err := schedule.Parse(tc.crontab)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q) error = %v, want %s", tc.crontab, err, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"*/5 * * * *", "0 0 1 * *", "*/10 * * * * *", "@every 1m", "1-5/2 3,4 * JAN-MAR SUN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		spec, err := schedule.Parse(s)
		if err != nil {
			return
		}
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if next := spec.Next(now); !next.IsZero() && !next.After(now) {
			t.Fatalf("Next(%v) = %v", now, next)
		}
	})
}

func TestTicker(t *testing.T) {
	every, err := schedule.Parse("* * * * * *")
	if err != nil {
		t.Fatal(err)
	}
	never, err := schedule.Parse("0 0 30 2 *") // February 30th
	if err != nil {
		t.Fatal(err)
	}
	tk := &schedule.Ticker{}
	fired := make(chan time.Time, 10)
	removed := make(chan time.Time, 10)
	tk.Add(never, func(at time.Time) { t.Errorf("a crontab that never fires fired at %v", at) })
	id := tk.Add(every, func(at time.Time) { removed <- at })
	tk.Remove(id)
	tk.Add(every, func(at time.Time) { fired <- at })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tk.Run(ctx); close(done) }()
	var got []time.Time
	for len(got) < 2 {
		select {
		case at := <-fired:
			got = append(got, at)
		case <-time.After(30 * time.Second):
			t.Fatal("the every-second entry did not fire twice")
		}
	}
	cancel()
	<-done
	for _, at := range got {
		if at.Nanosecond() != 0 || at.Location() != time.UTC {
			t.Errorf("fired at %v, want whole seconds in UTC", at)
		}
	}
	if !got[1].After(got[0]) {
		t.Errorf("fired at %v then %v", got[0], got[1])
	}
	select {
	case at := <-removed:
		t.Errorf("a removed entry fired at %v", at)
	default:
	}
}
