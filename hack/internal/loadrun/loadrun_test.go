package loadrun_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/strata-dev/strata/hack/internal/loadrun"
	"github.com/strata-dev/strata/internal/eventually"
)

func TestServerKilledPastItsLimit(t *testing.T) {
	// A shell holds more than 1 KiB of anonymous memory: the watchdog
	// kills it at once, as the kernel would a container past its limit.
	s, err := loadrun.Start(t.TempDir(), "sh", 1<<10, []string{"sh", "-c", "sleep 30"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop(time.Second)
	select {
	case <-s.Killed():
	case <-time.After(30 * time.Second):
		t.Fatal("the watchdog did not kill a process past its limit")
	}
	<-s.Exited()
	if f := s.Failure(); !strings.Contains(f, "killed past its memory limit of 0 MiB") {
		t.Errorf("Failure() = %q, want the kill", f)
	}
	if s.Peak() <= 1<<10 {
		t.Errorf("Peak() = %d, want more than the limit", s.Peak())
	}
}

func TestServerRunsAndStops(t *testing.T) {
	s, err := loadrun.Start(t.TempDir(), "sh", 1<<40, []string{"sh", "-c", "echo started; exec sleep 30"}, "X=1")
	if err != nil {
		t.Fatal(err)
	}
	if f := s.Failure(); f != "" {
		t.Errorf("Failure() of a running server = %q, want none", f)
	}
	eventually.Within(t, 30*time.Second, "the server's output in its log", func() (bool, string) {
		tail := s.LogTail(5)
		return tail == "started", "LogTail() = " + tail
	})
	s.Stop(5 * time.Second)
	if f := s.Failure(); !strings.HasPrefix(f, "exited: ") {
		t.Errorf("Failure() after Stop = %q, want exited", f)
	}
}

func TestTallyAndErrors(t *testing.T) {
	var tl loadrun.Tally
	tl.Add("b", "503")
	tl.Add("a", "200")
	tl.Add("b", "200")
	tl.Add("b", "503")
	if got, want := tl.String(), "  a                          200 × 1\n  b                          200 × 1, 503 × 2\n"; got != want {
		t.Errorf("Tally.String() = %q, want %q", got, want)
	}
	if n := tl.Count("b", "503"); n != 2 {
		t.Errorf("Count(b, 503) = %d, want 2", n)
	}
	var e loadrun.Errors
	e.Done(nil)
	e.Done(errors.New("round 3: timeout"))
	e.Done(nil)
	if ok, errs := e.Counts(); ok != 2 || len(errs) != 1 || errs[0] != "round 3: timeout" {
		t.Errorf("Counts() = %d, %q; want 2 and the one error", ok, errs)
	}
}
