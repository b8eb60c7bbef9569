package layers_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/golden"
	"github.com/strata-dev/strata/internal/layers"
	"github.com/strata-dev/strata/internal/values"
)

// outputs are the sections of a golden file the test writes.
var outputs = []string{"plan", "values", "explain", "error"}

// TestRenderGolden renders each testdata/render/*.txtar: its files (an
// app.yaml and the objects) are written to a directory that is read with
// ReadDir; the App in app.yaml is rendered with provenance. The comment may
// hold "no-catalog", "show-secrets" and "explain: PATH". The sections plan
// (the layers in merge order), values (the three results) and explain (the
// text explanation), or error, hold the expected output.
func TestRenderGolden(t *testing.T) {
	golden.Run(t, "testdata/render/*.txtar", runGolden)
}

func runGolden(t *testing.T, c golden.Case) {
	var r layers.Renderer
	r.Provenance = true
	r.Namespaces.Any = true // the cases merge across namespaces; namespaces_test.go tests the rule
	var explainPath document.Path
	showSecrets := false
	for _, line := range strings.Split(string(c.Archive.Comment), "\n") {
		key, val, _ := strings.Cut(line, ":")
		switch strings.TrimSpace(key) {
		case "no-catalog":
			r.SkipCatalog = true
		case "show-secrets":
			showSecrets = true
		case "explain":
			var err error
			if explainPath, err = document.ParsePath(strings.TrimSpace(val)); err != nil {
				t.Fatal(err)
			}
		}
	}
	dir := t.TempDir()
	c.WriteFiles(t, dir, outputs...)
	t.Chdir(dir)
	got := render(t, &r, explainPath, showSecrets)
	for _, name := range outputs {
		golden.Check(t, c.Path, name, got[name])
	}
}

func render(t *testing.T, r *layers.Renderer, explainPath document.Path, showSecrets bool) map[string]string {
	t.Helper()
	ctx := context.Background()
	fail := func(err error) map[string]string { return map[string]string{"error": err.Error() + "\n"} }
	src, err := layers.ReadDir(ctx, ".", layers.Limits{})
	if err != nil {
		return fail(err)
	}
	data, err := os.ReadFile("app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	apps, err := layers.ReadApps(data, "app.yaml")
	if err != nil {
		return fail(err)
	}
	if len(apps) != 1 {
		t.Fatalf("app.yaml holds %d Apps, want 1", len(apps))
	}
	r.Source = src
	res, err := r.Render(ctx, apps[0].App, apps[0].Location)
	if err != nil {
		return fail(err)
	}
	out := map[string]string{"plan": planText(res)}
	var b bytes.Buffer
	if err := document.EncodeOrdered(&b, []string{"configMapValues", "secretValues", "values"},
		[]any{res.ConfigMapValues, res.SecretValues, res.Values}, document.YAML); err != nil {
		t.Fatal(err)
	}
	out["values"] = b.String()
	exps, err := res.Explain(explainPath, values.ExplainOptions{ShowSensitive: showSecrets})
	if err != nil {
		out["explain"] = "error: " + err.Error() + "\n"
		return out
	}
	b.Reset()
	if err := values.WriteExplanations(&b, exps, "text"); err != nil {
		t.Fatal(err)
	}
	out["explain"] = b.String()
	return out
}

// planText lists the layers in merge order, one a line.
func planText(res *layers.Rendered) string {
	var b strings.Builder
	missing := map[string]bool{}
	for _, m := range res.Missing {
		missing[m.Field+" "+m.Kind] = true
	}
	for _, chain := range [][]layers.Ref{res.Plan.ConfigMaps, res.Plan.Secrets} {
		for _, r := range chain {
			fmt.Fprintf(&b, "%s priority=%d role=%s field=%s", r, r.Priority, r.Role, r.Field)
			if missing[r.Field+" "+r.Kind] {
				b.WriteString(" missing")
			}
			b.WriteString("\n")
		}
	}
	if b.Len() == 0 {
		return "(no layers)\n"
	}
	return b.String()
}
