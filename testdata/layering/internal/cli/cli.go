package cli

import (
	_ "testing"

	_ "github.com/strata-dev/strata/internal/golden"
)
