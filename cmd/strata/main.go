// Command strata makes Kubernetes manifest generation pluggable and
// configuration layered, and explains every value it produces.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/strata-dev/strata/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
