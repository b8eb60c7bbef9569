package hookexec_test

import (
	"go/build"
	"strings"
	"testing"
)

// TestDeps keeps the package on the standard library, and its tests on the
// standard library, go-cmp, strata's polling helper and hookexectest (both
// standard library only).
func TestDeps(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	stdlib := func(path string) bool {
		first, _, _ := strings.Cut(path, "/")
		return !strings.Contains(first, ".")
	}
	for _, imp := range pkg.Imports {
		if !stdlib(imp) {
			t.Errorf("hookexec imports %s; it may use the standard library only", imp)
		}
	}
	for _, imp := range append(pkg.TestImports, pkg.XTestImports...) {
		if !stdlib(imp) && imp != "github.com/google/go-cmp/cmp" && imp != "github.com/strata-dev/strata/internal/hookexec" &&
			imp != "github.com/strata-dev/strata/internal/eventually" && imp != "github.com/strata-dev/strata/internal/hookexec/hookexectest" {
			t.Errorf("hookexec's tests import %s; they may use the standard library, go-cmp, internal/eventually and hookexectest only", imp)
		}
	}
}
