package preview_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/eventually"

	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/builtin"
	"github.com/strata-dev/strata/internal/cmpserver/preview"
)

const testdata = "testdata/allkinds"

// newServer serves a Handler for the allkinds test plugin, run as cmp
// generate runs a plugin.yaml (sandboxed).
func newServer(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	srv, token, _ := newServerIn(t, "")
	return srv, token
}

// newServerIn is newServer with the private copies made in tmp.
func newServerIn(t *testing.T, tmp string) (*httptest.Server, string, *preview.Handler) {
	t.Helper()
	cfg, err := cmpserver.LoadConfig(filepath.Join(testdata, "plugin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	p := cmpserver.NewCommandPlugin(cfg, cmpserver.CommandOptions{Env: os.Environ()})
	token, err := preview.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(testdata, "app")
	h := &preview.Handler{
		Local:   cmpserver.Local{Plugin: p, RepoRoot: testdata, AppDir: app, AppName: "demo", Namespace: "web", TempDir: tmp},
		Token:   token,
		Command: []string{"strata", "cmp", "generate", app, "--config", filepath.Join(testdata, "plugin.yaml")},
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	h.Hosts = preview.LoopbackHosts(strings.TrimPrefix(srv.URL, "http://"))
	return srv, token, h
}

func do(t *testing.T, req *http.Request) (int, []byte, http.Header) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, b, res.Header
}

func render(t *testing.T, srv *httptest.Server, token string, body any) preview.Rendered {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/"+token+"/api/render", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", srv.URL)
	code, out, _ := do(t, req)
	if code != http.StatusOK {
		t.Fatalf("POST api/render = %d %s, want 200", code, out)
	}
	var r preview.Rendered
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAccess(t *testing.T) {
	srv, token := newServer(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	_, port, _ := strings.Cut(host, ":")
	wrong := []byte(token)
	wrong[0] ^= 1
	for _, tc := range []struct {
		name, path, host, origin, site string
		want                           int
	}{
		{name: "page with the token", path: "/" + token + "/", want: 200},
		{name: "announcement with the token", path: "/" + token + "/api/announcement", want: 200},
		{name: "under localhost", path: "/" + token + "/api/announcement", host: "localhost:" + port, want: 200},
		{name: "own origin", path: "/" + token + "/api/announcement", origin: srv.URL, site: "same-origin", want: 200},
		{name: "no token", path: "/api/announcement", want: 404},
		{name: "root", path: "/", want: 404},
		{name: "wrong token", path: "/" + string(wrong) + "/api/announcement", want: 404},
		{name: "token as a prefix", path: "/" + token[:len(token)-1] + "/api/announcement", want: 404},
		{name: "token in the query only", path: "/api/announcement?token=" + token, want: 404},
		{name: "foreign origin", path: "/" + token + "/api/announcement", origin: "http://evil.example", want: 403},
		{name: "origin on another port", path: "/" + token + "/api/announcement", origin: "http://127.0.0.1:1", want: 403},
		{name: "cross-site fetch", path: "/" + token + "/api/announcement", site: "cross-site", want: 403},
		{name: "rebound host name", path: "/" + token + "/api/announcement", host: "evil.example:" + port, want: 421},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
			if tc.host != "" {
				req.Host = tc.host
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.site != "" {
				req.Header.Set("Sec-Fetch-Site", tc.site)
			}
			code, body, hdr := do(t, req)
			if code != tc.want {
				t.Fatalf("GET %s = %d %s, want %d", tc.path, code, body, tc.want)
			}
			if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
				t.Errorf("Content-Security-Policy = %q, want default-src 'self'", csp)
			}
		})
	}
}

func TestRenderRefusals(t *testing.T) {
	srv, token := newServer(t)
	url := srv.URL + "/" + token + "/api/render"
	for _, tc := range []struct {
		name, method, ctype string
		body                []byte
		want                int
	}{
		{name: "GET", method: http.MethodGet, want: 405},
		{name: "form post", method: http.MethodPost, ctype: "application/x-www-form-urlencoded", body: []byte("{}"), want: 415},
		{name: "too large", method: http.MethodPost, ctype: "application/json", body: append(append([]byte(`{"page":"`), bytes.Repeat([]byte("a"), preview.MaxBody)...), '"', '}'), want: 400},
		{name: "unknown field", method: http.MethodPost, ctype: "application/json", body: []byte(`{"pages":"x"}`), want: 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, url, bytes.NewReader(tc.body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			if code, body, _ := do(t, req); code != tc.want {
				t.Fatalf("%s api/render = %d %s, want %d", tc.method, code, body, tc.want)
			}
		})
	}
}

func TestAnnouncement(t *testing.T) {
	srv, token := newServer(t)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/"+token+"/api/announcement", nil)
	_, body, _ := do(t, req)
	var a preview.Announced
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatal(err)
	}
	if a.Plugin != "allkinds" || a.Error != nil || len(a.Announcements) != 7 {
		t.Fatalf("announcement = %+v, want plugin allkinds, 7 announcements, no error", a)
	}
}

func TestRender(t *testing.T) {
	srv, token := newServer(t)
	params := []map[string]any{
		{"name": "owner", "string": "ops team"},
		{"name": "hosts", "array": []string{"a.example.com", "b.example.com"}},
		{"name": "labels", "map": map[string]string{"tier": "web"}},
	}
	r := render(t, srv, token, map[string]any{"page": "p", "parameters": params, "env": []map[string]string{{"name": "STAGE", "value": "prod"}}})
	if r.Error != nil {
		t.Fatalf("render error: %+v", r.Error)
	}
	for _, want := range []string{"name: demo-params", "namespace: web", "PARAM_OWNER: ops team", "PARAM_HOSTS_1: b.example.com", "PARAM_LABELS_TIER: web"} {
		if !strings.Contains(r.Manifests, want) {
			t.Errorf("manifests lack %q:\n%s", want, r.Manifests)
		}
	}
	if len(r.Resources) != 2 || r.Resources[0].Kind != "ConfigMap" || r.Resources[1].Kind != "Service" || r.Resources[1].Name != "demo" || r.Resources[1].Namespace != "web" {
		t.Errorf("resources = %+v, want the ConfigMap and Service demo in web", r.Resources)
	}
	lines := strings.Split(r.Manifests, "\n")
	if l := r.Resources[1].Line; l < 1 || l > len(lines) || lines[l-1] != "---" {
		t.Errorf("resource 1 starts at line %d, not at a document start:\n%s", l, r.Manifests)
	}
	if !strings.Contains(r.Diff, "+  PARAM_OWNER: ops team") || !strings.HasPrefix(r.Diff, "--- defaults") {
		t.Errorf("diff against the defaults lacks the owner:\n%s", r.Diff)
	}
	if len(r.Problems) != 0 {
		t.Errorf("problems = %+v, want none", r.Problems)
	}
	want := `strata cmp generate testdata/allkinds/app --config testdata/allkinds/plugin.yaml --param 'owner=ops team' --param-array hosts=a.example.com,b.example.com --param-map labels.tier=web --env STAGE=prod`
	if r.Command != want {
		t.Errorf("command =\n%s\nwant\n%s", r.Command, want)
	}

	// The plugin block, read as an Application's, renders the same.
	var app struct {
		Plugin struct {
			Name       string            `json:"name"`
			Parameters []json.RawMessage `json:"parameters"`
			Env        []preview.EnvEntry
		} `json:"plugin"`
	}
	if err := yaml.UnmarshalStrict([]byte(r.Plugin), &app); err != nil {
		t.Fatalf("plugin block: %v\n%s", err, r.Plugin)
	}
	wantBlock := `plugin:
  name: allkinds
  env:
    - name: STAGE
      value: prod
  parameters:
    - name: owner
      string: ops team
    - name: hosts
      array:
        - a.example.com
        - b.example.com
    - name: labels
      map:
        tier: web
`
	if r.Plugin != wantBlock {
		t.Errorf("plugin block =\n%s\nwant\n%s", r.Plugin, wantBlock)
	}
	if app.Plugin.Name != "allkinds" {
		t.Errorf("plugin block's name = %q, want allkinds", app.Plugin.Name)
	}
	again := render(t, srv, token, map[string]any{"page": "p", "parameters": app.Plugin.Parameters, "env": app.Plugin.Env})
	if again.Manifests != r.Manifests || again.Plugin != r.Plugin {
		t.Errorf("the plugin block rendered\n%s\nwant\n%s", again.Manifests, r.Manifests)
	}
}

func TestRenderErrors(t *testing.T) {
	srv, token := newServer(t)
	t.Run("command fails naming the parameter", func(t *testing.T) {
		r := render(t, srv, token, map[string]any{"page": "p", "parameters": []map[string]any{{"name": "owner", "string": "me"}, {"name": "replicas", "string": "two"}}})
		if r.Error == nil || r.Error.Parameter != "replicas" || !strings.Contains(r.Error.Stderr, `"two" is not a whole number`) {
			t.Fatalf("error = %+v, want replicas at fault with the command's stderr", r.Error)
		}
		if len(r.Problems) != 1 || r.Problems[0].Parameter != "replicas" {
			t.Errorf("problems = %+v, want replicas' value not a number", r.Problems)
		}
	})
	t.Run("stderr names the parameter, not the command line", func(t *testing.T) {
		// The command line names PARAM_REPLICAS; a failure with another
		// stderr must not blame replicas.
		r := render(t, srv, token, map[string]any{"page": "p", "parameters": []map[string]any{{"name": "owner", "string": "me"}, {"name": "replicas", "string": "3"}}, "env": []map[string]string{{"name": "X", "value": "y"}}})
		if r.Error != nil {
			t.Fatalf("error = %+v, want none", r.Error)
		}
	})
	t.Run("required parameter unset", func(t *testing.T) {
		r := render(t, srv, token, map[string]any{"page": "p"})
		if r.Error != nil || len(r.Problems) != 1 || r.Problems[0].Parameter != "owner" {
			t.Fatalf("error %+v, problems %+v: want the render, and owner required", r.Error, r.Problems)
		}
	})
	t.Run("malformed parameters", func(t *testing.T) {
		r := render(t, srv, token, map[string]any{"page": "p", "parameters": []map[string]any{{"name": "hosts", "array": "not a list"}}})
		if r.Error == nil || r.Error.Parameter != "hosts" {
			t.Fatalf("error = %+v, want hosts at fault", r.Error)
		}
	})
}

func TestCommandParametersFile(t *testing.T) {
	srv, token := newServer(t)
	// An item holding a comma: --param-array would split it.
	r := render(t, srv, token, map[string]any{"page": "p", "parameters": []map[string]any{{"name": "owner", "string": "it's me"}, {"name": "hosts", "array": []string{"a,b"}}}})
	if !strings.HasSuffix(r.Command, " --parameters parameters.json") || strings.Contains(r.Command, "--param ") {
		t.Errorf("command = %s, want --parameters parameters.json", r.Command)
	}
	var ps []map[string]any
	if err := json.Unmarshal([]byte(r.ParametersFile), &ps); err != nil || len(ps) != 2 || ps[1]["array"].([]any)[0] != "a,b" {
		t.Errorf("parameters file = %s (%v), want both parameters", r.ParametersFile, err)
	}
}

// TestNewerRenderCancels checks that a page's new render cancels the one
// it still runs (a render of another page goes on).
func TestNewerRenderCancels(t *testing.T) {
	tmp := t.TempDir()
	srv, token, _ := newServerIn(t, tmp)
	post := func(page string, env []map[string]string) (int, []byte) {
		b, _ := json.Marshal(map[string]any{"page": page, "env": env})
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/"+token+"/api/render", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		code, body, _ := do(t, req)
		return code, body
	}
	type answer struct {
		code int
		body []byte
	}
	slow := make(chan answer, 1)
	go func() {
		code, body := post("a", []map[string]string{{"name": "SLOW", "value": "1"}})
		slow <- answer{code, body}
	}()
	// The slow render holds its private copy while it runs.
	eventually.True(t, "the slow render's copy", func() (bool, string) {
		entries, err := os.ReadDir(tmp)
		return err == nil && len(entries) > 0, fmt.Sprint(entries, err)
	})
	if code, body := post("b", nil); code != http.StatusOK {
		t.Fatalf("another page's render = %d %s, want 200", code, body)
	}
	select {
	case a := <-slow:
		t.Fatalf("the slow render ended (%d %s) before a newer one of its page", a.code, a.body)
	default:
	}
	if code, body := post("a", nil); code != http.StatusOK {
		t.Fatalf("the newer render = %d %s, want 200", code, body)
	}
	if a := <-slow; a.code != http.StatusConflict {
		t.Fatalf("the cancelled render = %d %s, want 409", a.code, a.body)
	}
}

// TestRenderExplainsHelmValues: with the built-in Helm plugin the render
// says where each value came from, as cmp generate --explain does; a
// plugin.yaml's render has no such view.
func TestRenderExplainsHelmValues(t *testing.T) {
	repo := t.TempDir()
	for name, body := range map[string]string{
		"web/Chart.yaml":        "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"web/values.yaml":       "replicas: 1\n",
		"web/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  replicas: {{ .Values.replicas | quote }}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	token, err := preview.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	helm, err := builtin.New("helm", builtin.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := &preview.Handler{
		Local:   cmpserver.Local{Plugin: helm, RepoRoot: repo, AppDir: filepath.Join(repo, "web"), AppName: "web", Namespace: "web"},
		Token:   token,
		Command: []string{"strata", "cmp", "generate", "web", "--builtin", "helm"},
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	h.Hosts = preview.LoopbackHosts(strings.TrimPrefix(srv.URL, "http://"))
	res := render(t, srv, token, map[string]any{"page": "p", "parameters": []map[string]any{{"name": "helm-parameters", "map": map[string]string{"replicas": "4"}}}})
	if res.Error != nil {
		t.Fatalf("render: %+v", res.Error)
	}
	if want := "replicas = 4\n    set by helm-parameters replicas=4 [layer 2]\n    overrode 1 from web/values.yaml:1 [layer 1]\n"; res.Values != want {
		t.Errorf("values:\n%s\nwant:\n%s", res.Values, want)
	}
	srv2, token2 := newServer(t)
	if res := render(t, srv2, token2, map[string]any{"page": "p"}); res.Values != "" {
		t.Errorf("a plugin.yaml's render explains values: %q", res.Values)
	}
}

// TestState: api/state's version changes when a file of the app directory
// is added, written or removed, and not otherwise; the page polls it to
// read the announcement and render again.
func TestState(t *testing.T) {
	app := t.TempDir()
	if err := os.WriteFile(filepath.Join(app, "a.yaml"), []byte("a: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	token, err := preview.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	h := &preview.Handler{Local: cmpserver.Local{AppDir: app}, Token: token}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	h.Hosts = preview.LoopbackHosts(strings.TrimPrefix(srv.URL, "http://"))
	state := func() string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/"+token+"/api/state", nil)
		code, out, _ := do(t, req)
		if code != http.StatusOK {
			t.Fatalf("GET api/state = %d %s", code, out)
		}
		var s preview.State
		if err := json.Unmarshal(out, &s); err != nil || s.Version == "" {
			t.Fatalf("api/state: %s, %v", out, err)
		}
		return s.Version
	}
	v0 := state()
	if v := state(); v != v0 {
		t.Fatalf("nothing changed, yet the version went from %s to %s", v0, v)
	}
	steps := []struct {
		what string
		do   func() error
	}{
		{"a file added", func() error { return os.WriteFile(filepath.Join(app, "b.yaml"), []byte("b: 1\n"), 0o644) }},
		{"a file grown", func() error { return os.WriteFile(filepath.Join(app, "a.yaml"), []byte("a: 12\n"), 0o644) }},
		{"a file removed", func() error { return os.Remove(filepath.Join(app, "b.yaml")) }},
	}
	prev := v0
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatal(err)
		}
		v := state()
		if v == prev {
			t.Errorf("%s: the version stayed %s", s.what, v)
		}
		prev = v
	}
}
