package appset_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/generator/appset"
)

const cm = `apiVersion: v1
kind: ConfigMap
metadata: {name: p, namespace: argocd}
data:
  baseUrl: http://p.argocd.svc:8080
  token: $plugin.p.token
  requestTimeout: "12"
`

func TestPluginSetConfig(t *testing.T) {
	tests := []struct {
		name    string
		files   []string // ConfigMap/Secret manifests
		tokens  map[string]string
		env     map[string]string
		plugin  string
		want    appset.PluginConfig
		wantErr string
	}{
		{
			name:   "token from argocd-secret",
			files:  []string{cm, "apiVersion: v1\nkind: Secret\nmetadata: {name: argocd-secret}\ndata:\n  plugin.p.token: czNjcjN0\n"},
			plugin: "p",
			want:   appset.PluginConfig{Name: "p", BaseURL: "http://p.argocd.svc:8080", Token: "s3cr3t", Timeout: 12 * time.Second},
		},
		{
			name: "token from a named Secret, in a List, stringData over data",
			files: []string{strings.Replace(cm, "$plugin.p.token", "$other:tok", 1) +
				"---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: other}\n  data: {tok: b2xk}\n  stringData: {tok: new}\n"},
			plugin: "p",
			want:   appset.PluginConfig{Name: "p", BaseURL: "http://p.argocd.svc:8080", Token: "new", Timeout: 12 * time.Second},
		},
		{
			name:   "--token wins",
			files:  []string{cm},
			tokens: map[string]string{"p": "flag"},
			env:    map[string]string{"STRATA_APPSET_TOKEN_P": "env"},
			plugin: "p",
			want:   appset.PluginConfig{Name: "p", BaseURL: "http://p.argocd.svc:8080", Token: "flag", Timeout: 12 * time.Second},
		},
		{
			name:   "environment",
			files:  []string{strings.Replace(cm, "name: p,", "name: my-plugin.v2,", 1)},
			env:    map[string]string{"STRATA_APPSET_TOKEN_MY_PLUGIN_V2": "env"},
			plugin: "my-plugin.v2",
			want:   appset.PluginConfig{Name: "my-plugin.v2", BaseURL: "http://p.argocd.svc:8080", Token: "env", Timeout: 12 * time.Second},
		},
		{
			// The controller trims spaces and line breaks around the
			// Secret's value (a token file written with echo).
			name:   "token from a Secret is trimmed",
			files:  []string{cm, "apiVersion: v1\nkind: Secret\nmetadata: {name: argocd-secret}\ndata:\n  plugin.p.token: czNjcjN0Cg==\n"},
			plugin: "p",
			want:   appset.PluginConfig{Name: "p", BaseURL: "http://p.argocd.svc:8080", Token: "s3cr3t", Timeout: 12 * time.Second},
		},
		{
			// The controller splits "$secret:key" at every colon and reads
			// the first two parts.
			name:   "anything after a second colon is ignored",
			files:  []string{strings.Replace(cm, "$plugin.p.token", "$other:tok:extra", 1), "apiVersion: v1\nkind: Secret\nmetadata: {name: other}\nstringData: {tok: s3cr3t}\n"},
			plugin: "p",
			want:   appset.PluginConfig{Name: "p", BaseURL: "http://p.argocd.svc:8080", Token: "s3cr3t", Timeout: 12 * time.Second},
		},
		{
			name:   "requestTimeout 0 is the default",
			files:  []string{strings.Replace(cm, `"12"`, `"0"`, 1), "apiVersion: v1\nkind: Secret\nmetadata: {name: argocd-secret}\nstringData: {plugin.p.token: s3cr3t}\n"},
			plugin: "p",
			want:   appset.PluginConfig{Name: "p", BaseURL: "http://p.argocd.svc:8080", Token: "s3cr3t"},
		},
		{name: "timeout with spaces", files: []string{strings.Replace(cm, `"12"`, `" 12"`, 1)}, plugin: "p", wantErr: `data.requestTimeout " 12": give whole seconds, e.g. "30", without spaces or a unit; the controller refuses it too`},
		{name: "negative timeout", files: []string{strings.Replace(cm, `"12"`, `"-1"`, 1)}, plugin: "p", wantErr: `data.requestTimeout "-1" is negative`},
		{name: "unknown ConfigMap lists the given ones", files: []string{cm}, plugin: "q", wantErr: `no plugin ConfigMap named "q" was given; the ConfigMaps given are p`},
		{name: "no ConfigMaps at all", plugin: "q", wantErr: `no plugin ConfigMap was given; pass the ConfigMap named "q" with --plugin-config FILE`},
		{name: "missing Secret", files: []string{cm}, plugin: "p", wantErr: `refers to Secret "argocd-secret", which was not given`},
		{name: "missing key", files: []string{cm, "apiVersion: v1\nkind: Secret\nmetadata: {name: argocd-secret}\nstringData: {other: x}\n"}, plugin: "p", wantErr: `Secret "argocd-secret" (input:1) has no key "plugin.p.token"`},
		{name: "literal token", files: []string{strings.Replace(cm, "$plugin.p.token", "s3cr3t", 1)}, plugin: "p", wantErr: `data.token must refer to a Secret key`},
		{name: "bad baseUrl", files: []string{strings.Replace(cm, "http://p.argocd.svc:8080", "p.argocd.svc", 1)}, plugin: "p", wantErr: `data.baseUrl "p.argocd.svc" is not an http(s) URL`},
		{name: "bad timeout", files: []string{strings.Replace(cm, `"12"`, `"12s"`, 1)}, plugin: "p", wantErr: `data.requestTimeout "12s": give whole seconds`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &appset.PluginSet{Tokens: tc.tokens, LookupEnv: func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }}
			for _, f := range tc.files {
				if err := s.Load([]byte(f), "input", false); err != nil {
					t.Fatalf("Load: %v", err)
				}
			}
			got, err := s.Config(tc.plugin)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Config(%q) error = %v, want one containing %q", tc.plugin, err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cr3t") {
					t.Errorf("error %q shows the token", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Config(%q): %v", tc.plugin, err)
			}
			if got != tc.want {
				t.Errorf("Config(%q) = %+v, want %+v", tc.plugin, got, tc.want)
			}
		})
	}
}

func TestPluginSetLoadErrors(t *testing.T) {
	tests := []struct {
		name, data  string
		secretsOnly bool
		want        string
	}{
		{"other kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", false, `input:1:1: kind "Pod": expected a ConfigMap or a Secret`},
		{"ConfigMap as Secret", cm, true, `ConfigMap "p" given as a Secret`},
		{"duplicate", cm + "---\n" + cm, false, `input:9:1: ConfigMap "p" is given twice (first at input:1)`},
		{"bad base64", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {k: '!!'}\n", false, `input:4:8: Secret "s" data.k is not base64`},
		{"typo", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\ndta: {}\n", false, `input:4:1: unknown field "dta"`},
		{"empty", "# nothing\n", false, `no ConfigMap or Secret manifest`},
		{"no name", "apiVersion: v1\nkind: ConfigMap\ndata: {}\n", false, `ConfigMap without metadata.name`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &appset.PluginSet{}
			err := s.Load([]byte(tc.data), "input", tc.secretsOnly)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := (&appset.PluginSet{}).Config("x"); !errors.Is(err, appset.ErrNoPlugin) {
		t.Errorf("Config on an empty set = %v, want ErrNoPlugin", err)
	}
}

func TestTokenEnv(t *testing.T) {
	for in, want := range map[string]string{"p": "STRATA_APPSET_TOKEN_P", "my-plugin.v2": "STRATA_APPSET_TOKEN_MY_PLUGIN_V2"} {
		if got := appset.TokenEnv(in); got != want {
			t.Errorf("TokenEnv(%q) = %q, want %q", in, got, want)
		}
	}
}
