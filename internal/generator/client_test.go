package generator_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/generator"
)

// seen is what a test plugin server received.
type seen struct {
	method, path string
	header       http.Header
	body         string
}

// fakePlugin answers every request with status and body, recording it.
func fakePlugin(t *testing.T, status int, body string) (*httptest.Server, *seen) {
	t.Helper()
	got := &seen{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		*got = seen{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: string(b)}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func TestClientRequest(t *testing.T) {
	tests := []struct {
		name       string
		baseSuffix string
		token      string
		appSet     string
		input      map[string]any
		wantBody   string
		wantPath   string
		wantAuth   string
	}{
		{
			name: "token and parameters", token: "s3cret", appSet: "guestbook",
			input:    map[string]any{"repo": "r", "n": int64(3), "nested": map[string]any{"a": []any{"x"}}},
			wantBody: `{"applicationSetName":"guestbook","input":{"parameters":{"n":3,"nested":{"a":["x"]},"repo":"r"}}}` + "\n",
			wantPath: "/api/v1/getparams.execute",
			wantAuth: "Bearer s3cret",
		},
		{
			name: "no token, no parameters", appSet: "a",
			wantBody: `{"applicationSetName":"a","input":{}}` + "\n",
			wantPath: "/api/v1/getparams.execute",
		},
		{
			name: "base URL with a path and a trailing slash", baseSuffix: "/plugins/x/", appSet: "a",
			input:    map[string]any{},
			wantBody: `{"applicationSetName":"a","input":{}}` + "\n",
			wantPath: "/plugins/x/api/v1/getparams.execute",
		},
		{
			// The controller adds a slash only when the base URL lacks one.
			name: "base URL ending in two slashes", baseSuffix: "/x//", appSet: "a",
			wantBody: `{"applicationSetName":"a","input":{}}` + "\n",
			wantPath: "/x//api/v1/getparams.execute",
		},
		{
			// The controller's encoder leaves <, > and & as they are.
			name: "HTML characters unescaped", appSet: "a&b",
			input:    map[string]any{"q": "<x>"},
			wantBody: `{"applicationSetName":"a&b","input":{"parameters":{"q":"<x>"}}}` + "\n",
			wantPath: "/api/v1/getparams.execute",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, got := fakePlugin(t, 200, `{"output":{"parameters":[]}}`)
			c := &generator.Client{BaseURL: srv.URL + tc.baseSuffix, Token: tc.token}
			if _, err := c.GetParams(context.Background(), tc.appSet, tc.input); err != nil {
				t.Fatal(err)
			}
			if got.method != http.MethodPost || got.path != tc.wantPath {
				t.Errorf("request %s %s, want POST %s", got.method, got.path, tc.wantPath)
			}
			if got.body != tc.wantBody {
				t.Errorf("body = %s, want %s", got.body, tc.wantBody)
			}
			for h, want := range map[string]string{
				"Content-Type":  "application/json",
				"Accept":        "",
				"User-Agent":    "argocd-applicationset",
				"Authorization": tc.wantAuth,
			} {
				if v := got.header.Get(h); v != want {
					t.Errorf("header %s = %q, want %q", h, v, want)
				}
			}
			if _, ok := got.header["Authorization"]; ok != (tc.token != "") {
				t.Errorf("Authorization header sent = %v, want %v", ok, tc.token != "")
			}
		})
	}
}

func TestClientResponse(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		want    []map[string]any
		wantErr string
	}{
		{name: "sets", status: 200, body: `{"output":{"parameters":[{"a":"b"},{"c":{"d":[1,2.5]}}]}}`,
			want: []map[string]any{{"a": "b"}, {"c": map[string]any{"d": []any{int64(1), 2.5}}}}},
		{name: "big integers stay exact", status: 200, body: `{"output":{"parameters":[{"n":12345678901234567890,"m":9007199254740993}]}}`,
			want: []map[string]any{{"n": json.Number("12345678901234567890"), "m": int64(9007199254740993)}}},
		{name: "any 2xx", status: 201, body: `{"output":{"parameters":[{"a":"b"}]}}`, want: []map[string]any{{"a": "b"}}},
		{name: "empty 2xx body is zero sets", status: 204, body: ``, want: nil},
		{name: "empty 200 body is zero sets", status: 200, body: "  \n", want: nil},
		{name: "null parameters", status: 200, body: `{"output":{"parameters":null}}`, want: nil},
		{name: "unknown fields ignored", status: 200, body: `{"output":{"parameters":[{"a":"b"}],"x":1},"y":2}`, want: []map[string]any{{"a": "b"}}},
		{name: "error message", status: 500, body: `{"message":"boom","error":"other"}`, wantErr: "answered 500 Internal Server Error: boom"},
		{name: "error field", status: 403, body: `{"error":"nope"}`, wantErr: "answered 403 Forbidden: nope"},
		{name: "raw body", status: 502, body: "upstream broke\n", wantErr: "answered 502 Bad Gateway: upstream broke"},
		{name: "empty error body", status: 401, body: "", wantErr: "answered 401 Unauthorized: (empty body)"},
		{name: "3xx is an error", status: 304, body: "", wantErr: "answered 304"},
		{name: "not JSON", status: 200, body: "<html>", wantErr: "the answer is not JSON"},
		{name: "list instead of object", status: 200, body: `[{"a":"b"}]`, wantErr: "the answer must be an object"},
		{name: "non-object set", status: 200, body: `{"output":{"parameters":[{"a":"b"},"x"]}}`, wantErr: `each item of output.parameters must be an object (one parameter set), but one is a JSON string`},
		{name: "parameters not a list", status: 200, body: `{"output":{"parameters":{"a":"b"}}}`, wantErr: "output.parameters must be a list of objects"},
		// As the controller's encoding/json decoding into its response type:
		{name: "data after the first value is ignored", status: 200, body: `{"output":{"parameters":[{"a":"b"}]}} x`, want: []map[string]any{{"a": "b"}}},
		{name: "names match in any case", status: 200, body: `{"Output":{"PARAMETERS":[{"a":"b"}]}}`, want: []map[string]any{{"a": "b"}}},
		{name: "a null set is an empty set", status: 200, body: `{"output":{"parameters":[null,{"a":"b"}]}}`, want: []map[string]any{{}, {"a": "b"}}},
		{name: "null answer", status: 200, body: `null`, want: nil},
		{name: "parameters under another key", status: 200, body: `{"input":{"parameters":[]}}`, want: nil},
		{name: "truncated JSON", status: 200, body: `{"output":{"parameters":[{"a":`, wantErr: "the answer is not JSON: unexpected EOF"},
		{name: "number beyond float64", status: 200, body: `{"output":{"parameters":[{"a":1e400}]}}`, wantErr: "output.parameters[0]: the number 1e400 is out of range"},
		{name: "output not an object", status: 200, body: `{"output":[]}`, wantErr: `the answer's "output" must be an object {"parameters": [...]}, but it is a JSON array`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := fakePlugin(t, tc.status, tc.body)
			c := &generator.Client{BaseURL: srv.URL}
			got, err := c.GetParams(context.Background(), "a", nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("GetParams() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GetParams() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClientStatusError(t *testing.T) {
	srv, _ := fakePlugin(t, 503, strings.Repeat("x", 10000))
	c := &generator.Client{BaseURL: srv.URL}
	_, err := c.GetParams(context.Background(), "a", nil)
	var se *generator.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *StatusError", err)
	}
	if se.StatusCode != 503 || len(se.Message) > 1100 || !strings.HasSuffix(se.Message, "...") {
		t.Errorf("StatusError = %d, %d bytes of message; want 503 and a clipped message", se.StatusCode, len(se.Message))
	}
}

func TestClientResponseLimit(t *testing.T) {
	body := `{"output":{"parameters":[{"a":"` + strings.Repeat("x", 2000) + `"}]}}`
	srv, _ := fakePlugin(t, 200, body)
	c := &generator.Client{BaseURL: srv.URL, MaxResponseBytes: 1000}
	if _, err := c.GetParams(context.Background(), "a", nil); err == nil || !strings.Contains(err.Error(), "larger than the limit of 1000 bytes") {
		t.Errorf("GetParams() error = %v, want the size limit", err)
	}
	c.MaxResponseBytes = int64(len(body))
	if _, err := c.GetParams(context.Background(), "a", nil); err != nil {
		t.Errorf("GetParams() at exactly the limit: %v", err)
	}
}

func TestClientTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	c := &generator.Client{BaseURL: srv.URL, Timeout: 50 * time.Millisecond}
	_, err := c.GetParams(context.Background(), "a", nil)
	if err == nil || !strings.Contains(err.Error(), "no answer within 50ms (requestTimeout)") || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("GetParams() error = %v, want a timeout", err)
	}
}

func TestClientBadConfig(t *testing.T) {
	for _, c := range []*generator.Client{
		{},
		{BaseURL: "http://x", Token: "tok\n"},
		{BaseURL: "::not a url"},
	} {
		if _, err := c.GetParams(context.Background(), "a", nil); err == nil {
			t.Errorf("GetParams() with %+v: no error", c)
		}
	}
}

// TestClientWarnsOfAnswerWithoutOutput: an object without
// output.parameters is zero sets, as for the controller, with a warning.
func TestClientWarnsOfAnswerWithoutOutput(t *testing.T) {
	tests := []struct {
		body string
		warn bool
	}{
		{`{"parameters": [{"a": "b"}]}`, true},
		{`{"output": {"params": []}}`, true},
		{`{"output": null}`, true},
		{`{"OUTPUT": {"Parameters": []}}`, false},
		{`{"output": {"parameters": null}}`, false},
		{`{"output": {"parameters": []}}`, false},
		{``, false},
		{`null`, false},
	}
	for _, tc := range tests {
		srv, _ := fakePlugin(t, 200, tc.body)
		var warnings []string
		c := &generator.Client{BaseURL: srv.URL, Warn: func(m string) { warnings = append(warnings, m) }}
		sets, err := c.GetParams(context.Background(), "a", nil)
		if err != nil || len(sets) != 0 {
			t.Fatalf("GetParams() of %s = %v, %v; want zero sets", tc.body, sets, err)
		}
		if got := len(warnings) == 1 && strings.Contains(warnings[0], "zero parameter sets"); got != tc.warn {
			t.Errorf("answer %s: warnings %q, want a warning: %v", tc.body, warnings, tc.warn)
		}
	}
}
