// Command strata makes Kubernetes manifest generation pluggable and
// configuration layered, and explains every value it produces.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/strata-dev/strata/internal/cli"
	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/startgc"
	"github.com/strata-dev/strata/internal/worker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The packages are initialised: the collector they ran without comes
	// back (startgc).
	startgc.Resume()
	// strata started as a worker of its own (`strata helm-worker`, the
	// built-in Helm plugin's render worker) runs it, not a command.
	code, ran := worker.Run(ctx, os.Args, os.Stderr, helmplugin.WorkerEntry())
	if !ran {
		code = cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	}
	stop()
	os.Exit(code)
}
