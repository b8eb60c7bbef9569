package helmplugin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/params"
)

// FuzzChartDependencies renders a chart whose Chart.yaml and Chart.lock
// are the fuzzer's, with no repository configured: nothing may panic,
// nothing may be fetched (every remote repository is refused), file://
// dependencies resolve inside the repository only, and nothing is written
// into the repository.
func FuzzChartDependencies(f *testing.F) {
	f.Add("dependencies:\n  - name: leaf\n    version: ^1.0.0\n    repository: file://../leaf\n", "")
	f.Add("dependencies:\n  - name: leaf\n    version: 1.0.0\n    repository: https://example.invalid/charts\n",
		"dependencies:\n- name: leaf\n  repository: https://example.invalid/charts\n  version: 1.0.0\ndigest: sha256:00\ngenerated: \"2024-01-01T00:00:00Z\"\n")
	f.Add("dependencies:\n  - name: leaf\n    repository: file://../../../etc\n", "")
	f.Add("dependencies:\n  - name: leaf\n    repository: '@stable'\n  - name: x\n    repository: oci://r.io/c\n", "")
	f.Add("dependencies:\n  - null\n  - name: ''\n    repository: ''\n", "digest: x\ndependencies: [null]\n")
	f.Add("dependencies:\n  - name: leaf\n    version: '>= 1'\n    repository: file:///leaf\n    alias: l\n", "dependencies: []\n")

	root := f.TempDir()
	for name, content := range map[string]string{
		"leaf/Chart.yaml":           "apiVersion: v2\nname: leaf\nversion: 1.0.0\n",
		"leaf/templates/cm.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leaf\n",
		"app/templates/own.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: own\n",
		"app/charts/.keep/readme":   "",
		"app/values.yaml":           "a: 1\n",
		"outside-marker/Chart.yaml": "apiVersion: v2\nname: leaf\nversion: 1.0.0\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	os.RemoveAll(filepath.Join(root, "app", "charts"))
	p := New(Options{Dependencies: DependencyOptions{RepositoryCache: filepath.Join(f.TempDir(), "cache")}})
	f.Fuzz(func(t *testing.T, deps, lock string) {
		app := filepath.Join(root, "app")
		chartYAML := "apiVersion: v2\nname: app\nversion: 0.1.0\n" + deps
		if err := os.WriteFile(filepath.Join(app, "Chart.yaml"), []byte(chartYAML), 0o644); err != nil {
			t.Fatal(err)
		}
		lockPath := filepath.Join(app, "Chart.lock")
		os.Remove(lockPath)
		if lock != "" {
			if err := os.WriteFile(lockPath, []byte(lock), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err := p.Generate(context.Background(), &params.Request{AppName: "f", RepoRoot: root, AppPath: app})
		if err != nil && strings.Contains(err.Error(), "fetching") && !strings.Contains(err.Error(), "names no such repository") {
			// Remote fetches are refused before any network.
			var de *DependencyError
			if errors.As(err, &de) && strings.Contains(de.Err.Error(), "fetching http") {
				t.Fatalf("a fetch was attempted: %v", err)
			}
		}
		if _, err := os.Stat(filepath.Join(app, "charts")); err == nil {
			t.Fatal("charts/ was written into the repository")
		}
		if _, err := os.Stat(p.opts.Dependencies.RepositoryCache); err == nil {
			t.Fatal("the repository cache was written: something was fetched")
		}
	})
}
