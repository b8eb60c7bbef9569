package helmplugin_test

import (
	"context"
	"flag"
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
