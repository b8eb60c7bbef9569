package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/cli"
	"github.com/strata-dev/strata/internal/golden"
)

// TestAppsetExamples renders the ApplicationSets under examples/appset as
// docs/appset.md shows and compares the output with expected.yaml next to
// each (regenerated with -update). The plugin example's plugin is an
// httptest server answering params.json the way a plugin server does.
func TestAppsetExamples(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ex := filepath.Join(root, "examples", "appset")
	plugin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/branches/api/v1/getparams.execute" || r.Header.Get("Authorization") != "Bearer change-me" {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"message":"wrong path or token"}`))
			return
		}
		var req struct {
			ApplicationSetName string `json:"applicationSetName"`
			Input              struct {
				Parameters map[string]any `json:"parameters"`
			} `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.ApplicationSetName != "previews" || req.Input.Parameters["repo"] != "shop" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"message":"unexpected request"}`))
			return
		}
		data, err := os.ReadFile(filepath.Join(ex, "plugin", "params.json"))
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(data)
	}))
	defer plugin.Close()
	// The example's ConfigMap with the test server as its base URL.
	cm, err := os.ReadFile(filepath.Join(ex, "plugin", "plugin-cm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cmFile := filepath.Join(t.TempDir(), "plugin-cm.yaml")
	if err := os.WriteFile(cmFile, bytes.Replace(cm, []byte("http://localhost:4355"), []byte(plugin.URL), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
	}{
		{"list", []string{"appset", "render", "examples/appset/list/appset.yaml"}},
		{"matrix", []string{"appset", "render", "examples/appset/matrix/appset.yaml"}},
		{"merge", []string{"appset", "render", "examples/appset/merge/appset.yaml"}},
		{"git-clusters", []string{"appset", "render", "examples/appset/git-clusters/appset.yaml", "--repo", "https://github.com/example/gitops.git=examples/appset/git-clusters/repo", "--secret", "examples/appset/git-clusters/clusters.yaml"}},
		{"plugin", []string{"appset", "render", "examples/appset/plugin/appset.yaml", "--plugin-config", cmFile, "--secret", "examples/appset/plugin/secret.yaml"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(root)
			var stdout, stderr bytes.Buffer
			if code := cli.Main(context.Background(), tc.args, nil, &stdout, &stderr); code != 0 {
				t.Fatalf("strata %s: exit %d\n%s", strings.Join(tc.args, " "), code, stderr.String())
			}
			golden.CheckFile(t, filepath.Join(ex, tc.name, "expected.yaml"), stdout.Bytes())
		})
	}
}
