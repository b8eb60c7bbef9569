package cli_test

import (
	"context"
	"os"
	"testing"

	"github.com/strata-dev/strata/internal/cli"
	"github.com/strata-dev/strata/internal/testbin"
)

// TestMain lets the test binary stand in for strata when `cmp serve
// --builtin helm`, run by a test through cli.Main, starts its render
// workers: they run os.Executable() (this binary) with `cmp helm-worker`.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "cmp" && os.Args[2] == "helm-worker" {
		os.Exit(cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	code := m.Run()
	testbin.RemoveStrata()
	os.Exit(code)
}
