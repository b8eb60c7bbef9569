package hookexec

import (
	"context"
	"sync"
)

// Running counts work in progress that runs commands (requests, backend
// calls), so that a server shutting down can wait until every one of them
// has stopped its commands' process groups before it exits. The zero value
// counts nothing running.
type Running struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

// Add counts one more piece of work; call Done when it returns.
func (r *Running) Add() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		r.idle = make(chan struct{})
	}
	r.n++
}

// Done counts one piece of work finished.
func (r *Running) Done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n--
	if r.n == 0 {
		close(r.idle)
		r.idle = nil
	}
}

// Wait waits until nothing runs or ctx is done, and returns how many
// pieces of work still run.
func (r *Running) Wait(ctx context.Context) int {
	r.mu.Lock()
	idle := r.idle
	r.mu.Unlock()
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}
