package strata_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/document"
)

// TestDeployManifests checks that every manifest under deploy/ parses
// strictly and names its apiVersion and kind.
func TestDeployManifests(t *testing.T) {
	files, err := filepath.Glob("deploy/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no deployment manifests found")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := document.Parse(data, f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		api, _ := m["apiVersion"].(string)
		kind, _ := m["kind"].(string)
		if api == "" || kind == "" {
			t.Errorf("%s: apiVersion and kind are required", f)
		}
		if kind == "ConfigMap" {
			// An embedded plugin.yaml must be a valid plugin configuration.
			for k, v := range m["data"].(map[string]any) {
				if k == "plugin.yaml" {
					if _, err := cmpserver.ParseConfig([]byte(v.(string)), f+" data."+k); err != nil {
						t.Errorf("%v", err)
					}
				}
			}
		}
	}
}
