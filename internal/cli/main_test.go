package cli_test

import (
	"context"
	"os"
	"testing"

	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/testbin"
	"github.com/strata-dev/strata/internal/worker"
)

// TestMain lets the test binary stand in for strata when `cmp serve
// --builtin helm`, run by a test through cli.Main, starts its render
// workers: they run os.Executable() (this binary) as
// helmplugin.WorkerEntry, which this runs as cmd/strata's main does.
func TestMain(m *testing.M) {
	if code, ok := worker.Run(context.Background(), os.Args, os.Stderr, helmplugin.WorkerEntry()); ok {
		os.Exit(code)
	}
	code := m.Run()
	testbin.RemoveStrata()
	os.Exit(code)
}
