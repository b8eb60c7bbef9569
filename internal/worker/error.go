package worker

import (
	"fmt"
	"time"
)

// A Kind says why the pool ended a request.
type Kind int

const (
	// Waiting: the request's context ended while it waited for a slot.
	Waiting Kind = iota + 1
	// Unavailable: no worker could be started, or none took the request.
	Unavailable
	// TimedOut: the request's context ended while a worker served it
	// (the worker was killed), or while the worker of its slot was
	// starting.
	TimedOut
	// OutOfMemory: the worker ran past the request's memory budget.
	OutOfMemory
	// Killed: the worker was killed from outside (SIGKILL: the kernel's
	// OOM killer, an operator) while it served the request.
	Killed
	// Crashed: the worker ended otherwise, or broke the protocol.
	Crashed
)

var kindNames = map[Kind]string{
	Waiting:     "waiting for a worker",
	Unavailable: "no worker",
	TimedOut:    "stopped",
	OutOfMemory: "past its memory budget",
	Killed:      "worker killed",
	Crashed:     "worker ended",
}

func (k Kind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// An Error is a request the pool ended: the handler did not answer it.
type Error struct {
	Kind Kind
	// Note is the last note the handler sent about the request ("" if
	// none).
	Note string
	// After is the time from Do's call to the request's end.
	After time.Duration
	// Exit says how the worker ended (Unavailable, OutOfMemory, Killed,
	// Crashed): its exit status and the Go runtime's first message.
	Exit string
	// Err is the cause: the context's (Waiting, TimedOut), the start's
	// (Unavailable), the pipe's (the others).
	Err error
}

func (e *Error) Error() string {
	s := e.Kind.String()
	if e.Note != "" {
		s += " (" + e.Note + ")"
	}
	if e.Kind != Waiting {
		s += fmt.Sprintf(" after %s", e.After.Round(time.Millisecond))
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if e.Exit != "" {
		s += " (" + e.Exit + ")"
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }
