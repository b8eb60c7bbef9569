package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-dev/strata/internal/cli"
	"github.com/strata-dev/strata/internal/golden"
	"github.com/strata-dev/strata/internal/testbin"
)

// TestExamples runs the shipped examples the way the README and docs show,
// and compares their output with the expected file next to them
// (regenerated with -update).
func TestExamples(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ex := func(p string) string { return filepath.Join(root, "examples", p) }
	// The kustomize example's plugin runs the strata binary itself.
	bin := filepath.Dir(testbin.Strata(t))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	tests := []struct {
		name string
		args []string
		want string // file under examples/
		exit int
	}{
		{"values quickstart", []string{"values", "merge", ex("values/base.yaml"), ex("values/prod.yaml"), "--set", "image.tag=1.5.0", "--explain"}, "values/explain.txt", 0},
		{"cmp trivial generate", []string{"cmp", "generate", ex("cmp/trivial/app"), "--config", ex("cmp/trivial/plugin.yaml"), "--param", "cm-name-suffix=blue", "--app-name", "demo", "--repo-root", ex("cmp/trivial")}, "cmp/trivial/expected.yaml", 0},
		{"cmp trivial parameters", []string{"cmp", "parameters", ex("cmp/trivial/app"), "--config", ex("cmp/trivial/plugin.yaml"), "--repo-root", ex("cmp/trivial")}, "cmp/trivial/parameters.json", 0},
		{"cmp shell-free generate", []string{"cmp", "generate", ex("cmp/shell-free/app"), "--config", ex("cmp/shell-free/plugin.yaml"), "--repo-root", ex("cmp/shell-free")}, "cmp/shell-free/expected.yaml", 0},
		{"cmp kustomize generate", []string{"cmp", "generate", ex("cmp/kustomize/overlays/prod"), "--config", ex("cmp/kustomize/plugin.yaml"), "--repo-root", ex("cmp/kustomize")}, "cmp/kustomize/expected.yaml", 0},
		{"cmp shell-free parameters", []string{"cmp", "parameters", ex("cmp/shell-free/app"), "--config", ex("cmp/shell-free/plugin.yaml"), "--repo-root", ex("cmp/shell-free")}, "cmp/shell-free/parameters.json", 0},
		{"helm generate", []string{"cmp", "generate", ex("helm/chart"), "--builtin", "helm", "--parameters", ex("helm/parameters.json"), "--app-name", "guestbook", "--namespace", "web", "--repo-root", ex("helm")}, "helm/expected.yaml", 0},
		{"helm parameters", []string{"cmp", "parameters", ex("helm/chart"), "--builtin", "helm", "--parameters", ex("helm/parameters.json"), "--app-name", "guestbook", "--namespace", "web", "--repo-root", ex("helm")}, "helm/announcement.json", 0},
		{"helm wrapped generate", []string{"cmp", "generate", ex("helm/wrapped/app"), "--config", ex("helm/wrapped/plugin.yaml"), "--repo-root", ex("helm/wrapped"), "--app-name", "guestbook", "--namespace", "web", "--param-map", "helm-parameters.replicaCount=3"}, "helm/wrapped/expected.yaml", 0},
		{"helm wrapped parameters", []string{"cmp", "parameters", ex("helm/wrapped/app"), "--config", ex("helm/wrapped/plugin.yaml"), "--repo-root", ex("helm/wrapped"), "--app-name", "guestbook", "--namespace", "web"}, "helm/wrapped/announcement.json", 0},
		{"layers render", []string{"layers", "render", ex("layers/app.yaml")}, "layers/expected.yaml", 0},
		{"layers explain", []string{"layers", "render", ex("layers/app.yaml"), "--explain"}, "layers/explain.txt", 0},
		{"operator render", []string{"operator", "render", "--modules-dir", ex("operator/basic/modules"), "--global-hooks-dir", ex("operator/basic/global-hooks"), "--config", ex("operator/basic/config.yaml"), "--objects", ex("operator/basic/objects"), "--namespace", "addons"}, "operator/basic/expected.yaml", 0},
		{"operator render data", []string{"operator", "render", "--modules-dir", ex("operator/basic/modules"), "--global-hooks-dir", ex("operator/basic/global-hooks"), "--config", ex("operator/basic/config.yaml"), "--objects", ex("operator/basic/objects"), "--namespace", "addons", "-o", "json"}, "operator/basic/render.json", 0},
		{"operator render values", []string{"operator", "render", "--modules-dir", ex("operator/basic/modules"), "--global-hooks-dir", ex("operator/basic/global-hooks"), "--config", ex("operator/basic/config.yaml"), "--objects", ex("operator/basic/objects"), "--namespace", "addons", "--values-only"}, "operator/basic/values.yaml", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			// Run from the repository root so paths in the output are relative.
			t.Chdir(root)
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				if rel, err := filepath.Rel(root, a); err == nil && filepath.IsAbs(a) {
					a = rel
				}
				args[i] = a
			}
			code := cli.Main(context.Background(), args, nil, &stdout, &stderr)
			if code != tc.exit {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.exit, stderr.String())
			}
			golden.CheckFile(t, ex(tc.want), stdout.Bytes())
		})
	}
}
