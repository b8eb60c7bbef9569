package generator_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/generator"
	"github.com/strata-dev/strata/internal/golden"
)

// TestExample serves examples/generator/gen.yaml and calls each of its
// plugins as the ApplicationSet controller does, comparing the answers with
// examples/generator/expected/<plugin>.json (rewritten with -update).
func TestExample(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "generator")
	cfg, err := generator.LoadConfig(filepath.Join(dir, "gen.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, cfg, dir)
	token, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	inputData, err := os.ReadFile(filepath.Join(dir, "input.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	input, err := document.Parse(inputData, "input.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cfg.Plugins {
		t.Run(p.Name, func(t *testing.T) {
			c := ts.client(p.Path, string(token[:len(token)-1]))
			sets, err := c.GetParams(context.Background(), "previews", input)
			if err != nil {
				t.Fatal(err)
			}
			got, err := generator.EncodeResponse(sets)
			if err != nil {
				t.Fatal(err)
			}
			golden.CheckFile(t, filepath.Join(dir, "expected", p.Name+".json"), got)
		})
	}
}
