//go:build linux

package hookexec_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/hookexec"
)

// TestStderrLimit runs commands that print to stderr without end: each is
// killed once it passes StderrLimit, keeping only the tail.
func TestStderrLimit(t *testing.T) {
	const limit = 1 << 20
	tests := []struct {
		name    string
		argv    []string
		wantErr bool
	}{
		{name: "endless stderr", argv: sh("exec yes >&2"), wantErr: true},
		{name: "endless stderr from a child", argv: sh("yes >&2; echo done"), wantErr: true},
		{name: "exactly the limit", argv: sh("exec head -c " + strconv.Itoa(limit) + " /dev/zero >&2")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &hookexec.Command{Argv: tc.argv, Env: []string{testPath}, StderrLimit: limit, MaxStderr: 4 << 10}
			res, err := run(t, t.Context(), c)
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("Run(%s) = %v", c, err)
				}
				return
			}
			if !errors.Is(err, hookexec.ErrOutputTooLarge) {
				t.Fatalf("Run(%s) = %v, want ErrOutputTooLarge", c, err)
			}
			if want := "wrote more than " + strconv.Itoa(limit) + " bytes to stderr"; !strings.Contains(err.Error(), want) {
				t.Errorf("Run(%s) = %q, want it to say %q", c, err, want)
			}
			if len(res.Stderr) > 4<<10 {
				t.Errorf("kept %d bytes of stderr, want at most %d", len(res.Stderr), 4<<10)
			}
			if len(res.Stdout) != 0 {
				t.Errorf("stdout %q: the command went on after the limit", res.Stdout)
			}
		})
	}
}

// TestReserve counts stdout as it arrives: a command printing without end
// is killed at the first growth of its buffer that Reserve refuses, with
// Reserve's error, and the buffer never grows past what was granted.
func TestReserve(t *testing.T) {
	const grant = 256 << 10
	var (
		mu      sync.Mutex
		granted int64
	)
	refusal := errors.New("the memory budget is spent")
	c := &hookexec.Command{Argv: []string{"yes"}, Env: []string{testPath}, Reserve: func(n int64) error {
		mu.Lock()
		defer mu.Unlock()
		if granted+n > grant {
			return refusal
		}
		granted += n
		return nil
	}}
	res, err := run(t, t.Context(), c)
	if !errors.Is(err, refusal) {
		t.Fatalf("Run(yes) = %v, want the refusal", err)
	}
	if errors.Is(err, hookexec.ErrOutputTooLarge) {
		t.Errorf("Run(yes) = %v: a refusal is not the stdout bound", err)
	}
	if !strings.Contains(err.Error(), "killed: the memory budget is spent") {
		t.Errorf("Run(yes) = %q, want it to say it was killed, and why", err)
	}
	if int64(cap(res.Stdout)) > grant || granted > grant {
		t.Errorf("stdout buffer of %d bytes, %d granted: past the grant of %d", cap(res.Stdout), granted, grant)
	}
}

// TestReserveWaitsPastDeadline: a Reserve still waiting for room when
// the request's deadline comes is refused for it, and Run reports the
// refusal (what the client can act on), not the deadline it saw at the
// same moment.
func TestReserveWaitsPastDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	refusal := errors.New("no room came in the memory budget")
	var calls atomic.Int64
	c := &hookexec.Command{Argv: []string{"yes"}, Env: []string{testPath}, Reserve: func(int64) error {
		if calls.Add(1) == 1 {
			return nil
		}
		<-ctx.Done() // waiting for room, as memlimit.Stream does
		return fmt.Errorf("%w: %w", refusal, context.Cause(ctx))
	}}
	_, err := run(t, ctx, c)
	if !errors.Is(err, refusal) {
		t.Fatalf("Run(yes) = %v, want the refusal", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run(yes) = %v, want the deadline as the refusal's cause", err)
	}
}

// TestTrackerStop stops the commands of a Tracker from outside: the one
// running is killed at once, whatever it does with SIGTERM, and a later
// Run does not start.
func TestTrackerStop(t *testing.T) {
	tr := hookexec.NewTracker()
	cause := errors.New("the request wrote past its disk budget")
	c := &hookexec.Command{Argv: sh("trap '' TERM; echo started; sleep 60"), Env: []string{testPath}, Tracker: tr, Grace: liveness}
	done := make(chan error, 1)
	go func() {
		_, err := c.Run(t.Context())
		done <- err
	}()
	tr.Stop(cause)
	tr.Stop(errors.New("a second cause is ignored"))
	var err error
	select {
	case err = <-done:
	case <-t.Context().Done():
	}
	if !errors.Is(err, cause) {
		t.Fatalf("Run = %v, want the cause", err)
	}
	if got := tr.Stopped(); got != cause {
		t.Errorf("Stopped() = %v, want the first cause", got)
	}
	_, err = run(t, t.Context(), &hookexec.Command{Argv: []string{"true"}, Env: []string{testPath}, Tracker: tr})
	if !errors.Is(err, cause) || !strings.Contains(err.Error(), "not starting") && !strings.Contains(err.Error(), "stopped") {
		t.Errorf("Run after Stop = %v, want a refusal naming the cause", err)
	}
	if err := tr.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
}

// TestMaxFileSize writes a file past MaxFileSize: the kernel stops the
// write at the limit, also in a process the command starts.
func TestMaxFileSize(t *testing.T) {
	const limit = 1 << 20
	for _, noNS := range []bool{true, false} {
		if !noNS && hookexec.Namespaces() != nil {
			continue
		}
		t.Run("namespaces="+strconv.FormatBool(!noNS), func(t *testing.T) {
			dir := t.TempDir()
			tr := hookexec.NewTracker()
			tr.NoNamespaces = noNS
			c := &hookexec.Command{Argv: sh("head -c 5000000 /dev/zero > big; echo $? > status"), Dir: dir, Env: []string{testPath}, MaxFileSize: limit, Tracker: tr}
			if _, err := run(t, t.Context(), c); err != nil {
				t.Fatalf("Run(%s) = %v", c, err)
			}
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(filepath.Join(dir, "big"))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() != limit {
				t.Errorf("the file grew to %d bytes, want the limit, %d", fi.Size(), limit)
			}
			status, _ := os.ReadFile(filepath.Join(dir, "status"))
			// 128 + SIGXFSZ: head was killed by the kernel's signal.
			if want := strconv.Itoa(128+int(syscall.SIGXFSZ)) + "\n"; string(status) != want {
				t.Errorf("head's status %q, want %q (killed by SIGXFSZ)", status, want)
			}
		})
	}
}
