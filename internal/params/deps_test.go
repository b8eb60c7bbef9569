package params_test

import (
	"go/build"
	"strings"
	"testing"
)

// TestDeps: params sits below the capability packages and above values and
// document; from this module it imports those two only.
func TestDeps(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.HasPrefix(imp, "github.com/strata-dev/strata/") && imp != "github.com/strata-dev/strata/internal/values" && imp != "github.com/strata-dev/strata/internal/document" {
			t.Errorf("params imports %s; it may import only internal/values and internal/document from this module", imp)
		}
	}
}
