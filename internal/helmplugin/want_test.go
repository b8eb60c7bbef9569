package helmplugin_test

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/helmplugin/paritytest"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/parity/*.txtar and testdata/announce.json")

// TestParityWant renders each parity case (testdata/parity) with the plugin
// and compares the result with its want section (rewritten with -update).
// The comparison with the helm CLI itself is an integration test:
// paritytest's TestParity.
func TestParityWant(t *testing.T) {
	p := helmplugin.New(helmplugin.Options{})
	for _, file := range paritytest.Files(t, "testdata/parity") {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			c := paritytest.Load(t, file)
			manifests, err := p.Generate(context.Background(), c.Request(t))
			got := ""
			if err != nil {
				got = "error: " + err.Error() + "\n"
			} else {
				got = paritytest.YAMLStream(t, manifests)
			}
			if *update {
				c.WriteWant(t, got)
			} else if diff := cmp.Diff(c.Want, got); diff != "" {
				t.Errorf("Generate differs from the want section of %s (-want +got):\n%s", file, diff)
			}
		})
	}
}

// TestGenerateYAMLReadsAsGenerate is the differential test of GenerateYAML
// (the local CLI's YAML output, helm template's own text) against Generate
// (what the repo-server receives): on every parity case both fail with the
// same error, or the text, read as Argo CD reads helm's output, gives
// Generate's manifests, document for document. paritytest's TestParity
// also holds the text to helm's output byte for byte.
func TestGenerateYAMLReadsAsGenerate(t *testing.T) {
	p := helmplugin.New(helmplugin.Options{})
	for _, file := range paritytest.Files(t, "testdata/parity") {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			c := paritytest.Load(t, file)
			manifests, genErr := p.Generate(context.Background(), c.Request(t))
			text, yamlErr := p.GenerateYAML(context.Background(), c.Request(t))
			switch {
			case genErr != nil || yamlErr != nil:
				if fmt.Sprint(genErr) != fmt.Sprint(yamlErr) {
					t.Fatalf("errors differ:\nGenerate:     %v\nGenerateYAML: %v", genErr, yamlErr)
				}
				return
			case !strings.HasSuffix(string(text), "\n"):
				t.Errorf("the text does not end in a line break: %q", text)
			}
			want := make([]string, len(manifests))
			for i, m := range manifests {
				want[i] = paritytest.CanonicalJSON(t, []byte(m))
			}
			if diff := cmp.Diff(want, paritytest.Normalise(t, string(text))); diff != "" {
				t.Errorf("GenerateYAML's text, read as Argo CD reads it, differs from Generate (-Generate +text):\n%s\ntext:\n%s", diff, text)
			}
		})
	}
}
