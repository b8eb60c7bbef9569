package hookexec_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/hookexec"
)

// liveness is how long a Run may take before a test calls it hung. It is a
// bound for liveness only, far above what any of these commands needs.
const liveness = 30 * time.Second

// testPath is the PATH the tests' commands get.
const testPath = "PATH=/usr/bin:/bin"

// run runs c and fails the test if Run does not return within liveness.
func run(t *testing.T, ctx context.Context, c *hookexec.Command) (*hookexec.Result, error) {
	t.Helper()
	type out struct {
		res *hookexec.Result
		err error
	}
	ch := make(chan out, 1)
	go func() {
		res, err := c.Run(ctx)
		ch <- out{res, err}
	}()
	select {
	case o := <-ch:
		return o.res, o.err
	case <-time.After(liveness):
		t.Fatalf("%s: Run did not return within %s", c, liveness)
		return nil, nil
	}
}

// sh is a shell command for the tests; the package itself never runs one.
func sh(script string, args ...string) []string {
	return append([]string{"sh", "-c", script, "sh"}, args...)
}

type output struct {
	Stdout, Stderr string
	ExitCode       int
}

func TestRun(t *testing.T) {
	tests := []struct {
		name    string
		argv    []string
		want    output
		wantErr *hookexec.ExitError // nil: success
		wantMsg string
	}{
		{
			name: "success",
			argv: sh("echo out; echo err >&2"),
			want: output{Stdout: "out\n", Stderr: "err\n"},
		},
		{
			name: "arguments are passed verbatim, never to a shell",
			argv: []string{"printf", "%s|", "a b", "$HOME", "*", "", "`x`;"},
			want: output{Stdout: "a b|$HOME|*||`x`;|"},
		},
		{
			name:    "exit status and stderr",
			argv:    sh("echo partial; echo 'Error: chart not found' >&2; exit 3"),
			want:    output{Stdout: "partial\n", Stderr: "Error: chart not found\n", ExitCode: 3},
			wantErr: &hookexec.ExitError{ExitCode: 3, StderrTail: "Error: chart not found\n"},
			wantMsg: "`sh -c echo partial; echo 'Error: chart not found' >&2; exit 3 sh` failed exit status 3: Error: chart not found",
		},
		{
			name:    "failure without stderr",
			argv:    []string{"false"},
			want:    output{ExitCode: 1},
			wantErr: &hookexec.ExitError{ExitCode: 1},
			wantMsg: "`false` failed exit status 1",
		},
		{
			name:    "killed by a signal it sent itself",
			argv:    sh("echo dying >&2; kill -KILL $$"),
			want:    output{Stderr: "dying\n", ExitCode: -1},
			wantErr: &hookexec.ExitError{ExitCode: -1, Signal: syscall.SIGKILL, StderrTail: "dying\n"},
			wantMsg: "`sh -c echo dying >&2; kill -KILL $$ sh` failed signal: killed: dying",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &hookexec.Command{Argv: tc.argv, Env: []string{testPath}}
			res, err := run(t, t.Context(), c)
			if res == nil {
				t.Fatalf("Run(%s) = nil result, %v", c, err)
			}
			got := output{Stdout: string(res.Stdout), Stderr: string(res.Stderr), ExitCode: res.ExitCode}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Run(%s) output (-want +got):\n%s", c, diff)
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Run(%s) = %v, want no error", c, err)
				}
				return
			}
			var ee *hookexec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("Run(%s) = %v, want an *ExitError", c, err)
			}
			want := *tc.wantErr
			want.Argv = tc.argv
			if diff := cmp.Diff(&want, ee); diff != "" {
				t.Errorf("Run(%s) ExitError (-want +got):\n%s", c, diff)
			}
			if err.Error() != tc.wantMsg {
				t.Errorf("Run(%s) error = %q, want %q", c, err, tc.wantMsg)
			}
		})
	}
}

func TestExitErrorMessage(t *testing.T) {
	long := strings.Repeat("€", 2000) // 6000 bytes; a 4 KiB cut lands inside a rune
	tests := []struct {
		name string
		err  *hookexec.ExitError
		want string
	}{
		{
			name: "exit status",
			err:  &hookexec.ExitError{Argv: []string{"helm", "template", "."}, ExitCode: 3, StderrTail: "boom"},
			want: "`helm template .` failed exit status 3: boom",
		},
		{
			name: "nothing quoted or escaped",
			err:  &hookexec.ExitError{Argv: []string{"kustomize", "build", "a dir", `"q"`}, ExitCode: 1, StderrTail: "line1\n\tline2 `x` %s\n"},
			want: "`kustomize build a dir \"q\"` failed exit status 1: line1\n\tline2 `x` %s",
		},
		{
			name: "surrounding white space trimmed",
			err:  &hookexec.ExitError{Argv: []string{"x"}, ExitCode: 2, StderrTail: "\n\n  error: bad\n\n"},
			want: "`x` failed exit status 2: error: bad",
		},
		{
			name: "no stderr",
			err:  &hookexec.ExitError{Argv: []string{"x"}, ExitCode: 2, StderrTail: " \n"},
			want: "`x` failed exit status 2",
		},
		{
			name: "signal",
			err:  &hookexec.ExitError{Argv: []string{"x"}, ExitCode: -1, Signal: syscall.SIGSEGV, StderrTail: "core"},
			want: "`x` failed signal: segmentation fault: core",
		},
		{
			name: "last 4 KiB on a rune boundary",
			err:  &hookexec.ExitError{Argv: []string{"x"}, ExitCode: 1, StderrTail: "HEAD" + long + "\n"},
			want: "`x` failed exit status 1: ..." + strings.Repeat("€", 1365),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestEnvIsExactlyWhatWasGiven(t *testing.T) {
	envPath, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env program:", err)
	}
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{name: "nil is empty, not inherited", env: nil, want: ""},
		{name: "empty", env: []string{}, want: ""},
		{
			name: "given entries only",
			env:  []string{"A=1", "B=two words", "EMPTY=", "PATH=/nowhere"},
			want: "A=1\nB=two words\nEMPTY=\nPATH=/nowhere\n",
		},
		{name: "the last duplicate wins", env: []string{"A=1", "A=2"}, want: "A=2\n"},
	}
	t.Setenv("HOOKEXEC_LEAK", "must not reach the command")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &hookexec.Command{Argv: []string{envPath}, Env: tc.env, Dir: t.TempDir()}
			res, err := run(t, t.Context(), c)
			if err != nil {
				t.Fatalf("Run(%s) = %v", c, err)
			}
			if got := string(res.Stdout); got != tc.want {
				t.Errorf("Run(%s) with Env %q printed %q, want %q", c, tc.env, got, tc.want)
			}
		})
	}
}

// blockingReader blocks in Read until unblock is closed.
type blockingReader struct{ unblock chan struct{} }

func (r blockingReader) Read([]byte) (int, error) {
	<-r.unblock
	return 0, io.EOF
}

func TestStdin(t *testing.T) {
	errBoom := errors.New("boom")
	file := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(file, []byte("from a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		argv    []string
		stdin   func(t *testing.T) io.Reader
		want    string
		wantErr error
	}{
		{
			name:  "none reads /dev/null",
			argv:  []string{"cat"},
			stdin: func(*testing.T) io.Reader { return nil },
			want:  "",
		},
		{
			name:  "reader",
			argv:  []string{"cat"},
			stdin: func(*testing.T) io.Reader { return strings.NewReader("hello\nworld\n") },
			want:  "hello\nworld\n",
		},
		{
			name: "file",
			argv: []string{"cat"},
			stdin: func(t *testing.T) io.Reader {
				f, err := os.Open(file)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { f.Close() })
				return f
			},
			want: "from a file",
		},
		{
			name:  "command reads only part of a large input",
			argv:  []string{"head", "-c", "10"},
			stdin: func(*testing.T) io.Reader { return bytes.NewReader(bytes.Repeat([]byte("0123456789"), 1<<19)) },
			want:  "0123456789",
		},
		{
			name: "read error",
			argv: []string{"cat"},
			stdin: func(*testing.T) io.Reader {
				return io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(errBoom))
			},
			want:    "ab",
			wantErr: errBoom,
		},
		{
			name: "a Read that blocks does not hold up Run",
			argv: []string{"true"},
			stdin: func(t *testing.T) io.Reader {
				r := blockingReader{unblock: make(chan struct{})}
				t.Cleanup(func() { close(r.unblock) })
				return r
			},
			want: "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &hookexec.Command{Argv: tc.argv, Env: []string{testPath}, Stdin: tc.stdin(t)}
			res, err := run(t, t.Context(), c)
			if !errors.Is(err, tc.wantErr) || (err != nil) != (tc.wantErr != nil) {
				t.Fatalf("Run(%s) = %v, want %v", c, err, tc.wantErr)
			}
			if got := string(res.Stdout); got != tc.want {
				t.Errorf("Run(%s) stdout = %q, want %q", c, got, tc.want)
			}
		})
	}
}

func TestStop(t *testing.T) {
	errShutdown := errors.New("sidecar shutting down")
	tests := []struct {
		name    string
		argv    []string
		timeout time.Duration
		grace   time.Duration
		ctx     func(t *testing.T) context.Context
		wantIs  []error
		wantNot []error
		wantMsg []string
	}{
		{
			name:    "Timeout, SIGTERM honoured",
			argv:    []string{"sleep", "60"},
			timeout: 100 * time.Millisecond,
			wantIs:  []error{hookexec.ErrTimeout},
			wantNot: []error{context.DeadlineExceeded, context.Canceled},
			wantMsg: []string{"`sleep 60` timed out after ", " (timeout 100ms) and stopped with SIGTERM"},
		},
		{
			name:    "SIGTERM ignored: SIGKILL after Grace",
			argv:    sh(`trap "" TERM; echo still busy >&2; sleep 60`),
			timeout: 100 * time.Millisecond,
			grace:   300 * time.Millisecond,
			wantIs:  []error{hookexec.ErrTimeout},
			wantMsg: []string{" timed out after ", "; it ignored SIGTERM for 300ms and was killed: still busy"},
		},
		{
			name:    "negative Grace: SIGKILL at once",
			argv:    sh(`trap "" TERM; sleep 60`),
			timeout: 100 * time.Millisecond,
			grace:   -1,
			wantIs:  []error{hookexec.ErrTimeout},
			wantMsg: []string{" (timeout 100ms) and was killed"},
		},
		{
			name: "context deadline",
			argv: []string{"sleep", "60"},
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
				t.Cleanup(cancel)
				return ctx
			},
			wantIs:  []error{hookexec.ErrTimeout, context.DeadlineExceeded},
			wantNot: []error{context.Canceled},
			wantMsg: []string{"`sleep 60` timed out after ", " (context deadline) and stopped with SIGTERM"},
		},
		{
			name: "context deadline with a cause",
			argv: []string{"sleep", "60"},
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithTimeoutCause(t.Context(), 100*time.Millisecond, errShutdown)
				t.Cleanup(cancel)
				return ctx
			},
			wantIs:  []error{hookexec.ErrTimeout, context.DeadlineExceeded, errShutdown},
			wantMsg: []string{" (context deadline) "},
		},
		{
			name: "context cancelled",
			argv: []string{"sleep", "60"},
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithCancel(t.Context())
				t.Cleanup(cancel)
				time.AfterFunc(100*time.Millisecond, cancel)
				return ctx
			},
			wantIs:  []error{context.Canceled},
			wantNot: []error{hookexec.ErrTimeout, context.DeadlineExceeded},
			wantMsg: []string{"`sleep 60` was cancelled after ", " and stopped with SIGTERM"},
		},
		{
			name: "context cancelled with a cause",
			argv: []string{"sleep", "60"},
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithCancelCause(t.Context())
				t.Cleanup(func() { cancel(nil) })
				time.AfterFunc(100*time.Millisecond, func() { cancel(errShutdown) })
				return ctx
			},
			wantIs:  []error{context.Canceled, errShutdown},
			wantNot: []error{hookexec.ErrTimeout},
			wantMsg: []string{" was cancelled after "},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			if tc.ctx != nil {
				ctx = tc.ctx(t)
			}
			c := &hookexec.Command{Argv: tc.argv, Env: []string{testPath}, Timeout: tc.timeout, Grace: tc.grace}
			res, err := run(t, ctx, c)
			if err == nil {
				t.Fatalf("Run(%s) = nil error, want it stopped", c)
			}
			for _, want := range tc.wantIs {
				if !errors.Is(err, want) {
					t.Errorf("Run(%s) = %v, want an error matching %v", c, err, want)
				}
			}
			for _, not := range tc.wantNot {
				if errors.Is(err, not) {
					t.Errorf("Run(%s) = %v, matches %v, want it not to", c, err, not)
				}
			}
			for _, part := range tc.wantMsg {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("Run(%s) = %q, want it to contain %q", c, err, part)
				}
			}
			var ee *hookexec.ExitError
			if errors.As(err, &ee) {
				t.Errorf("Run(%s) = %v, an *ExitError; want a stop error", c, err)
			}
			if res == nil || res.ExitCode != -1 {
				t.Errorf("Run(%s) result = %+v, want ExitCode -1", c, res)
			}
		})
	}
}

func TestRunCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	c := &hookexec.Command{Argv: []string{"touch", marker}, Env: []string{testPath}}
	res, err := run(t, ctx, c)
	if !errors.Is(err, context.Canceled) || res != nil {
		t.Fatalf("Run(%s) = %v, %v, want nil, context.Canceled", c, res, err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the command ran: Stat(%s) = %v", marker, err)
	}
}

// processGone reports whether pid has exited: it is gone or a zombie
// waiting for whatever adopted it.
func processGone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X'
}

func TestBackgroundChildIsKilledAndCannotHangRun(t *testing.T) {
	c := &hookexec.Command{Argv: sh("sleep 60 & echo $!"), Env: []string{testPath}}
	res, err := run(t, t.Context(), c)
	if err != nil {
		t.Fatalf("Run(%s) = %v", c, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
	if err != nil {
		t.Fatalf("Run(%s) stdout = %q, want the background pid", c, res.Stdout)
	}
	t.Cleanup(func() {
		if !processGone(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	eventually.Within(t, liveness, fmt.Sprintf("background child %d gone after Run returned", pid), func() (bool, string) {
		return processGone(pid), "still running"
	})
}

func TestEscapedChildHoldingStdout(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid program:", err)
	}
	// setsid takes the child out of the process group, beyond Run's reach;
	// it keeps stdout open. The shell waits until the child has escaped.
	ready := filepath.Join(t.TempDir(), "ready")
	c := &hookexec.Command{
		Argv: sh(`setsid sh -c 'echo >"$1"; exec sleep 60' sh "$1" & while [ ! -s "$1" ]; do sleep 0.01; done; echo $!`, ready),
		Env:  []string{testPath},
	}
	res, err := run(t, t.Context(), c)
	if res != nil {
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(res.Stdout))); perr == nil {
			t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		}
	}
	if !errors.Is(err, exec.ErrWaitDelay) {
		t.Fatalf("Run(%s) = %v, want an error matching exec.ErrWaitDelay", c, err)
	}
	if want := "the output may be incomplete"; !strings.Contains(err.Error(), want) {
		t.Errorf("Run(%s) = %q, want it to say %q", c, err, want)
	}
}

func TestStdoutBound(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name      string
		argv      []string
		maxStdout int64
		wantLen   int
		wantErr   bool
	}{
		{name: "endless output", argv: []string{"yes"}, maxStdout: mib, wantLen: mib, wantErr: true},
		{name: "endless output, default bound", argv: []string{"yes"}, wantLen: hookexec.DefaultMaxStdout, wantErr: true},
		{name: "exactly the bound", argv: []string{"head", "-c", strconv.Itoa(mib), "/dev/zero"}, maxStdout: mib, wantLen: mib},
		{name: "one byte over", argv: []string{"head", "-c", strconv.Itoa(mib + 1), "/dev/zero"}, maxStdout: mib, wantLen: mib, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &hookexec.Command{Argv: tc.argv, Env: []string{testPath}, MaxStdout: tc.maxStdout}
			res, err := run(t, t.Context(), c)
			if tc.wantErr {
				if !errors.Is(err, hookexec.ErrOutputTooLarge) {
					t.Fatalf("Run(%s) = %v, want ErrOutputTooLarge", c, err)
				}
				limit := tc.maxStdout
				if limit == 0 {
					limit = hookexec.DefaultMaxStdout
				}
				if want := fmt.Sprintf("wrote more than %d bytes to stdout", limit); !strings.Contains(err.Error(), want) {
					t.Errorf("Run(%s) = %q, want it to say %q", c, err, want)
				}
			} else if err != nil {
				t.Fatalf("Run(%s) = %v", c, err)
			}
			if res == nil || len(res.Stdout) != tc.wantLen {
				t.Fatalf("Run(%s) kept %d bytes of stdout, want %d", c, len(res.Stdout), tc.wantLen)
			}
		})
	}
}

func TestStderrKeepsTheTail(t *testing.T) {
	var lines strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&lines, "line %d\n", i)
	}
	tests := []struct {
		name      string
		argv      []string
		maxStderr int64
		full      string // everything the command writes to stderr
	}{
		{
			name:      "many small writes",
			argv:      sh(`i=0; while [ $i -lt 3000 ]; do echo "line $i" >&2; i=$((i+1)); done; exit 2`),
			maxStderr: 1000,
			full:      lines.String(),
		},
		{
			name:      "writes larger than the bound",
			argv:      sh(`head -c 3000000 /dev/zero | tr '\0' a >&2; echo END >&2; exit 2`),
			maxStderr: 1000,
			full:      strings.Repeat("a", 3000000) + "END\n",
		},
		{
			name: "default bound",
			argv: sh(`head -c 3145728 /dev/zero | tr '\0' b >&2; echo END >&2; exit 2`),
			full: strings.Repeat("b", 3<<20) + "END\n",
		},
		{
			name:      "under the bound",
			argv:      sh(`echo short >&2; exit 2`),
			maxStderr: 1000,
			full:      "short\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &hookexec.Command{Argv: tc.argv, Env: []string{testPath}, MaxStderr: tc.maxStderr}
			res, err := run(t, t.Context(), c)
			bound := int(tc.maxStderr)
			if bound == 0 {
				bound = hookexec.DefaultMaxStderr
			}
			want := tc.full[max(0, len(tc.full)-bound):]
			if got := string(res.Stderr); got != want {
				t.Errorf("Run(%s) stderr: got %d bytes ending %q, want %d bytes ending %q",
					c, len(got), got[max(0, len(got)-20):], len(want), want[max(0, len(want)-20):])
			}
			var ee *hookexec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("Run(%s) = %v, want an *ExitError", c, err)
			}
			if ee.StderrTail != want {
				t.Errorf("Run(%s) ExitError.StderrTail has %d bytes, want the %d of Result.Stderr", c, len(ee.StderrTail), len(want))
			}
			if n := len(err.Error()); n > 4<<10+200 {
				t.Errorf("Run(%s) error message has %d bytes, want about 4 KiB at most", c, n)
			}
			if !strings.HasSuffix(err.Error(), strings.TrimSpace(want[max(0, len(want)-100):])) {
				t.Errorf("Run(%s) = %q, want it to end with the end of stderr", c, err)
			}
		})
	}
}

func TestCommandNotFound(t *testing.T) {
	dir := t.TempDir()
	mustWriteExecutable(t, filepath.Join(dir, "tool"), "#!/bin/sh\necho tool\n")
	if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "subdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		argv    []string
		env     []string
		dir     string
		wantIs  []error
		wantMsg []string
	}{
		{
			name:    "not in PATH from Env",
			argv:    []string{"hookexec-no-such-command", "x"},
			env:     []string{"PATH=/usr/bin:/bin"},
			wantIs:  []error{hookexec.ErrNotFound},
			wantMsg: []string{`command not found: "hookexec-no-such-command" is not in PATH "/usr/bin:/bin" (from Command.Env)`},
		},
		{
			name:    "not in this process's PATH",
			argv:    []string{"hookexec-no-such-command"},
			wantIs:  []error{hookexec.ErrNotFound},
			wantMsg: []string{`"hookexec-no-such-command" is not in PATH`, "this process's environment"},
		},
		{
			name:    "relative and empty PATH entries are never searched",
			argv:    []string{"tool"},
			env:     []string{"PATH=.::" + filepath.Base(dir)},
			dir:     dir,
			wantIs:  []error{hookexec.ErrNotFound},
			wantMsg: []string{"relative and empty PATH entries are ignored"},
		},
		{
			name:   "a directory in PATH is not a command",
			argv:   []string{"subdir"},
			env:    []string{"PATH=" + dir},
			wantIs: []error{hookexec.ErrNotFound},
		},
		{
			name:   "a file without execute permission in PATH is not a command",
			argv:   []string{"plain"},
			env:    []string{"PATH=" + dir},
			wantIs: []error{hookexec.ErrNotFound},
		},
		{
			name:    "a missing path",
			argv:    []string{"./missing"},
			dir:     dir,
			wantIs:  []error{hookexec.ErrNotFound, fs.ErrNotExist},
			wantMsg: []string{`command not found: "./missing": `, filepath.Join(dir, "missing")},
		},
		{
			name:    "a path to a file without execute permission",
			argv:    []string{"./plain"},
			dir:     dir,
			wantMsg: []string{`command "./plain" (` + filepath.Join(dir, "plain") + ") is not an executable file"},
		},
		{
			name:    "a missing Dir",
			argv:    []string{"true"},
			env:     []string{testPath},
			dir:     filepath.Join(dir, "nonexistent"),
			wantMsg: []string{"`true`: working directory: stat " + filepath.Join(dir, "nonexistent") + ": no such file or directory"},
		},
		{
			name:    "empty Argv",
			wantMsg: []string{"Argv is empty"},
		},
		{
			name:    "NUL in an argument",
			argv:    []string{"echo", "a\x00b"},
			wantMsg: []string{"argument 1 contains a NUL byte"},
		},
		{
			name:    "environment entry without =",
			argv:    []string{"true"},
			env:     []string{"A=1", "SECRETVALUE"},
			wantMsg: []string{"environment entry 1 is not KEY=VALUE"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &hookexec.Command{Argv: tc.argv, Env: tc.env, Dir: tc.dir}
			res, err := run(t, t.Context(), c)
			if err == nil || res != nil {
				t.Fatalf("Run(%s) = %v, %v, want nil and an error", c, res, err)
			}
			for _, want := range tc.wantIs {
				if !errors.Is(err, want) {
					t.Errorf("Run(%s) = %v, want an error matching %v", c, err, want)
				}
			}
			if len(tc.wantIs) == 0 && errors.Is(err, hookexec.ErrNotFound) {
				t.Errorf("Run(%s) = %v, matches ErrNotFound, want it not to", c, err)
			}
			for _, part := range tc.wantMsg {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("Run(%s) = %q, want it to contain %q", c, err, part)
				}
			}
			if strings.Contains(err.Error(), "SECRETVALUE") {
				t.Errorf("Run(%s) = %q shows an environment entry", c, err)
			}
		})
	}
}

func mustWriteExecutable(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestCommandPaths(t *testing.T) {
	dir := t.TempDir()
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	mustWriteExecutable(t, filepath.Join(dir, "bin", "tool"), "#!/bin/sh\necho \"arg=$1\"\npwd\n")
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	relDir, err := filepath.Rel(cwd, dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		argv []string
		dir  string
		env  []string
	}{
		{name: "./ relative to Dir", argv: []string{"./bin/tool", "x"}, dir: dir},
		{name: "relative with a slash", argv: []string{"bin/tool", "x"}, dir: dir},
		{name: "relative to a relative Dir", argv: []string{"./bin/tool", "x"}, dir: relDir},
		{name: "absolute", argv: []string{filepath.Join(dir, "bin", "tool"), "x"}, dir: dir},
		{name: "found in PATH from Env", argv: []string{"tool", "x"}, dir: dir, env: []string{"PATH=/nonexistent:" + filepath.Join(dir, "bin")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &hookexec.Command{Argv: tc.argv, Dir: tc.dir, Env: tc.env}
			res, err := run(t, t.Context(), c)
			if err != nil {
				t.Fatalf("Run(%s) in %s = %v", c, tc.dir, err)
			}
			if got, want := string(res.Stdout), "arg=x\n"+realDir+"\n"; got != want {
				t.Errorf("Run(%s) in %s printed %q, want %q", c, tc.dir, got, want)
			}
		})
	}
}

func TestConcurrentRuns(t *testing.T) {
	c := &hookexec.Command{Argv: sh(`echo "$1"; echo "$1" >&2`, "same"), Env: []string{testPath}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			res, err := c.Run(t.Context())
			if err != nil {
				t.Errorf("Run(%s) = %v", c, err)
				return
			}
			if string(res.Stdout) != "same\n" || string(res.Stderr) != "same\n" {
				t.Errorf("Run(%s) = %q, %q, want \"same\\n\" twice", c, res.Stdout, res.Stderr)
			}
		})
	}
	wg.Wait()
}

func BenchmarkRun(b *testing.B) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip(err)
	}
	b.Run("hookexec/true", func(b *testing.B) {
		c := &hookexec.Command{Argv: []string{truePath}}
		for b.Loop() {
			if _, err := c.Run(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
	// With a file size limit: the command starts traced, stopped at its
	// exec, gets the limit and is let go (what cmp serve does).
	b.Run("hookexec/true/file-size-limit", func(b *testing.B) {
		c := &hookexec.Command{Argv: []string{truePath}, MaxFileSize: 1 << 30}
		for b.Loop() {
			if _, err := c.Run(b.Context()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hookexec/true/parallel", func(b *testing.B) {
		c := &hookexec.Command{Argv: []string{truePath}}
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.Run(context.Background()); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	// A request's command with its Tracker, closed after it: in its own
	// namespaces, and following the process tree (the cost of killing
	// what it left behind, here nothing).
	for _, noNS := range []bool{false, true} {
		name := "hookexec/true/tracked/namespaces"
		if noNS {
			name = "hookexec/true/tracked/process-tree"
		}
		b.Run(name, func(b *testing.B) {
			if !noNS && hookexec.Namespaces() != nil {
				b.Skip(hookexec.Namespaces())
			}
			for b.Loop() {
				tr := hookexec.NewTracker()
				tr.NoNamespaces = noNS
				c := &hookexec.Command{Argv: []string{truePath}, Tracker: tr}
				if _, err := c.Run(b.Context()); err != nil {
					b.Fatal(err)
				}
				if err := tr.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The baseline: os/exec capturing both outputs, without process groups,
	// bounds or kill logic.
	b.Run("os-exec/true", func(b *testing.B) {
		for b.Loop() {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(truePath)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestLookupEnv: with LookupEnv, Argv[0] is looked up in its PATH, not in
// Env's, which the command still gets.
func TestLookupEnv(t *testing.T) {
	dir := t.TempDir()
	mustWriteExecutable(t, filepath.Join(dir, "tool"), "#!/bin/sh\necho \"impostor $PATH\"\n")
	sys := t.TempDir()
	mustWriteExecutable(t, filepath.Join(sys, "tool"), "#!/bin/sh\necho \"real $PATH\"\n")
	c := &hookexec.Command{Argv: []string{"tool"}, Env: []string{"PATH=" + dir}, LookupEnv: []string{"PATH=" + sys}}
	res, err := run(t, t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if want := "real " + dir + "\n"; string(res.Stdout) != want {
		t.Errorf("Run(%s) printed %q, want %q", c, res.Stdout, want)
	}
	c.LookupEnv = []string{"PATH=/nowhere"}
	if _, err := run(t, t.Context(), c); !errors.Is(err, hookexec.ErrNotFound) || !strings.Contains(err.Error(), "(from Command.LookupEnv)") {
		t.Errorf("Run(%s) with tool outside LookupEnv's PATH = %v, want ErrNotFound naming Command.LookupEnv", c, err)
	}
}

// TestUsage checks that a run reports the process's resources: a command
// that touches 64 MiB has a peak resident set of at least that, and burns
// some CPU time.
func TestUsage(t *testing.T) {
	c := &hookexec.Command{Argv: []string{"/bin/sh", "-c", `s=$(head -c 67108864 /dev/zero | tr '\0' x); echo ${#s}`}, Env: []string{"PATH=/usr/bin:/bin"}}
	res, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage.MaxRSS < 64<<20 {
		t.Errorf("Usage.MaxRSS = %d, want at least 64 MiB for a shell holding a 64 MiB string (stdout %q)", res.Usage.MaxRSS, res.Stdout)
	}
	if res.Usage.UserTime+res.Usage.SystemTime <= 0 {
		t.Errorf("Usage = %+v, want some CPU time", res.Usage)
	}
}
