package hookexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// Defaults for the zero values of Command's fields.
const (
	DefaultGrace     = 5 * time.Second
	DefaultMaxStdout = 64 << 20
	DefaultMaxStderr = 1 << 20
)

// pipeDrain bounds how long Run waits for stdout and stderr to reach EOF
// once the command's process group is gone. Only a process that left the
// group (setsid) can still hold them open by then.
const pipeDrain = 2 * time.Second

// A Command is one run of a user's command. Set its fields and call Run.
// A Command is not changed by Run; several Runs of one Command may proceed
// at once if its Stdin is nil.
type Command struct {
	// Argv is the command and its arguments; it is never given to a shell.
	// An Argv[0] without a slash is looked up in the PATH of Env (of
	// LookupEnv when set), or in this process's PATH when it has none;
	// only absolute PATH entries are searched. An Argv[0] with a slash is
	// a path, relative to Dir.
	Argv []string
	// Dir is the working directory; "" is this process's.
	Dir string
	// Env is the complete environment, KEY=VALUE entries; the last of
	// several entries for one key wins. Nil means an empty environment:
	// nothing is inherited from this process.
	Env []string
	// LookupEnv, when not nil, is the environment whose PATH Argv[0] is
	// looked up in instead of Env's (this process's PATH when it has
	// none). A server running commands for requests passes its own
	// environment, as Argo CD's plugin sidecar resolves commands with its
	// own PATH: a PATH a request puts into Env then reaches the command's
	// environment, but cannot choose the binary that starts.
	LookupEnv []string
	// Stdin is the command's standard input; nil reads from /dev/null.
	// Run does not wait for a Read that blocks after the command exits.
	// Not a terminal: the command runs in a process group of its own, in
	// the background, and would be stopped reading one.
	Stdin io.Reader
	// Timeout bounds the run on top of the context's deadline; 0 is none.
	Timeout time.Duration
	// Grace is how long the process group has between SIGTERM and SIGKILL
	// when it is stopped; 0 means DefaultGrace, a negative value SIGKILL at
	// once.
	Grace time.Duration
	// MaxStdout bounds the stdout kept; a command that writes more is
	// killed and Run returns ErrOutputTooLarge. 0 or less means
	// DefaultMaxStdout.
	MaxStdout int64
	// MaxStderr bounds the stderr kept: only its last MaxStderr bytes are.
	// 0 or less means DefaultMaxStderr.
	MaxStderr int64
	// StderrLimit, when positive, bounds what the command may write to
	// stderr in all, counted as it is written: a command that writes more
	// is killed and Run returns ErrOutputTooLarge (only the last MaxStderr
	// bytes are ever kept, so memory is bounded without it; the limit
	// stops a command that prints without end). 0 is no limit.
	StderrLimit int64
	// Reserve, when set, is called before the buffer that holds stdout
	// grows, with the bytes it grows by (it grows as append does, never
	// past MaxStdout): a server counts the output against its memory
	// budget as it arrives. An error kills the command at once, and Run
	// returns an error wrapping it. Reserve may be called from another
	// goroutine than Run's, never concurrently with itself.
	Reserve func(n int64) error
	// MaxFileSize, when positive, is the RLIMIT_FSIZE of the command,
	// inherited by what it starts: a write that would make a file larger
	// fails (the kernel sends SIGXFSZ, which kills a process that does
	// not handle it, and the write returns EFBIG). The command starts
	// stopped (traced, PTRACE_TRACEME), gets the limit before it runs an
	// instruction of its own, and is let go (see FileSizeLimitMode);
	// where tracing is refused, the limit is set just after it started,
	// and what it forks in the microseconds before keeps this process's.
	MaxFileSize int64
	// Tracker, when set, follows everything the command starts, so that
	// what it leaves behind is killed when the Tracker closes (see
	// Tracker); where the kernel allows, the command runs in its own user,
	// PID and IPC namespaces, and nothing it started outlives it.
	Tracker *Tracker
	// Sandbox, when set, confines the command's access to files (see
	// Sandbox); Run fails with an error matching ErrNoSandbox rather than
	// run it unconfined. Nil runs it with this process's access.
	Sandbox *Sandbox
}

// Result is what a command produced.
type Result struct {
	Stdout   []byte        // at most MaxStdout bytes
	Stderr   []byte        // the last MaxStderr bytes at most
	ExitCode int           // -1 when the process was killed by a signal
	Duration time.Duration // from start until Run had collected everything
	Usage    Usage         // what the process used; zero when it never ran
}

// Usage is the resources a command's process used, as wait4 reports them:
// the process itself and the descendants it waited for.
type Usage struct {
	UserTime, SystemTime time.Duration
	// MaxRSS is the peak resident set in bytes, as wait4 reports it; 0
	// where the platform does not report it. Linux keeps, across exec, the
	// peak of the address space a child starts in, and Go starts children
	// with vfork in the caller's own address space: the figure is the
	// larger of this process's resident set when it started the command
	// and the command's own peak.
	MaxRSS int64
}

// String returns the command the way errors show it.
func (c *Command) String() string { return commandString(c.Argv) }

// Run starts the command, waits for it, and returns what it wrote.
//
// The error is nil only when the command exited with status 0 and its
// output is complete. An *ExitError reports a command that failed; errors
// matching ErrTimeout, context.Canceled or ErrOutputTooLarge one that Run
// stopped, and ErrNotFound one that does not exist. Whenever the command
// was started, the Result is returned too, with whatever output was kept.
func (c *Command) Run(ctx context.Context) (*Result, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("not starting %s: %w", c, err)
	}
	env := c.Env
	if env == nil {
		env = []string{} // os/exec would inherit this process's for nil
	}
	if c.Dir != "" {
		// Checked here: a failing chdir in the child is reported as if the
		// command itself were missing.
		fi, err := os.Stat(c.Dir)
		if err != nil {
			return nil, fmt.Errorf("%s: working directory: %w", c, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%s: working directory %s is not a directory", c, c.Dir)
		}
	}
	path, err := c.lookPath(env)
	if err != nil {
		return nil, err
	}
	if c.Sandbox != nil {
		if err := c.Sandbox.check(); err != nil {
			return nil, fmt.Errorf("%s: %w", c, err)
		}
		if _, err := LandlockABI(); err != nil {
			return nil, fmt.Errorf("%s: %w", c, err)
		}
	}
	maxStdout := orDefault(c.MaxStdout, DefaultMaxStdout)
	stdout := newHeadBuffer(maxStdout)
	stdout.reserve = c.Reserve
	stderr := newTailBuffer(orDefault(c.MaxStderr, DefaultMaxStderr))
	stderr.limit = c.StderrLimit
	cmd := &exec.Cmd{
		Path:      path,
		Args:      c.Argv,
		Dir:       c.Dir,
		Env:       env,
		Stdout:    stdout,
		Stderr:    stderr,
		WaitDelay: pipeDrain,
	}
	if err := setProcessGroup(cmd); err != nil {
		return nil, err
	}
	in, err := newStdinFeeder(cmd, c.Stdin)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", c, err)
	}

	namespaced := false
	if c.Tracker != nil {
		if err := c.Tracker.begin(); err != nil {
			in.abort()
			return nil, fmt.Errorf("starting %s: %w", c, err)
		}
		namespaced = !c.Tracker.NoNamespaces && Namespaces() == nil
		defer func() { c.Tracker.end(namespaced) }()
	}
	start := time.Now()
	ipcStarted()
	starting.RLock()
	err = c.startTracked(cmd, &namespaced)
	if err != nil {
		starting.RUnlock()
		ipcEnded()
		in.abort()
		return nil, fmt.Errorf("starting %s: %w", c, err)
	}
	if namespaced {
		ipcEnded() // its System V objects are its own namespace's
	} else {
		defer ipcEnded()
	}
	addLeader(cmd.Process.Pid)
	starting.RUnlock()
	in.start()
	l := watch(cmd)
	var aborted <-chan struct{}
	if c.Tracker != nil {
		aborted = c.Tracker.stopped()
	}
	stop := c.supervise(ctx, l, signals{overflow: stdout.full, stderr: stderr.full, aborted: aborted}, start)
	waitErr := l.finish()
	removeLeader(cmd.Process.Pid)
	stdinErr := in.finish()

	res := &Result{Duration: time.Since(start), ExitCode: -1}
	res.Stdout, stop.overflowed = stdout.Bytes()
	switch {
	case stdout.refused != nil && (stop.kind == stopOverflow || stop.kind == notStopped || stop.kind == stopDeadline):
		// A Reserve waiting for room when the deadline came was refused
		// for it too: the refusal (no room came) says more than the
		// deadline, whichever supervise saw first.
		stop.kind, stop.cause = stopAborted, stdout.refused
	case stop.kind == stopAborted:
		stop.cause = c.Tracker.Stopped()
	}
	var stderrCut bool
	res.Stderr, stderrCut = stderr.Bytes()
	state := cmd.ProcessState
	if state != nil {
		res.ExitCode = state.ExitCode()
		res.Usage = Usage{UserTime: state.UserTime(), SystemTime: state.SystemTime(), MaxRSS: maxRSS(state)}
	}
	tail := string(res.Stderr)
	if stderrCut {
		tail = dropPartialRune(tail)
	}
	return res, c.outcome(stop, l.err, waitErr, stdinErr, state, tail, maxStdout)
}

// outcome turns what happened into Run's error.
func (c *Command) outcome(s stopped, watchErr, waitErr, stdinErr error, state *os.ProcessState, stderr string, maxStdout int64) error {
	if watchErr != nil {
		return fmt.Errorf("waiting for %s: %w", c, watchErr)
	}
	if s.kind == notStopped && s.overflowed {
		// It passed the bound just as it exited.
		s.kind, s.after = stopOverflow, 0
	}
	if s.kind != notStopped {
		e := &stopError{argv: c.Argv, kind: s.kind, after: s.after, killed: s.killed, stderr: stderr}
		switch s.kind {
		case stopTimeout:
			e.timeout = c.Timeout
			e.causes = []error{ErrTimeout}
		case stopDeadline:
			e.causes = []error{ErrTimeout, s.ctxErr}
		case stopCancelled:
			e.causes = []error{s.ctxErr}
		case stopOverflow:
			e.limit = maxStdout
			e.causes = []error{ErrOutputTooLarge}
		case stopStderr:
			e.limit = c.StderrLimit
			e.causes = []error{ErrOutputTooLarge}
		}
		if s.cause != nil && s.cause != s.ctxErr {
			e.causes = append(e.causes, s.cause) // from context.WithCancelCause and kin
		}
		if s.killed && s.kind != stopOverflow && s.kind != stopStderr && s.kind != stopAborted {
			e.grace = c.grace()
		}
		return e
	}
	if state != nil && !state.Success() {
		e := &ExitError{Argv: c.Argv, ExitCode: state.ExitCode(), StderrTail: stderr}
		if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal()
		}
		return e
	}
	switch {
	case errors.Is(waitErr, exec.ErrWaitDelay):
		return fmt.Errorf("%s exited, but a process that left its process group still held its stdout or stderr open %s later; the output may be incomplete: %w",
			c, pipeDrain, waitErr)
	case waitErr != nil:
		return fmt.Errorf("running %s: %w", c, waitErr)
	case stdinErr != nil:
		return fmt.Errorf("feeding stdin to %s: %w", c, stdinErr)
	}
	return nil
}

func orDefault(n, def int64) int64 {
	if n <= 0 {
		return def
	}
	return n
}

func (c *Command) grace() time.Duration {
	if c.Grace == 0 {
		return DefaultGrace
	}
	return c.Grace
}

// check refuses what the kernel would refuse with a less helpful message.
func (c *Command) check() error {
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return errors.New("hookexec: no command: Argv is empty")
	}
	for i, a := range c.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("%s: argument %d contains a NUL byte", c, i)
		}
	}
	for i, kv := range c.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("%s: environment entry %d is not KEY=VALUE", c, i)
		}
		if strings.IndexByte(kv, 0) >= 0 {
			return fmt.Errorf("%s: environment variable %s contains a NUL byte", c, k)
		}
	}
	return nil
}

// lookPath resolves Argv[0] to an absolute path.
func (c *Command) lookPath(env []string) (string, error) {
	name := c.Argv[0]
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(c.Dir, p)
		}
		// Absolute, because the child resolves a relative path only after
		// it has changed into Dir.
		p, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("command %q: %w", name, err)
		}
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("%w: %q: %w", ErrNotFound, name, err)
		}
		if err != nil {
			return "", fmt.Errorf("command %q: %w", name, err)
		}
		if !isExecutable(fi) {
			return "", fmt.Errorf("command %q (%s) is not an executable file (mode %s); make it executable or run it through its interpreter",
				name, p, fi.Mode())
		}
		return p, nil
	}

	pathList, from := "", "Command.Env"
	if c.LookupEnv != nil {
		env, from = c.LookupEnv, "Command.LookupEnv"
	}
	found := false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathList, found = v, true // the last one wins, as in os/exec
		}
	}
	if !found {
		pathList, from = os.Getenv("PATH"), "this process's environment, as "+from+" has none"
	}
	skipped := false
	for _, dir := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(dir) {
			skipped = true
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && isExecutable(fi) {
			return p, nil
		}
	}
	msg := fmt.Sprintf("%q is not in PATH %q (from %s)", name, pathList, from)
	if skipped {
		msg += "; relative and empty PATH entries are ignored"
	}
	return "", fmt.Errorf("%w: %s", ErrNotFound, msg)
}

func isExecutable(fi fs.FileInfo) bool {
	return fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// stopped is what supervise did.
type stopped struct {
	kind       stopKind
	after      time.Duration
	killed     bool  // SIGKILL was sent
	ctxErr     error // ctx.Err(), when ctx stopped it
	cause      error // context.Cause(ctx), when ctx stopped it
	overflowed bool  // set by Run: stdout passed its bound
}

// signals are the channels, closed, that make supervise stop a command
// at once: stdout past its bound (or refused by Reserve), stderr past
// StderrLimit, the Tracker stopped. A nil channel never fires.
type signals struct {
	overflow, stderr, aborted <-chan struct{}
}

// supervise waits for the command's main process to exit, stopping the
// process group when ctx is done, Timeout expires, or one of sig fires.
// It returns once the main process has exited, still unreaped.
func (c *Command) supervise(ctx context.Context, l *leader, sig signals, start time.Time) stopped {
	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout - time.Since(start))
		defer t.Stop()
		timeout = t.C
	}
	var s stopped
	select {
	case <-l.exited:
		return s
	case <-sig.overflow:
		s.kind = stopOverflow
	case <-sig.stderr:
		s.kind = stopStderr
	case <-sig.aborted:
		s.kind = stopAborted
	case <-timeout:
		s.kind = stopTimeout
	case <-ctx.Done():
		s.kind = stopCancelled
		if s.ctxErr = ctx.Err(); errors.Is(s.ctxErr, context.DeadlineExceeded) {
			s.kind = stopDeadline
		}
		s.cause = context.Cause(ctx)
	}
	s.after = time.Since(start)
	select {
	case <-l.exited:
		// It finished on its own as the stop came; an overflow is
		// still reported by Run, as is a stop of its Tracker.
		if s.kind != stopOverflow && s.kind != stopStderr && s.kind != stopAborted {
			return stopped{}
		}
		return s
	default:
	}

	if s.kind == stopOverflow || s.kind == stopStderr || s.kind == stopAborted || c.grace() < 0 {
		s.killed = true
		signalGroup(l.pid, syscall.SIGKILL)
		<-l.exited
		return s
	}
	signalGroup(l.pid, syscall.SIGTERM)
	t := time.NewTimer(c.grace())
	defer t.Stop()
	select {
	case <-l.exited:
	case <-t.C:
		s.killed = true
		signalGroup(l.pid, syscall.SIGKILL)
		<-l.exited
	}
	return s
}

// leader watches a started command's main process, the leader of its
// process group.
type leader struct {
	pid    int
	exited chan struct{} // closed once the leader has exited, unreaped
	err    error         // why watching failed; read after exited closes
	reap   chan struct{} // closed by finish: now cmd.Wait may reap
	waited chan error    // cmd.Wait's error
}

func watch(cmd *exec.Cmd) *leader {
	l := &leader{
		pid:    cmd.Process.Pid,
		exited: make(chan struct{}),
		reap:   make(chan struct{}),
		waited: make(chan error, 1),
	}
	go func() {
		l.err = waitExited(l.pid)
		close(l.exited)
		<-l.reap
		l.waited <- cmd.Wait()
	}()
	return l
}

// finish kills what is left of the process group once the leader has
// exited, reaps the leader and waits for the output to be copied.
func (l *leader) finish() error {
	<-l.exited
	// Background children would otherwise hold the output pipes open.
	// The unreaped leader keeps the group ID from being reused.
	signalGroup(l.pid, syscall.SIGKILL)
	close(l.reap)
	return <-l.waited
}

// stdinFeeder copies a Command's Stdin into the child through a pipe Run
// owns, so that a Read that blocks cannot hold up Run the way it holds up
// exec.Cmd.Wait.
type stdinFeeder struct {
	src  io.Reader
	r, w *os.File
	done chan error // the copy's read error, sent before w is closed
}

func newStdinFeeder(cmd *exec.Cmd, src io.Reader) (*stdinFeeder, error) {
	switch f := src.(type) {
	case nil:
		return nil, nil
	case *os.File:
		cmd.Stdin = f // the child reads it directly
		return nil, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdin = r
	return &stdinFeeder{src: src, r: r, w: w, done: make(chan error, 1)}, nil
}

func (f *stdinFeeder) abort() {
	if f != nil {
		f.r.Close()
		f.w.Close()
	}
}

func (f *stdinFeeder) start() {
	if f == nil {
		return
	}
	f.r.Close() // the child has its own copy
	go func() {
		src := &readErrReader{r: f.src}
		// A write error means the child is done reading: not our concern.
		_, _ = io.Copy(f.w, src)
		f.done <- src.err
		f.w.Close()
	}()
}

// finish stops the copy and returns its read error if it has one by now.
// A Read still blocked after the command has exited is left behind.
func (f *stdinFeeder) finish() error {
	if f == nil {
		return nil
	}
	f.w.Close()
	select {
	case err := <-f.done:
		return err
	default:
		return nil
	}
}

// readErrReader remembers its reader's first error other than io.EOF.
type readErrReader struct {
	r   io.Reader
	err error
}

func (r *readErrReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && r.err == nil {
		r.err = err
	}
	return n, err
}

// startTracked starts cmd, in its own namespaces when *namespaced; if
// those are refused, without them, and sets *namespaced false.
func (c *Command) startTracked(cmd *exec.Cmd, namespaced *bool) error {
	if !*namespaced {
		return c.startCmd(cmd)
	}
	attr := *cmd.SysProcAttr
	setNamespaces(cmd.SysProcAttr)
	err := c.startCmd(cmd)
	if err == nil || !nsRefused(err) || cmd.Process != nil {
		return err
	}
	*namespaced = false
	*cmd.SysProcAttr = attr
	return c.startCmd(cmd)
}

// startCmd starts cmd, in c's Sandbox if it has one, with c's
// MaxFileSize.
func (c *Command) startCmd(cmd *exec.Cmd) error {
	if c.Sandbox != nil {
		return c.Sandbox.start(cmd, c.MaxFileSize)
	}
	if c.MaxFileSize <= 0 {
		return cmd.Start()
	}
	// The ptrace calls of startLimited come from the thread that started
	// the command.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return startLimited(cmd, c.MaxFileSize)
}
