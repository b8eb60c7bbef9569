package appset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/generator"
	"github.com/strata-dev/strata/internal/generator/appset"
)

// pluginServer speaks the plugin contract: it checks the request as Argo
// CD's controller sends it and answers one parameter set per branch of the
// requested repository.
type pluginServer struct {
	token    string
	mu       sync.Mutex
	requests []map[string]any
}

func (p *pluginServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fail := func(code int, msg string) {
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
	}
	switch {
	case r.Method != http.MethodPost || r.URL.Path != "/api/v1/getparams.execute":
		fail(http.StatusNotFound, "not found: "+r.Method+" "+r.URL.Path)
		return
	case r.Header.Get("Authorization") == "":
		fail(http.StatusUnauthorized, "missing token")
		return
	case r.Header.Get("Authorization") != "Bearer "+p.token:
		fail(http.StatusForbidden, "wrong token")
		return
	case r.Header.Get("Content-Type") != "application/json" || r.Header.Get("User-Agent") != "argocd-applicationset":
		fail(http.StatusBadRequest, "bad headers")
		return
	}
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fail(http.StatusBadRequest, err.Error())
		return
	}
	p.mu.Lock()
	p.requests = append(p.requests, req)
	p.mu.Unlock()
	params, _ := req["input"].(map[string]any)["parameters"].(map[string]any)
	repo, _ := params["repo"].(string)
	var sets []map[string]any
	for _, b := range []string{"main", "feature-x"} {
		sets = append(sets, map[string]any{"branch": b, "repo": repo, "build": map[string]any{"number": 7}})
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"output": map[string]any{"parameters": sets}})
}

const httpAppSet = `apiVersion: argoproj.io/v1alpha1
kind: ApplicationSet
metadata:
  name: branches
  namespace: argocd
spec:
  goTemplate: true
  generators:
    - matrix:
        generators:
          - list:
              elements:
                - {repo: api}
                - {repo: web}
          - plugin:
              configMapRef: {name: branch-plugin}
              input:
                parameters:
                  repo: '{{ .repo }}'
  template:
    metadata:
      name: '{{ .repo }}-{{ .branch }}'
      annotations:
        build: '{{ .build.number }}'
    spec:
      project: default
      destination: {server: https://kubernetes.default.svc, namespace: '{{ .repo }}'}
`

func pluginManifests(url string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: branch-plugin
  namespace: argocd
data:
  baseUrl: %s
  token: $plugin-secret:token
  requestTimeout: "5"
---
apiVersion: v1
kind: Secret
metadata:
  name: plugin-secret
  namespace: argocd
stringData:
  token: s3cr3t
`, url)
}

func renderOverHTTP(t *testing.T, srv *httptest.Server, tokens map[string]string) (*appset.Result, error) {
	t.Helper()
	set := &appset.PluginSet{Tokens: tokens}
	if err := set.Load([]byte(pluginManifests(srv.URL)), "plugin.yaml", false); err != nil {
		t.Fatal(err)
	}
	a, err := appset.Parse([]byte(httpAppSet), "appset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := appset.Renderer{Plugins: set.Resolver(func(c appset.PluginConfig) appset.ParamsGetter {
		return &generator.Client{BaseURL: c.BaseURL, Token: c.Token, Timeout: c.Timeout, HTTPClient: srv.Client()}
	})}
	return r.Render(context.Background(), a)
}

func TestPluginOverHTTP(t *testing.T) {
	p := &pluginServer{token: "s3cr3t"}
	srv := httptest.NewServer(p)
	defer srv.Close()
	res, err := renderOverHTTP(t, srv, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, app := range res.Applications {
		md := app["metadata"].(map[string]any)
		got = append(got, md["name"].(string)+" build="+md["annotations"].(map[string]any)["build"].(string))
	}
	want := []string{"api-main build=7", "api-feature-x build=7", "web-main build=7", "web-feature-x build=7"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Applications (-want +got):\n%s", diff)
	}
	wantReqs := []map[string]any{
		{"applicationSetName": "branches", "input": map[string]any{"parameters": map[string]any{"repo": "api"}}},
		{"applicationSetName": "branches", "input": map[string]any{"parameters": map[string]any{"repo": "web"}}},
	}
	if diff := cmp.Diff(wantReqs, p.requests); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestPluginOverHTTPWrongToken(t *testing.T) {
	srv := httptest.NewServer(&pluginServer{token: "s3cr3t"})
	defer srv.Close()
	_, err := renderOverHTTP(t, srv, map[string]string{"branch-plugin": "guess"})
	var se *generator.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusForbidden {
		t.Fatalf("Render with a wrong token = %v, want a 403 StatusError", err)
	}
	for _, want := range []string{"spec.generators[0].matrix.generators[1].plugin", "wrong token"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "guess") || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error %q shows a token", err)
	}
}
