package hookexec

import (
	"errors"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrTimeout: the command ran past Command.Timeout or its context's
	// deadline and was stopped. Such an error also matches
	// context.DeadlineExceeded when the context's deadline was the cause.
	ErrTimeout = errors.New("command timed out")
	// ErrOutputTooLarge: the command wrote more to stdout than
	// Command.MaxStdout allows, or more to stderr than
	// Command.StderrLimit allows, and was stopped, or an output file read
	// with Workspace.ReadBounded is larger than its bound.
	ErrOutputTooLarge = errors.New("output too large")
	// ErrNotFound: argv[0] names no executable file.
	ErrNotFound = errors.New("command not found")
)

// maxShownStderr bounds the stderr that ExitError.Error and the other errors
// of Run show: the UI a message lands in has no use for megabytes.
const maxShownStderr = 4 << 10

// An ExitError reports a command that ran and failed: it exited with a
// non-zero status or was killed by a signal that Run did not send.
type ExitError struct {
	Argv       []string
	ExitCode   int            // the exit status; -1 when killed by a signal
	Signal     syscall.Signal // the signal that killed the command; 0 if it exited
	StderrTail string         // the end of its stderr, as kept under Command.MaxStderr
}

// Error reads like Argo CD's message for a failed plugin command:
//
//	`cmd arg1 arg2` failed exit status 3: <stderr>
//
// with the stderr trimmed of surrounding white space and cut to its last
// 4 KiB (on a rune boundary, marked by a leading "...").
func (e *ExitError) Error() string {
	var b strings.Builder
	b.WriteString(commandString(e.Argv))
	b.WriteString(" failed ")
	if e.Signal != 0 {
		b.WriteString("signal: ")
		b.WriteString(e.Signal.String())
	} else {
		b.WriteString("exit status ")
		b.WriteString(strconv.Itoa(e.ExitCode))
	}
	if s := shownStderr(e.StderrTail); s != "" {
		b.WriteString(": ")
		b.WriteString(s)
	}
	return b.String()
}

// commandString is argv the way Argo CD's errors show it: joined by spaces
// inside backquotes, nothing quoted or escaped.
func commandString(argv []string) string {
	return "`" + strings.Join(argv, " ") + "`"
}

// shownStderr trims s and cuts it to its last maxShownStderr bytes.
func shownStderr(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxShownStderr {
		return s
	}
	return "..." + strings.TrimLeftFunc(dropPartialRune(s[len(s)-maxShownStderr:]), unicode.IsSpace)
}

// dropPartialRune drops the continuation bytes a cut left at the start of s.
// A rune is at most utf8.UTFMax bytes, so a rune start is among the first
// four bytes of UTF-8 text; if none is, s is not UTF-8 and is left alone.
func dropPartialRune(s string) string {
	for i := 0; i < utf8.UTFMax && i < len(s); i++ {
		if utf8.RuneStart(s[i]) {
			return s[i:]
		}
	}
	return s
}

// stopKind says why Run stopped a command.
type stopKind int

const (
	notStopped    stopKind = iota
	stopTimeout            // Command.Timeout expired
	stopDeadline           // the context's deadline passed
	stopCancelled          // the context was cancelled
	stopOverflow           // stdout passed Command.MaxStdout
	stopStderr             // stderr passed Command.StderrLimit
	stopAborted            // its Tracker was stopped, or Reserve refused stdout
)

// stopError reports a command that Run stopped.
type stopError struct {
	argv    []string
	kind    stopKind
	after   time.Duration // from start until Run decided to stop it
	timeout time.Duration // Command.Timeout, for stopTimeout
	grace   time.Duration // how long it had after SIGTERM, when it ignored it
	killed  bool          // SIGTERM was not enough
	limit   int64         // Command.MaxStdout, for stopOverflow; StderrLimit, for stopStderr
	stderr  string
	causes  []error
}

func (e *stopError) Error() string {
	var b strings.Builder
	b.WriteString(commandString(e.argv))
	after := e.after.Round(time.Millisecond).String()
	switch e.kind {
	case stopTimeout:
		b.WriteString(" timed out after " + after + " (timeout " + e.timeout.String() + ")")
	case stopDeadline:
		b.WriteString(" timed out after " + after + " (context deadline)")
	case stopCancelled:
		b.WriteString(" was cancelled after " + after)
	case stopOverflow:
		b.WriteString(" wrote more than " + strconv.FormatInt(e.limit, 10) + " bytes to stdout")
	case stopStderr:
		b.WriteString(" wrote more than " + strconv.FormatInt(e.limit, 10) + " bytes to stderr")
	case stopAborted:
		b.WriteString(" was stopped after " + after)
	}
	switch {
	case e.kind == stopAborted:
		b.WriteString(" and killed")
		if len(e.causes) > 0 {
			b.WriteString(": ")
			b.WriteString(e.causes[0].Error())
		}
		// The cause says why; the output so far says nothing more.
		return b.String()
	case (e.kind == stopOverflow || e.kind == stopStderr) && e.killed:
		b.WriteString(" and was killed after " + after)
	case e.kind == stopOverflow || e.kind == stopStderr:
		b.WriteString("; its output was cut")
	case e.killed && e.grace > 0:
		b.WriteString("; it ignored SIGTERM for " + e.grace.String() + " and was killed")
	case e.killed:
		b.WriteString(" and was killed")
	default:
		b.WriteString(" and stopped with SIGTERM")
	}
	if s := shownStderr(e.stderr); s != "" {
		b.WriteString(": ")
		b.WriteString(s)
	}
	return b.String()
}

func (e *stopError) Unwrap() []error { return e.causes }
