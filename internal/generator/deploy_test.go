package generator_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/generator"
)

// TestDeployConfig checks the GeneratorConfig shipped in
// deploy/generator/generator-config.yaml and the data of its static plugin.
func TestDeployConfig(t *testing.T) {
	file := filepath.Join("..", "..", "deploy", "generator", "generator-config.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := document.Parse(data, file)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := cm["data"].(map[string]any)
	gen, _ := d["gen.yaml"].(string)
	cfg, err := generator.ParseConfig([]byte(gen), file+" data.gen.yaml", "/etc/strata")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MetricsListen == "" || cfg.ShutdownDelay == 0 {
		t.Errorf("the deployed configuration should serve metrics apart and delay shutdown: %+v", cfg)
	}
	for _, p := range cfg.Plugins {
		if p.Token == nil {
			t.Errorf("plugin %s is deployed without a token", p.Name)
		}
	}
	clusters, _ := d["clusters.yaml"].(string)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "clusters.yaml"), []byte(clusters), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &generator.StaticBackend{Files: []string{"clusters.yaml"}, Dir: dir}
	if _, err := b.Reload(); err != nil {
		t.Errorf("data.clusters.yaml: %v", err)
	}
}
