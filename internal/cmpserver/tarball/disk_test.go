package tarball_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/cmpserver/tarball"
)

// TestDiskBudget: the bytes of private copies in flight stay within the
// budget; a request over it waits for another to close its workspace, or
// fails naming the flag when its context ends first; an extraction or a
// copy larger than the whole budget fails at once.
func TestDiskBudget(t *testing.T) {
	body := strings.Repeat("x", 1000)
	one := tgz(t, reg("a.txt", body))
	two := tgz(t, reg("b.txt", body))

	s, _ := newStore(t, 1<<30)
	s.SetDiskBudget(1500) // one copy of 1,000 bytes at a time, the extraction aside
	ws := receive(t, s, one, tarball.Options{})
	if got := s.DiskInUse(); got != 1000 {
		t.Fatalf("DiskInUse() with one workspace = %d, want 1000", got)
	}

	// A second copy waits, and fails when its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := s.Receive(ctx, chunks(two), int64(len(two)), sum(two), tarball.Options{})
	if !errors.Is(err, tarball.ErrLimit) || !strings.Contains(err.Error(), "--max-disk-bytes") {
		t.Fatalf("Receive() over the budget = %v, want ErrLimit naming --max-disk-bytes", err)
	}

	// It gets its copy once the first workspace is closed.
	done := make(chan error, 1)
	go func() {
		ws2, err := s.Receive(context.Background(), chunks(two), int64(len(two)), sum(two), tarball.Options{})
		if err == nil {
			err = ws2.Close()
		}
		done <- err
	}()
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Receive() after the first workspace closed = %v", err)
	}
	if got := s.DiskInUse(); got != 0 {
		t.Errorf("DiskInUse() after every workspace closed = %d, want 0", got)
	}

	// Larger than the whole budget: no waiting.
	small, _ := newStore(t, 1<<30)
	small.SetDiskBudget(500)
	big := tgz(t, reg("c.txt", body))
	_, err = small.Receive(context.Background(), chunks(big), int64(len(big)), sum(big), tarball.Options{})
	if !errors.Is(err, tarball.ErrLimit) || !strings.Contains(err.Error(), "--max-disk-bytes") {
		t.Fatalf("Receive() of a repository larger than the budget = %v, want ErrLimit naming --max-disk-bytes", err)
	}
	if got := small.DiskInUse(); got != 0 {
		t.Errorf("DiskInUse() after a failed extraction = %d, want 0", got)
	}
}
