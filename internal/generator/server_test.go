package generator_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/generator"
)

// testServer builds a server from a GeneratorConfig whose plugins are
// listed under "plugins:", with files written to a temporary directory
// (executable when their name ends in .sh), and serves it over HTTP.
type testServer struct {
	t    testing.TB
	dir  string
	cfg  *generator.Config
	srv  *generator.Server
	http *httptest.Server
	logs *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
}

func parseTestConfig(t testing.TB, plugins string, files map[string]string) (*generator.Config, string) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	yaml := "apiVersion: strata.dev/v1alpha1\nkind: GeneratorConfig\nplugins:\n" + plugins
	cfg, err := generator.ParseConfig([]byte(yaml), "gen.yaml", dir)
	if err != nil {
		t.Fatalf("ParseConfig: %v\n%s", err, yaml)
	}
	return cfg, dir
}

func startServer(t testing.TB, cfg *generator.Config, dir string) *testServer {
	t.Helper()
	logs := &syncBuffer{}
	srv, err := generator.New(cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return &testServer{t: t, dir: dir, cfg: cfg, srv: srv, http: hs, logs: logs}
}

func newTestServer(t *testing.T, plugins string, files map[string]string) *testServer {
	t.Helper()
	cfg, dir := parseTestConfig(t, plugins, files)
	return startServer(t, cfg, dir)
}

func (ts *testServer) client(path, token string) *generator.Client {
	return &generator.Client{BaseURL: ts.http.URL + path, Token: token}
}

// post sends a raw request and returns the status and body.
func (ts *testServer) post(path string, header map[string]string, body string) (int, http.Header, string) {
	ts.t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.http.URL+path, strings.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := ts.http.Client().Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func (ts *testServer) metrics() string {
	ts.t.Helper()
	rec := httptest.NewRecorder()
	ts.srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

// metric returns the value of one sample line, e.g.
// strata_generator_backend_calls_total{plugin="p",result="ok"}.
func (ts *testServer) metric(sample string) string {
	for _, line := range strings.Split(ts.metrics(), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			return v
		}
	}
	return ""
}

const echoScript = `#!/bin/sh
# Records its stdin and environment, prints two parameter sets.
cat > "$OUT_DIR/stdin.json"
env > "$OUT_DIR/env.txt"
echo '[{"cluster":"a","n":1},{"cluster":"b","nested":{"big":12345678901234567890}}]'
`

func TestServerContract(t *testing.T) {
	ts := newTestServer(t, `
- name: echo
  token: {file: token}
  backend:
    command:
      argv: [./echo.sh]
      env: {OUT_DIR: out}
`, map[string]string{"echo.sh": echoScript, "token": "s3cret\n", "out/.keep": ""})
	got, err := ts.client("/echo", "s3cret").GetParams(context.Background(), "guestbook",
		map[string]any{"repo": "r", "big": int64(9007199254740993)})
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"cluster": "a", "n": int64(1)},
		{"cluster": "b", "nested": map[string]any{"big": jsonNumber("12345678901234567890")}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GetParams() mismatch (-want +got):\n%s", diff)
	}
	stdin, err := os.ReadFile(filepath.Join(ts.dir, "out/stdin.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"applicationSetName":"guestbook","input":{"parameters":{"big":9007199254740993,"repo":"r"}}}`; string(stdin) != want {
		t.Errorf("the command's stdin = %s, want %s", stdin, want)
	}
	env, _ := os.ReadFile(filepath.Join(ts.dir, "out/env.txt"))
	if strings.Contains(string(env), "s3cret") {
		t.Errorf("the command's environment holds the token:\n%s", env)
	}

	// The raw answer is exactly the shipped shape.
	code, hdr, body := ts.post("/echo/api/v1/getparams.execute", map[string]string{"Authorization": "Bearer s3cret"},
		`{"applicationSetName":"x","input":{"parameters":{"a":"b"}}}`)
	wantBody := `{"output":{"parameters":[{"cluster":"a","n":1},{"cluster":"b","nested":{"big":12345678901234567890}}]}}` + "\n"
	if code != 200 || body != wantBody || hdr.Get("Content-Type") != "application/json" {
		t.Errorf("POST = %d %q %s, want 200 application/json %s", code, hdr.Get("Content-Type"), body, wantBody)
	}
}

func jsonNumber(s string) any {
	var v any
	dec := jsonDecoder(s)
	dec.UseNumber()
	dec.Decode(&v)
	return v
}

func TestServerOutputShapes(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		want    []map[string]any
		code    int
		wantMsg string
	}{
		{name: "list", script: `echo '[{"a":"b"}]'`, want: []map[string]any{{"a": "b"}}},
		{name: "response shape", script: `echo '{"output":{"parameters":[{"a":"b"}]}}'`, want: []map[string]any{{"a": "b"}}},
		{name: "zero sets", script: `echo '[]'`, want: []map[string]any{}},
		{name: "exit non-zero", script: `echo partial; echo 'cannot reach the API' >&2; exit 3`, code: 500,
			wantMsg: "plugin p: `./p.sh` failed exit status 3: cannot reach the API"},
		{name: "killed by a signal", script: `kill -9 $$`, code: 500, wantMsg: "failed signal: killed"},
		{name: "garbage", script: `echo 'not json'`, code: 502, wantMsg: "the output is not JSON"},
		{name: "nothing printed", script: `true`, code: 502, wantMsg: "the command printed nothing; print a JSON list of objects, [] for zero parameter sets"},
		{name: "null", script: `echo null`, code: 502, wantMsg: "the output is null"},
		{name: "non-object item", script: `echo '[{"a":"b"}, 3]'`, code: 502, wantMsg: "the output[1] must be an object (one parameter set), but it is the integer 3"},
		{name: "object without output", script: `echo '{"a":"b"}'`, code: 502, wantMsg: "the output is an object"},
		{name: "too much output", script: `head -c 5000 /dev/zero | tr '\0' ' '`, code: 502, wantMsg: "wrote more than 1000 bytes to stdout"},
		{name: "too much output, killed", script: `trap '' TERM; while :; do echo '[{"a": "b"},'; done`, code: 502, wantMsg: "wrote more than 1000 bytes to stdout"},
		// The controller decodes numbers into float64: one beyond its range
		// fails there, so it is the command's error here, in a string not.
		{name: "number beyond float64", script: `echo '[{"s": "1e999", "n": -2E+400}]'`, code: 502, wantMsg: "the number -2E+400 is out of range"},
		{name: "number beyond float64, response shape", script: `echo '{"output":{"parameters":[{"n": 1e309}]}}'`, code: 502, wantMsg: "the number 1e309 is out of range"},
		{name: "small numbers, a backslash before a quote", script: `printf '%s\n' '[{"n": 1e-400, "m": 1.5e308, "s": "\\", "t": "1e999"}]'`,
			want: []map[string]any{{"n": 0.0, "m": 1.5e308, "s": `\`, "t": "1e999"}}},
		{name: "keys and numbers kept", script: `echo '[{"z": 1.50, "a": 12345678901234567890, "a": "last"}]'`,
			want: []map[string]any{{"z": 1.5, "a": "last"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, `
- name: p
  allowUnauthenticated: true
  backend:
    command:
      argv: [./p.sh]
      maxOutputBytes: 1000
`, map[string]string{"p.sh": "#!/bin/sh\ncat >/dev/null\n" + tc.script + "\n"})
			got, err := ts.client("/p", "").GetParams(context.Background(), "a", nil)
			if tc.code == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("GetParams() mismatch (-want +got):\n%s", diff)
				}
				return
			}
			var se *generator.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("GetParams() = %v, %v; want a status error", got, err)
			}
			if se.StatusCode != tc.code {
				t.Errorf("status = %d, want %d (%s)", se.StatusCode, tc.code, se.Message)
			}
			if !strings.Contains(se.Message, tc.wantMsg) {
				t.Errorf("message = %q, want it to contain %q", se.Message, tc.wantMsg)
			}
		})
	}
}

func TestServerAuth(t *testing.T) {
	t.Setenv("GEN_TEST_TOKEN", "from-env")
	ts := newTestServer(t, `
- name: file
  token: {file: secret/token}
  backend: {static: {files: [sets.yaml]}}
- name: env
  token: {env: GEN_TEST_TOKEN}
  backend: {static: {files: [sets.yaml]}}
`, map[string]string{"secret/token": "first\n", "sets.yaml": "- {a: b}\n"})
	const api = "/api/v1/getparams.execute"
	tests := []struct {
		name, path, auth string
		code             int
		msg              string
	}{
		{"missing", "/file", "", 401, "missing bearer token"},
		{"not bearer", "/file", "Basic Zmlyc3Q=", 401, "not a bearer token"},
		{"wrong", "/file", "Bearer second", 403, "wrong token"},
		{"prefix of the token", "/file", "Bearer firs", 403, "wrong token"},
		{"token plus more", "/file", "Bearer firstt", 403, "wrong token"},
		{"unresolved reference", "/file", "Bearer $plugin-secret:token", 403, "sent the plugin ConfigMap's token reference unresolved"},
		{"right", "/file", "Bearer first", 200, ""},
		{"scheme case", "/file", "bearer first", 200, ""},
		{"env right", "/env", "Bearer from-env", 200, ""},
		{"env wrong", "/env", "Bearer first", 403, "wrong token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, hdr, body := ts.post(tc.path+api, map[string]string{"Authorization": tc.auth}, `{"applicationSetName":"a","input":{}}`)
			if code != tc.code || !strings.Contains(body, tc.msg) {
				t.Errorf("POST with %q = %d %s, want %d with %q", tc.auth, code, body, tc.code, tc.msg)
			}
			if code == 401 && hdr.Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
		})
	}
	if strings.Contains(ts.logs.String(), "first") || strings.Contains(ts.logs.String(), "from-env") {
		t.Errorf("the logs show a token:\n%s", ts.logs.String())
	}

	// The token file changes: the new token holds, the old one no longer.
	writeFiles(t, ts.dir, map[string]string{"secret/token": "rotated-token\n"})
	ts.srv.Reload()
	if code, _, body := ts.post("/file"+api, map[string]string{"Authorization": "Bearer first"}, `{}`); code != 403 {
		t.Errorf("old token after rotation: %d %s, want 403", code, body)
	}
	if code, _, body := ts.post("/file"+api, map[string]string{"Authorization": "Bearer rotated-token"}, `{}`); code != 200 {
		t.Errorf("new token after rotation: %d %s, want 200", code, body)
	}
	// An empty token file is refused; the last good token stays.
	writeFiles(t, ts.dir, map[string]string{"secret/token": "\n"})
	ts.srv.Reload()
	if code, _, body := ts.post("/file"+api, map[string]string{"Authorization": "Bearer rotated-token"}, `{}`); code != 200 {
		t.Errorf("after an empty token file: %d %s, want the last good token to hold", code, body)
	}
	if !strings.Contains(ts.logs.String(), "the token is empty") {
		t.Errorf("the failed reload is not logged:\n%s", ts.logs.String())
	}
}

func TestServerHTTPErrors(t *testing.T) {
	ts := newTestServer(t, `
- name: p
  allowUnauthenticated: true
  backend: {static: {files: [sets.yaml]}}
`, map[string]string{"sets.yaml": "- {a: b}\n"})
	const api = "/p/api/v1/getparams.execute"
	big := `{"applicationSetName":"a","input":{"parameters":{"x":"` + strings.Repeat("y", generator.DefaultMaxRequestBytes) + `"}}}`
	tests := []struct {
		name   string
		path   string
		header map[string]string
		body   string
		code   int
		msg    string
	}{
		{"ok", api, nil, `{"applicationSetName":"a","input":{"parameters":{"k":"v"}}}`, 200, `{"output":{"parameters":[{"a":"b"}]}}`},
		{"no content type", api, map[string]string{"Content-Type": ""}, `{}`, 200, `"a":"b"`},
		{"json with charset", api, map[string]string{"Content-Type": "application/json; charset=utf-8"}, `{}`, 200, `"a":"b"`},
		{"form", api, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, `{}`, 415, "is not JSON"},
		{"too large", api, nil, big, 413, "larger than the limit of 1048576 bytes"},
		{"not JSON", api, nil, `{"applicationSetName":`, 400, "invalid request"},
		{"a list", api, nil, `[]`, 400, "the body must be a JSON object"},
		{"name not a string", api, nil, "{\n\"applicationSetName\": 3}", 400, "request body line 2: applicationSetName must be a string"},
		{"parameters not an object", api, nil, `{"input":{"parameters":[1]}}`, 400, "input.parameters must be an object"},
		{"duplicate key", api, nil, `{"input":{},"input":{}}`, 400, "duplicate key"},
		{"unknown fields ignored", api, nil, `{"applicationSetName":"a","namespace":"n","input":{"parameters":{},"x":1}}`, 200, `"a":"b"`},
		{"unknown path", "/q/api/v1/getparams.execute", nil, `{}`, 404, "no plugin serves /q/api/v1/getparams.execute"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, hdr, body := ts.post(tc.path, tc.header, tc.body)
			if code != tc.code || !strings.Contains(body, tc.msg) {
				t.Errorf("POST = %d %s, want %d with %q", code, body, tc.code, tc.msg)
			}
			if hdr.Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", hdr.Get("Content-Type"))
			}
		})
	}
	resp, err := ts.http.Client().Get(ts.http.URL + api)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET = %d, Allow %q; want 405, Allow POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := ts.http.Client().Get(ts.http.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := 200
		if path == "/readyz" {
			want = 503 // Serve sets it ready; this test serves the handler only
		}
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", path, resp.StatusCode, want)
		}
	}
	for _, m := range []string{
		`strata_generator_requests_total{code="200",plugin="p"} 4`,
		`strata_generator_requests_total{code="413",plugin="p"} 1`,
		`strata_generator_requests_total{code="405",plugin="p"} 1`,
		`strata_build_info{commit=`,
	} {
		if !strings.Contains(ts.metrics(), m) {
			t.Errorf("metrics lack %s:\n%s", m, ts.metrics())
		}
	}
}

func TestServerSlowBackend(t *testing.T) {
	ts := newTestServer(t, `
- name: slow
  allowUnauthenticated: true
  requestTimeout: 300ms
  backend:
    command:
      argv: [sleep, "30"]
- name: cmdtimeout
  allowUnauthenticated: true
  backend:
    command:
      argv: [sleep, "30"]
      timeout: 200ms
`, nil)
	for _, path := range []string{"/slow", "/cmdtimeout"} {
		_, err := ts.client(path, "").GetParams(context.Background(), "a", nil)
		var se *generator.StatusError
		if !errors.As(err, &se) || se.StatusCode != http.StatusGatewayTimeout || !strings.Contains(se.Message, "timed out") {
			t.Errorf("%s: GetParams() error = %v, want 504 timed out", path, err)
		}
	}
}

// countingBackend counts its calls and blocks each until released.
type countingBackend struct {
	calls   atomic.Int64
	entered chan struct{}
	release chan struct{}
	fail    atomic.Bool
}

func (b *countingBackend) GetParams(ctx context.Context, req generator.Request) ([]map[string]any, error) {
	n := b.calls.Add(1)
	if b.entered != nil {
		b.entered <- struct{}{}
	}
	if b.release != nil {
		select {
		case <-b.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if b.fail.Load() {
		return nil, errors.New("backend failure")
	}
	return []map[string]any{{"call": n, "appset": req.ApplicationSetName, "input": req.Input.Parameters}}, nil
}

func withBackend(t *testing.T, plugin string, b generator.Backend) *testServer {
	t.Helper()
	cfg, dir := parseTestConfig(t, plugin, map[string]string{"sets.yaml": "[]"})
	cfg.Plugins[0].Backend = b
	return startServer(t, cfg, dir)
}

func TestServerCollapsesConcurrentRequests(t *testing.T) {
	for _, ttl := range []string{"0s", "1h"} {
		t.Run("ttl "+ttl, func(t *testing.T) {
			b := &countingBackend{release: make(chan struct{})}
			ts := withBackend(t, `
- name: p
  allowUnauthenticated: true
  cache: {ttl: `+ttl+`}
  backend: {static: {files: [sets.yaml]}}
`, b)
			const n = 20
			var wg sync.WaitGroup
			results := make([][]map[string]any, n)
			errs := make([]error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i], errs[i] = ts.client("/p", "").GetParams(context.Background(), "a", map[string]any{"k": "v"})
				}()
			}
			eventually.True(t, "all requests to join one call", func() (bool, string) {
				got := ts.metric(`strata_generator_cache_lookups_total{plugin="p",result="shared"}`)
				return got == fmt.Sprint(n-1), "shared lookups: " + got
			})
			close(b.release)
			wg.Wait()
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("request %d: %v", i, errs[i])
				}
				if diff := cmp.Diff(results[0], results[i]); diff != "" {
					t.Errorf("request %d got another answer (-first +this):\n%s", i, diff)
				}
			}
			if got := b.calls.Load(); got != 1 {
				t.Errorf("%d concurrent identical requests made %d backend calls, want 1", n, got)
			}
		})
	}
}

func TestServerCache(t *testing.T) {
	b := &countingBackend{}
	ts := withBackend(t, `
- name: p
  allowUnauthenticated: true
  cache: {ttl: 1h}
  backend: {static: {files: [sets.yaml]}}
`, b)
	c := ts.client("/p", "")
	ctx := context.Background()
	call := func(appSet string, input map[string]any) []map[string]any {
		t.Helper()
		got, err := c.GetParams(ctx, appSet, input)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	first := call("a", map[string]any{"x": int64(1), "y": "z"})
	if again := call("a", map[string]any{"y": "z", "x": int64(1)}); !cmp.Equal(first, again) || b.calls.Load() != 1 {
		t.Errorf("the same input again made %d calls, want 1 (answers %v, %v)", b.calls.Load(), first, again)
	}
	call("a", map[string]any{"x": int64(2), "y": "z"})
	call("b", map[string]any{"x": int64(1), "y": "z"})
	call("a", nil)
	call("a", map[string]any{}) // the same request as no parameters: the controller omits them
	if got := b.calls.Load(); got != 4 {
		t.Errorf("backend calls = %d, want 4 (one per distinct application set and input)", got)
	}

	// Errors are not kept.
	b.fail.Store(true)
	for range 2 {
		if _, err := c.GetParams(ctx, "new", nil); err == nil {
			t.Fatal("a failing backend answered without error")
		}
	}
	if got := b.calls.Load(); got != 6 {
		t.Errorf("backend calls = %d, want 6: a failure must not be cached", got)
	}
	b.fail.Store(false)
	call("new", nil)
	if got := b.calls.Load(); got != 7 {
		t.Errorf("backend calls = %d, want 7", got)
	}
}

// TestServerCacheRawBody sends the same bytes again, as the controller
// does: the second answer comes from the kept one without decoding the body,
// with the same bytes, a Content-Length (never chunked) and the hit counted.
func TestServerCacheRawBody(t *testing.T) {
	b := &countingBackend{}
	ts := withBackend(t, `
- name: p
  allowUnauthenticated: true
  cache: {ttl: 1h}
  backend: {static: {files: [sets.yaml]}}
`, b)
	const api = "/p/api/v1/getparams.execute"
	const body = `{"applicationSetName":"a","input":{"parameters":{"k":"v"}}}`
	var answers []string
	for i, want := range []string{"miss", "hit", "hit"} {
		req, err := http.NewRequest(http.MethodPost, ts.http.URL+api, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := ts.http.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("X-Strata-Cache") != want {
			t.Errorf("request %d: %d, X-Strata-Cache %q; want 200, %s", i+1, resp.StatusCode, resp.Header.Get("X-Strata-Cache"), want)
		}
		if resp.ContentLength != int64(len(got)) || len(resp.TransferEncoding) != 0 {
			t.Errorf("request %d: Content-Length %d, Transfer-Encoding %q for %d bytes; want the length, not chunked",
				i+1, resp.ContentLength, resp.TransferEncoding, len(got))
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("request %d: Content-Type %q, want application/json", i+1, ct)
		}
		answers = append(answers, string(got))
	}
	if answers[1] != answers[0] || answers[2] != answers[0] {
		t.Errorf("kept answers differ from the first: %q", answers)
	}
	if got := b.calls.Load(); got != 1 {
		t.Errorf("backend calls = %d, want 1", got)
	}
	for _, m := range []string{
		`strata_generator_cache_lookups_total{plugin="p",result="hit"} 2`,
		`strata_generator_cache_lookups_total{plugin="p",result="miss"} 1`,
		`strata_generator_requests_total{code="200",plugin="p"} 3`,
	} {
		if !strings.Contains(ts.metrics(), m) {
			t.Errorf("metrics lack %s:\n%s", m, ts.metrics())
		}
	}
}

func TestServerNeverAnswersEmptyOnFailure(t *testing.T) {
	b := &countingBackend{}
	b.fail.Store(true)
	ts := withBackend(t, `
- name: p
  allowUnauthenticated: true
  backend: {static: {files: [sets.yaml]}}
`, b)
	code, _, body := ts.post("/p/api/v1/getparams.execute", nil, `{"applicationSetName":"a"}`)
	if code != 500 || body != `{"message":"plugin p: backend failure"}`+"\n" {
		t.Errorf("failing backend: %d %s, want 500 with the message", code, body)
	}
}

func TestServerConcurrencyLimit(t *testing.T) {
	b := &countingBackend{entered: make(chan struct{}, 10), release: make(chan struct{})}
	ts := withBackend(t, `
- name: p
  allowUnauthenticated: true
  concurrency: 1
  maxQueue: 1
  cache: {collapse: false}
  backend: {static: {files: [sets.yaml]}}
`, b)
	c := ts.client("/p", "")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.GetParams(context.Background(), fmt.Sprint(i), nil)
		}()
		if i == 0 {
			<-b.entered // the first holds the only slot
		}
	}
	eventually.True(t, "the second request to queue", func() (bool, string) {
		got := ts.metric(`strata_generator_backend_queued_calls{plugin="p"}`)
		return got == "1", "queued calls: " + got
	})
	_, err := c.GetParams(context.Background(), "third", nil)
	var se *generator.StatusError
	if !errors.As(err, &se) || se.StatusCode != 503 || !strings.Contains(se.Message, "busy") {
		t.Errorf("third request with a full queue: %v, want 503 busy", err)
	}
	close(b.release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
}

func TestServerStaticReload(t *testing.T) {
	ts := newTestServer(t, `
- name: s
  allowUnauthenticated: true
  backend: {static: {files: ["sets/*.yaml", extra.json]}}
`, map[string]string{
		"sets/a.yaml": "- {cluster: a}\n",
		"sets/b.yaml": "- {cluster: b, port: 8080}\n",
		"extra.json":  `[{"cluster": "c"}]`,
	})
	c := ts.client("/s", "")
	get := func() []map[string]any {
		t.Helper()
		got, err := c.GetParams(context.Background(), "a", nil)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := []map[string]any{{"cluster": "a"}, {"cluster": "b", "port": int64(8080)}, {"cluster": "c"}}
	if diff := cmp.Diff(want, get()); diff != "" {
		t.Fatalf("initial data mismatch (-want +got):\n%s", diff)
	}

	writeFiles(t, ts.dir, map[string]string{"sets/a.yaml": "- {cluster: a2}\n- {cluster: a3}\n"})
	ts.srv.Reload()
	want = []map[string]any{{"cluster": "a2"}, {"cluster": "a3"}, {"cluster": "b", "port": int64(8080)}, {"cluster": "c"}}
	if diff := cmp.Diff(want, get()); diff != "" {
		t.Errorf("after an edit (-want +got):\n%s", diff)
	}

	// A bad edit and a missing file keep the last good data.
	for _, bad := range []struct {
		name, content, log string
	}{
		{"sets/b.yaml", "- {cluster: [\n", "sets/b.yaml:2: did not find expected node content"},
		{"sets/b.yaml", "- 3\n", "item 0 must be an object"},
		{"sets/b.yaml", "cluster: x\n", "must hold a list of parameter sets"},
	} {
		writeFiles(t, ts.dir, map[string]string{bad.name: bad.content})
		ts.srv.Reload()
		if diff := cmp.Diff(want, get()); diff != "" {
			t.Errorf("after writing %q to %s (-want +got):\n%s", bad.content, bad.name, diff)
		}
		if !strings.Contains(ts.logs.String(), bad.log) {
			t.Errorf("the failed reload is not logged with %q:\n%s", bad.log, ts.logs.String())
		}
	}
	if err := os.Remove(filepath.Join(ts.dir, "extra.json")); err != nil {
		t.Fatal(err)
	}
	ts.srv.Reload()
	if diff := cmp.Diff(want, get()); diff != "" {
		t.Errorf("after removing a file (-want +got):\n%s", diff)
	}
	if !strings.Contains(ts.logs.String(), "extra.json matches no file") {
		t.Errorf("the missing file is not logged:\n%s", ts.logs.String())
	}
	if m := ts.metric(`strata_generator_reloads_total{result="error",source="plugin s parameters"}`); m != "4" {
		t.Errorf("reload errors = %q, want 4", m)
	}
}
