package values_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/values"
)

func explainText(t *testing.T, ls []*values.Layer, path string, opts values.ExplainOptions) string {
	t.Helper()
	res, err := values.Merge(ls, values.MergeOptions{Provenance: true})
	if err != nil {
		t.Fatal(err)
	}
	var p document.Path
	if path != "" {
		if p, err = document.ParsePath(path); err != nil {
			t.Fatal(err)
		}
	}
	exps, err := res.Explain(p, opts)
	if err != nil {
		t.Fatalf("Explain(%q): %v", path, err)
	}
	var b bytes.Buffer
	if err := values.WriteExplanations(&b, exps, "text"); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestExplain(t *testing.T) {
	tests := []struct {
		name   string
		layers []string
		path   string
		want   string
	}{
		{
			name:   "override chain",
			layers: []string{"a: 1", "a: 2", "b: x\na: 3"},
			want: `a = 3
    set by C (C.yaml:2) [layer 3]
    overrode 1 from A (A.yaml:1) [layer 1]
    overrode 2 from B (B.yaml:1) [layer 2]
b = "x"
    set by C (C.yaml:1) [layer 3]
`,
		},
		{
			name:   "deleted key is listed",
			layers: []string{"a: {b: 1, c: 2}", "a: {b: null}"},
			want: `a.b (removed)
    removed by B (B.yaml:1) [layer 2]
    overrode 1 from A (A.yaml:1) [layer 1]
a.c = 2
    set by A (A.yaml:1) [layer 1]
`,
		},
		{
			name:   "scalar replacing a map overrides its leaves",
			layers: []string{"a:\n  x: 1\n  y: 2", "a: flat"},
			want: `a = "flat"
    set by B (B.yaml:1) [layer 2]
    overrode a.x = 1 from A (A.yaml:2) [layer 1]
    overrode a.y = 2 from A (A.yaml:3) [layer 1]
`,
		},
		{
			name:   "map replacing a scalar: the leaf shows the enclosing write",
			layers: []string{"a: flat", "a:\n  x: 1"},
			want: `a.x = 1
    set by B (B.yaml:2) [layer 2]
    overrode a = "flat" from A (A.yaml:1) [layer 1]
`,
		},
		{
			name:   "one path",
			layers: []string{"a: {b: 1, c: 2}", "a: {b: 3}"},
			path:   "a.b",
			want: `a.b = 3
    set by B (B.yaml:1) [layer 2]
    overrode 1 from A (A.yaml:1) [layer 1]
`,
		},
		{
			name:   "subtree",
			layers: []string{"a: {b: 1, c: 2}\nz: 0", "a: {b: 3}"},
			path:   "a",
			want: `a.b = 3
    set by B (B.yaml:1) [layer 2]
    overrode 1 from A (A.yaml:1) [layer 1]
a.c = 2
    set by A (A.yaml:1) [layer 1]
`,
		},
		{
			name:   "inside a list",
			layers: []string{"l: [{p: 1}]", "l: [{p: 80}, {p: 443}]"},
			path:   "l[1].p",
			want: `l[1].p = 443
    l = [{"p":80},{"p":443}] set by B (B.yaml:1) [layer 2]
    overrode l = [{"p":1}] from A (A.yaml:1) [layer 1]
`,
		},
		{
			name:   "absent because an enclosing key was removed",
			layers: []string{"a: {b: 1}", "a: null"},
			path:   "a.b",
			want: `a.b (removed)
    a removed by B (B.yaml:1) [layer 2]
    overrode 1 from A (A.yaml:1) [layer 1]
`,
		},
		{
			name:   "empty map leaf",
			layers: []string{"a: {}"},
			want: `a = {}
    set by A (A.yaml:1) [layer 1]
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := explainText(t, layersOf(t, tc.layers...), tc.path, values.ExplainOptions{})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("explain mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExplainSensitive(t *testing.T) {
	prio := 100
	ls := layersOf(t, "db: {user: app, password: default}", "db: {password: hunter2}")
	ls[1].Sensitive = true
	ls[1].Priority = &prio
	got := explainText(t, ls, "", values.ExplainOptions{})
	if strings.Contains(got, "hunter2") {
		t.Errorf("explanation leaks a sensitive value:\n%s", got)
	}
	want := `db.password = <redacted>
    set by B (B.yaml:1) [layer 2, priority 100]
    overrode "default" from A (A.yaml:1) [layer 1]
db.user = "app"
    set by A (A.yaml:1) [layer 1]
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	// A value from a sensitive layer that was overridden stays redacted.
	ls = layersOf(t, "token: abc", "token: public")
	ls[0].Sensitive = true
	if got := explainText(t, ls, "", values.ExplainOptions{}); strings.Contains(got, "abc") {
		t.Errorf("overridden sensitive value leaks:\n%s", got)
	}
	if got := explainText(t, ls, "", values.ExplainOptions{ShowSensitive: true}); !strings.Contains(got, "abc") {
		t.Errorf("ShowSensitive hides the value:\n%s", got)
	}
	// Sensitive values written by an op (--set) are redacted too.
	set := values.Assignment{Kind: values.SetValue, Arg: "db.password=fromflag"}.Layer()
	set.Sensitive = true
	got = explainText(t, append(layersOf(t, "db: {password: x}"), set), "", values.ExplainOptions{})
	if strings.Contains(got, "fromflag") {
		t.Errorf("sensitive --set value leaks:\n%s", got)
	}
}

func TestExplainOps(t *testing.T) {
	ls := append(layersOf(t, "image: {tag: v1}\nports: [80, 81]"),
		values.Assignment{Kind: values.SetValue, Arg: "image.tag=v2,ports[1]=8081"}.Layer())
	want := `image.tag = "v2"
    set by --set image.tag=v2,ports[1]=8081 [layer 2]
    overrode "v1" from A (A.yaml:1) [layer 1]
ports = [80,8081]
    set by --set image.tag=v2,ports[1]=8081 [layer 2]
    overrode [80,81] from A (A.yaml:2) [layer 1]
`
	if diff := cmp.Diff(want, explainText(t, ls, "", values.ExplainOptions{})); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestExplainErrors(t *testing.T) {
	res, err := values.Merge(layersOf(t, "a: 1"), values.MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Explain(nil, values.ExplainOptions{}); !errors.Is(err, values.ErrNoProvenance) {
		t.Errorf("Explain without provenance = %v, want ErrNoProvenance", err)
	}
	res, err = values.Merge(layersOf(t, "a: 1"), values.MergeOptions{Provenance: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Explain(document.Path{document.Key("nope")}, values.ExplainOptions{}); !errors.Is(err, values.ErrNotFound) {
		t.Errorf("Explain(nope) = %v, want ErrNotFound", err)
	}
}
