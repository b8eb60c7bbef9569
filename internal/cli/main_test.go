package cli_test

import (
	"os"
	"testing"

	"github.com/strata-dev/strata/internal/hookexec"
)

// TestMain lets the test binary be the sandbox helper of the plugin
// commands the tests run, as the strata binary is.
func TestMain(m *testing.M) {
	hookexec.SandboxMain()
	os.Exit(m.Run())
}
