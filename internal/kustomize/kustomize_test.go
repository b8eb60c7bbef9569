package kustomize_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/kustomize"
)

func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBuild(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		"base/kustomization.yaml":   "resources: [cm.yaml]\n",
		"base/cm.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: '1'}\n",
		"prod/kustomization.yaml":   "resources: [../base]\nnamePrefix: prod-\n",
		"escape/kustomization.yaml": "resources: [../secret.yaml]\n",
		"secret.yaml":               "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n",
	})
	out, err := (&kustomize.Build{}).Run(context.Background(), filepath.Join(root, "prod"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "name: prod-cfg"; !strings.Contains(string(out), want) {
		t.Errorf("Run(prod) = %s, want it to contain %q", out, want)
	}
	// A file outside the kustomization's directory is refused, as in kustomize.
	if out, err := (&kustomize.Build{}).Run(context.Background(), filepath.Join(root, "escape")); err == nil {
		t.Errorf("Run(escape) = %s, want an error loading ../secret.yaml", out)
	}
	if _, err := (&kustomize.Build{}).Run(context.Background(), filepath.Join(root, "nope")); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("Run(nope) = %v, want a not-a-directory error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&kustomize.Build{}).Run(ctx, filepath.Join(root, "prod")); err == nil {
		t.Error("Run with a cancelled context succeeded")
	}
}
