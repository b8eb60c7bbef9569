package cmpserver

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
)

// DefaultStopWait is how long a Server waits, once its grace period is
// over and the requests still running are cancelled, for their handlers to
// return: for their commands to be stopped (SIGTERM to the process group,
// then SIGKILL after the command's grace, 5 s by default) and their
// workspaces removed.
const DefaultStopWait = 15 * time.Second

// inflight counts the handlers running.
type inflight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

func (f *inflight) add() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.idle = make(chan struct{})
	}
	f.n++
}

func (f *inflight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 {
		close(f.idle)
		f.idle = nil
	}
}

// wait waits until no handler runs, or ctx is done; it returns how many
// still run.
func (f *inflight) wait(ctx context.Context) int {
	f.mu.Lock()
	idle := f.idle
	f.mu.Unlock()
	if idle != nil {
		select {
		case <-idle:
		case <-ctx.Done():
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

func (f *inflight) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	f.add()
	defer f.done()
	return handler(ctx, req)
}

func (f *inflight) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	f.add()
	defer f.done()
	return handler(srv, ss)
}
