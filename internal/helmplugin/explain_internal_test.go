package helmplugin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/strata-dev/strata/internal/params"
	"github.com/strata-dev/strata/internal/values"
)

// TestValueLayersMatchRender: the layers ValueLayers gives explain merge,
// with strata's values engine, to the values the render gives Helm
// (userValues, coalesced over the chart's values by Helm's own function).
func TestValueLayersMatchRender(t *testing.T) {
	files := map[string]string{
		"app/Chart.yaml":  "apiVersion: v2\nname: app\nversion: 0.1.0\n",
		"app/values.yaml": "replicas: 1\nimage:\n  repo: nginx\n  tag: \"1.0\"\nlabels:\n  team: a\nlist: [1, 2, 3]\nnote: hi\nempty: {}\n",
		"app/prod.yaml":   "replicas: 3\nimage:\n  tag: \"2.0\"\nlabels:\n  env: prod\nlist: [9]\n---\nnote: from the second document\n",
		"app/off.yaml":    "labels: null\n",
		"shared/cert.pem": "-----BEGIN CERTIFICATE-----\n",
		"app/envs/a.yaml": "extra: a\n",
		"app/envs/b.yaml": "extra: b\n",
	}
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	str := func(s string) *string { return &s }
	tests := []struct {
		name   string
		params []params.Parameter
		layers int
	}{
		{"chart only", nil, 1},
		{"values files, a pattern, two documents", []params.Parameter{{Name: ParamValuesFiles, Array: []string{"prod.yaml", "envs/*.yaml"}}}, 4},
		{"a null removes a map", []params.Parameter{{Name: ParamValuesFiles, Array: []string{"off.yaml"}}}, 2},
		{"values parameter over files", []params.Parameter{{Name: ParamValuesFiles, Array: []string{"prod.yaml"}}, {Name: ParamValues, String: str("replicas: 7\nimage: {repo: busybox}\n")}}, 3},
		{"set, set-string, set-file", []params.Parameter{
			{Name: ParamHelmParameters, Map: map[string]string{"image.tag": "3.0", "note": "a,b", "list": "{4,5}", "replicas": "1"}},
			{Name: ParamHelmStringParameters, Map: map[string]string{"replicas": "5"}},
			{Name: ParamFileParameters, Map: map[string]string{"cert": "../shared/cert.pem"}},
		}, 1 + 3 + 1 + 1}, // replicas=1 keeps the chart's value: left out
	}
	p := New(Options{})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := &params.Request{AppName: "app", RepoRoot: root, AppPath: filepath.Join(root, "app"), Parameters: tc.params}
			layers, err := p.ValueLayers(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(layers) != tc.layers {
				var names []string
				for _, l := range layers {
					names = append(names, l.Name)
				}
				t.Errorf("%d layers %q, want %d", len(layers), names, tc.layers)
			}
			res, err := values.Merge(layers, values.MergeOptions{Provenance: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := res.Explain(nil, values.ExplainOptions{}); err != nil {
				t.Fatal(err)
			}
			// The render's values.
			j, err := p.newJob(req)
			if err != nil {
				t.Fatal(err)
			}
			defer j.close()
			chartVals, err := j.chartValues()
			if err != nil {
				t.Fatal(err)
			}
			vs, err := j.userValues(chartVals)
			if err != nil {
				t.Fatal(err)
			}
			ch, err := loader.LoadDir(filepath.Join(root, "app"))
			if err != nil {
				t.Fatal(err)
			}
			helm, err := commonutil.CoalesceValues(ch, vs.user)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(asJSON(t, map[string]any(helm)), asJSON(t, res.Values)); diff != "" {
				t.Errorf("explain's values differ from the render's (-render +explain):\n%s", diff)
			}
		})
	}
}

func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
