package generator_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/generator"
	"github.com/strata-dev/strata/internal/values"
)

var update = flag.Bool("update", false, "rewrite the expected answers under examples/generator/expected")

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
	input, err := values.Parse(inputData, "input.yaml")
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
			file := filepath.Join(dir, "expected", p.Name+".json")
			if *update {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("plugin %s answered differently from %s (-want +got):\n%s", p.Name, file, diff)
			}
		})
	}
}
