package strata_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/strata-dev/strata"

// rank orders strata's packages: a package may import only packages of a
// strictly lower rank (ARCHITECTURE.md, STYLE.md). Packages under a listed
// directory share its rank and may import their parent.
var rank = map[string]int{
	"internal/values":  0,
	"internal/testbin": 0,
	"internal/golden":  0,

	"internal/schema":    1,
	"internal/params":    1,
	"internal/hookexec":  1,
	"internal/kube":      1,
	"internal/kustomize": 1,

	"internal/layers":     2,
	"internal/helmplugin": 2,
	"internal/cmpserver":  2,
	"internal/generator":  2,
	"internal/operator":   2,

	"internal/cli": 3,
	"cmd/strata":   4,

	// Programs that are not the product: benchmarks, generators.
	"hack": 5,
}

// restricted imports: only the listed packages may import the prefix.
var restricted = []struct {
	prefix  string
	allowed []string
}{
	{"helm.sh/helm/", []string{"internal/helmplugin"}},
	{"k8s.io/client-go", []string{"internal/kube", "internal/operator", "internal/layers/controller"}},
	{"sigs.k8s.io/controller-runtime", []string{"internal/kube", "internal/operator", "internal/layers/controller"}},
}

// within reports whether dir is one of dirs or lies under one.
func within(dir string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool {
		return dir == d || strings.HasPrefix(dir, d+"/")
	})
}

// owner returns the rank entry a package directory belongs to.
func owner(dir string) (string, bool) {
	for d := dir; d != "." && d != "/"; d = filepath.Dir(d) {
		if _, ok := rank[d]; ok {
			return d, true
		}
	}
	return "", false
}

func TestLayering(t *testing.T) {
	problems, err := violations(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// TestLayeringCatchesViolations runs the check on a fixture tree that breaks
// every rule once, so the check itself cannot silently pass.
func TestLayeringCatchesViolations(t *testing.T) {
	got, err := violations("testdata/layering")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"internal/cmpserver/server.go imports helm.sh/helm/v4/pkg/action: only [internal/helmplugin] may",
		"internal/cmpserver/server.go (rank 2) imports github.com/strata-dev/strata/internal/generator (rank 2): imports must point down",
		"internal/values/tree.go (rank 0) imports github.com/strata-dev/strata/internal/cli (rank 3): imports must point down",
		"internal/widget/widget.go: package internal/widget has no rank; add it to the rank table in layering_test.go",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations(testdata/layering) =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// violations lists the imports under root that break the layering rules.
func violations(root string) ([]string, error) {
	var problems []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "examples" || name == "deploy") {
				return filepath.SkipDir
			}
			// A nested module (hack/testbin/*) is not part of strata.
			if _, err := os.Stat(filepath.Join(path, "go.mod")); rel != "." && err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		self, ok := owner(dir)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: package %s has no rank; add it to the rank table in layering_test.go", rel, dir))
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			for _, r := range restricted {
				if strings.HasPrefix(ip, r.prefix) && !within(dir, r.allowed) {
					problems = append(problems, fmt.Sprintf("%s imports %s: only %v may", rel, ip, r.allowed))
				}
			}
			target, internal := strings.CutPrefix(ip, module+"/")
			if !internal {
				continue
			}
			dep, ok := owner(target)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s imports %s, which has no rank", rel, ip))
				continue
			}
			if dep != self && rank[dep] >= rank[self] {
				problems = append(problems, fmt.Sprintf("%s (rank %d) imports %s (rank %d): imports must point down", rel, rank[self], ip, rank[dep]))
			}
		}
		return nil
	})
	return problems, err
}
