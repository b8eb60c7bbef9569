package cmpserver

import (
	"context"
	"time"

	"github.com/strata-dev/strata/internal/hookexec"
	"google.golang.org/grpc"
)

// DefaultStopWait is how long a Server waits, once its grace period is
// over and the requests still running are cancelled, for their handlers to
// return: for their commands to be stopped (SIGTERM to the process group,
// then SIGKILL after the command's grace, 5 s by default) and their
// workspaces removed.
const DefaultStopWait = 15 * time.Second

// inflight counts the handlers running.
type inflight struct{ hookexec.Running }

func (f *inflight) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	f.Add()
	defer f.Done()
	return handler(ctx, req)
}

func (f *inflight) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	f.Add()
	defer f.Done()
	return handler(srv, ss)
}
