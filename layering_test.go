package strata_test

import (
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
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
	// The document layer; its subpackages share its rank and import it:
	// yamljson (YAML read as sigs.k8s.io/yaml reads it, fast, without
	// Helm) and documenttest.
	"internal/document":   0,
	"internal/testbin":    0,
	"internal/golden":     0,
	"internal/eventually": 0,
	"internal/startgc":    0,
	"internal/stamp":      0,
	"internal/memlimit":   0,
	"internal/limits":     0,
	"internal/rsswatch":   0,
	"internal/deadline":   0,
	// worker runs requests in worker processes of this binary; it knows
	// nothing of what they do.
	"internal/worker": 0,

	"internal/values":   1,
	"internal/manifest": 1,

	"internal/schema":    2,
	"internal/params":    2,
	"internal/hookexec":  2,
	"internal/kube":      2,
	"internal/kustomize": 2,
	// helmrender renders charts for both helmplugin and operator/release.
	"internal/helmrender": 2,

	"internal/layers":     3,
	"internal/helmplugin": 3,
	"internal/cmpserver":  3,
	"internal/generator":  3,
	"internal/operator":   3,

	// builtin is the table of built-in plugins: it joins cmpserver's plugin
	// interface and the plugins (helmplugin), both of rank 3.
	"internal/cmpserver/builtin": 4,
	// preview serves cmp preview's page: local runs of a cmpserver.Plugin.
	"internal/cmpserver/preview": 4,

	"internal/cli": 5,
	"cmd/strata":   6,

	// hack holds programs that are not the product (benchmarks, dev
	// tools), each a package main; nothing imports them.
	"hack": 7,
}

// subrank orders the packages inside the tree of one rank entry, where
// the rank table alone lets them import one another: in a tree with
// subranks, every package has one (packages under a listed directory share
// it) and may import only packages of the tree with a strictly lower
// subrank — the tree's root has the highest, its subpackages never import
// it.
var subrank = map[string]int{
	// The operator: its queues, schedules, debug socket, Lease, config
	// store and module discovery know nothing of each other; the hook
	// protocol (hook) and the releases (release) come next; then what
	// builds on the hook protocol — its metrics, kubernetes bindings and
	// patches, webhooks, and the values store (which holds hooks' typed
	// patches and owns their scope rule); the engine last.
	"internal/operator/queue":    0,
	"internal/operator/schedule": 0,
	"internal/operator/debug":    0,
	"internal/operator/lease":    0,
	"internal/operator/config":   0,
	"internal/operator/module":   0,

	"internal/operator/hook":    1,
	"internal/operator/release": 1,

	"internal/operator/hookmetrics": 2,
	"internal/operator/kubebind":    2,
	"internal/operator/kubepatch":   2,
	"internal/operator/webhook":     2,
	"internal/operator/store":       2,

	"internal/operator": 3,
}

// product is the program strata ships; testOnly are the packages that
// exist for tests. The product must not pull in one of them, nor package
// testing, through any chain of imports.
const product = "cmd/strata"

var testOnly = []string{"internal/golden", "internal/document/documenttest", "internal/testbin", "internal/kube/kubetest", "internal/eventually", "internal/rsswatch", "internal/hookexec/hookexectest", "internal/worker/workertest", "internal/helmplugin/paritytest", "internal/cmpserver/paritytest", "internal/cmpserver/preview/browsertest"}

// restricted imports: only the listed packages may import the prefix.
var restricted = []struct {
	prefix  string
	allowed []string
}{
	{"helm.sh/helm/", []string{"internal/helmrender", "internal/helmplugin", "internal/operator/release"}},
	// The bench and load drivers under hack/ drive the API server directly.
	{"k8s.io/client-go", []string{"internal/kube", "internal/operator", "internal/layers/controller", "hack"}},
	{"sigs.k8s.io/controller-runtime", []string{"internal/kube", "internal/operator", "internal/layers/controller"}},
}

// subOwner returns the subrank entry a package directory of the tree of
// rank entry root belongs to: the root itself, or the listed directory
// below the root it lies in.
func subOwner(dir, root string) (string, bool) {
	if dir == root {
		_, ok := subrank[root]
		return root, ok
	}
	for d := dir; d != root && d != "." && d != "/"; d = filepath.Dir(d) {
		if _, ok := subrank[d]; ok {
			return d, true
		}
	}
	return "", false
}

// subranked reports whether the tree of rank entry root has subranks.
func subranked(root string) bool {
	_, ok := subrank[root]
	return ok
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
		"internal/cmpserver/server.go imports helm.sh/helm/v4/pkg/action: only [internal/helmrender internal/helmplugin internal/operator/release] may",
		"internal/cmpserver/server.go (rank 3) imports github.com/strata-dev/strata/internal/generator (rank 3): imports must point down",
		"internal/operator/gizmo/gizmo.go: package internal/operator/gizmo has no subrank; add it to the subrank table in layering_test.go",
		"internal/operator/queue/queue.go (subrank 0) imports github.com/strata-dev/strata/internal/operator/store (subrank 2): imports within internal/operator must point down",
		"internal/values/tree.go (rank 1) imports github.com/strata-dev/strata/internal/cli (rank 5): imports must point down",
		"internal/widget/widget.go: package internal/widget has no rank; add it to the rank table in layering_test.go",
		"cmd/strata pulls in the test-only package internal/golden: cmd/strata → internal/cli → internal/golden",
		"cmd/strata pulls in package testing: cmd/strata → internal/cli → testing",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations(testdata/layering) =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// violations lists the imports under root that break the layering rules.
func violations(root string) ([]string, error) {
	var problems []string
	fset := token.NewFileSet()
	graph := map[string][]string{} // package dir -> imports (strata's as dirs)
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
		if _, ok := subOwner(dir, self); !ok && subranked(self) {
			problems = append(problems, fmt.Sprintf("%s: package %s has no subrank; add it to the subrank table in layering_test.go", rel, dir))
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
				graph[dir] = append(graph[dir], ip)
				continue
			}
			graph[dir] = append(graph[dir], target)
			dep, ok := owner(target)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s imports %s, which has no rank", rel, ip))
				continue
			}
			if dep != self && rank[dep] >= rank[self] {
				problems = append(problems, fmt.Sprintf("%s (rank %d) imports %s (rank %d): imports must point down", rel, rank[self], ip, rank[dep]))
			}
			if dep == self && subranked(self) {
				from, ok1 := subOwner(dir, self)
				to, ok2 := subOwner(target, self)
				if ok1 && ok2 && from != to && subrank[to] >= subrank[from] {
					problems = append(problems, fmt.Sprintf("%s (subrank %d) imports %s (subrank %d): imports within %s must point down", rel, subrank[from], ip, subrank[to], self))
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return append(problems, productDeps(graph)...), nil
}

// productDeps walks the imports of the product's non-test files, breadth
// first, and reports each test-only package and package testing it
// reaches, with the shortest chain of imports that pulls it in. It sees
// strata's packages only; TestProductDeps checks the rest.
func productDeps(graph map[string][]string) []string {
	if _, ok := graph[product]; !ok {
		return nil
	}
	from := map[string]string{product: ""}
	queue := []string{product}
	var problems []string
	chain := func(p string) string {
		var c []string
		for ; p != ""; p = from[p] {
			c = append(c, p)
		}
		slices.Reverse(c)
		return strings.Join(c, " → ")
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		switch {
		case within(p, testOnly):
			problems = append(problems, fmt.Sprintf("%s pulls in the test-only package %s: %s", product, p, chain(p)))
			continue
		case p == "testing" || strings.HasPrefix(p, "testing/"):
			problems = append(problems, fmt.Sprintf("%s pulls in package %s: %s", product, p, chain(p)))
			continue
		}
		deps := slices.Clone(graph[p])
		slices.Sort(deps)
		for _, d := range slices.Compact(deps) {
			if _, seen := from[d]; !seen {
				from[d] = p
				queue = append(queue, d)
			}
		}
	}
	return problems
}

// testingImporters are the packages outside strata, in the product's
// imports, that import package testing, each with why that is harmless.
var testingImporters = map[string]string{
	// Both call only testing.Testing(), to give tests a fixed Kubernetes
	// version instead of the client-go version of the build info.
	"helm.sh/helm/v4/internal/version": "testing.Testing()",
	"helm.sh/helm/v4/pkg/chart/common": "testing.Testing()",
}

// TestProductDeps checks the product's whole import closure, modules
// included, with the go command: no test-only strata package, and package
// testing only through the known importers above (a new one is an error
// to look at, not to add blindly).
func TestProductDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./"+product).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		seen++
		if rel, ok := strings.CutPrefix(pkg, module+"/"); ok && within(rel, testOnly) {
			t.Errorf("%s pulls in the test-only package %s", product, rel)
		}
		if slices.Contains(imports, "testing") {
			if _, ok := testingImporters[pkg]; !ok {
				t.Errorf("%s pulls in package testing through %s; keep it out, or if it is a module's harmless use, list it in testingImporters with why", product, pkg)
			}
		}
	}
	if seen < 100 {
		t.Errorf("go list -deps ./%s listed %d packages; the check saw nothing", product, seen)
	}
}
