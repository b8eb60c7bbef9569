package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/operator/config"
)

func TestParseData(t *testing.T) {
	c, err := config.ParseData(map[string]string{
		"global":        "a: 1\nb:\n  c: x\n",
		"certManager":   "{}",
		"nginx":         "",
		"nginxEnabled":  "false",
		"promEnabled":   " true ",
		"ingressNginx":  "replicas: 2",
		"someModuleKey": "# only a comment\n",
	}, "ConfigMap ns/addon-operator", config.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"global":        map[string]any{"a": int64(1), "b": map[string]any{"c": "x"}},
		"certManager":   map[string]any{},
		"nginx":         map[string]any{},
		"ingressNginx":  map[string]any{"replicas": int64(2)},
		"someModuleKey": map[string]any{},
		"nginxEnabled":  false,
		"promEnabled":   true,
	}
	if d := cmp.Diff(want, c.Tree()); d != "" {
		t.Errorf("ParseData (-want +got):\n%s", d)
	}
	if got := c.Global.Source; got != "ConfigMap ns/addon-operator key global" {
		t.Errorf("global's source = %q", got)
	}
	if c, err := config.ParseData(nil, "cm", config.Limits{}); err != nil || len(c.Tree()) != 0 {
		t.Errorf("ParseData(nil) = %v, %v", c, err)
	}
}

func TestParseDataErrors(t *testing.T) {
	tests := []struct {
		name string
		data map[string]string
		lim  config.Limits
		want string
	}{
		{"bad YAML", map[string]string{"global": "a: 1\nb: [\n"}, config.Limits{}, "cm: in section global: "},
		{"line of the key's text", map[string]string{"global": "a: 1\nb: 2\nb: 3\n"}, config.Limits{}, "(line 3 of key global)"},
		{"not a map", map[string]string{"nginx": "- a\n- b\n"}, config.Limits{}, "cm: "},
		{"false section", map[string]string{"nginx": "false"}, config.Limits{}, `cm: nginx: a module section holds the module's values; to enable or disable the module write nginxEnabled: "false" instead`},
		{"bad flag", map[string]string{"nginxEnabled": "yes"}, config.Limits{}, `cm: nginxEnabled: must be "true" or "false", not "yes"`},
		{"bad key", map[string]string{"ingress-nginx": "a: 1"}, config.Limits{}, "cm: ingress-nginx: not a module's values key"},
		{"bad flag key", map[string]string{"Enabled": "true"}, config.Limits{}, "cm: Enabled: not a module's values key"},
		{"maintenance state", map[string]string{"nginxMaintenance": "Paused"}, config.Limits{}, `cm: nginxMaintenance: a module's maintenance state can only take 'NoResourceReconciliation', 'noresourcereconciliation' or '' values, got "Paused"`},
		{"too many keys", map[string]string{"a": "", "b": "", "c": ""}, config.Limits{MaxKeys: 2}, "cm: 3 keys, more than the limit of 2"},
		{"too large", map[string]string{"global": strings.Repeat("a", 100)}, config.Limits{MaxBytes: 64}, "cm: the data holds 106 bytes, more than the limit of 64"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.ParseData(tc.data, "cm", tc.lim)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseData error = %v; want it to contain %q", err, tc.want)
			}
			var le *document.LoadError
			if !errors.As(err, &le) {
				t.Errorf("error %T is not a *document.LoadError", err)
			}
		})
	}
}

// TestEncodeDataKeepsText: keys a patch did not change keep their text
// (comments, order), changed ones are rewritten, removed ones dropped.
func TestEncodeDataKeepsText(t *testing.T) {
	data := map[string]string{
		"global":       "# team comment\nb: 1\na: 1\n",
		"nginx":        "r: 1 # why\n",
		"nginxEnabled": "true",
		"old":          "x: 1\n",
	}
	cur, err := config.ParseData(data, "cm", config.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	tree := cur.Tree()
	tree["nginx"] = map[string]any{"r": int64(2)}
	delete(tree, "old")
	tree["promEnabled"] = false
	next, err := config.FromTree(tree, cur)
	if err != nil {
		t.Fatal(err)
	}
	got, err := config.EncodeData(data, cur, next)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"global":       "# team comment\nb: 1\na: 1\n",
		"nginx":        "r: 2\n",
		"nginxEnabled": "true",
		"promEnabled":  "false",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("EncodeData (-want +got):\n%s", d)
	}
}

func FuzzParseData(f *testing.F) {
	f.Add("global", "a: 1\n", "nginxEnabled", "true")
	f.Add("nginx", "false", "x", "- 1")
	f.Add("global", "a: &x [*x]\n", "bEnabled", " false")
	f.Add("kind", "ConfigMap", "apiVersion", "v1")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		data := map[string]string{k1: v1, k2: v2}
		c, err := config.ParseData(data, "cm", config.Limits{MaxBytes: 1 << 16})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "cm") {
				t.Fatalf("error %q does not name the ConfigMap", err)
			}
			return
		}
		// What ParseData accepts, EncodeData writes so that it reads back the same.
		out, err := config.EncodeData(nil, config.Empty("cm"), c)
		if err != nil {
			t.Fatalf("EncodeData: %v", err)
		}
		back, err := config.ParseData(out, "cm", config.Limits{})
		if err != nil {
			t.Fatalf("ParseData(EncodeData(c)): %v\n%q", err, out)
		}
		if !config.Equal(c, back) {
			t.Fatalf("ParseData(EncodeData(c)) differs: %v\n%q", config.Diff(c, back), out)
		}
	})
}
