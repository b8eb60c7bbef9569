package preview_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/preview"
)

// FuzzAccess sends requests of any path, Host and Origin: only those under
// the token, to a served Host, with no foreign Origin, get past the checks.
// (The plugin is never reached: asset paths are the only ones asked for
// with the token, and the API's answers need a plugin run.)
func FuzzAccess(f *testing.F) {
	const token = "tok3n-of-43-characters-xxxxxxxxxxxxxxxxxxxx"
	const host = "127.0.0.1:8377"
	for _, seed := range [][3]string{
		{"/" + token + "/", host, ""},
		{"/" + token + "/app.js", "localhost:8377", "http://" + host},
		{"/" + token + "/style.css", host, "http://evil.example"},
		{"/" + token[:10] + "/", host, ""},
		{"//" + token + "/", host, ""},
		{"/" + token + "/", "evil.example:8377", ""},
		{"/" + strings.ToUpper(token) + "/", host, ""},
		{"/x/../" + token + "/", host, "null"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	h := &preview.Handler{Local: cmpserver.Local{}, Token: token, Hosts: preview.LoopbackHosts(host)}
	f.Fuzz(func(t *testing.T, path, reqHost, origin string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "?#") || strings.Contains(path, "/api/") {
			return
		}
		r := httptest.NewRequest(http.MethodGet, "http://x/", nil)
		r.URL.Path, r.Host = path, reqHost
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		ok := w.Code < 400
		allowed := strings.HasPrefix(path, "/"+token) && (reqHost == host || reqHost == "localhost:8377" || reqHost == "[::1]:8377") &&
			(origin == "" || origin == "http://"+reqHost || origin == "http://"+host || origin == "http://localhost:8377" || origin == "http://[::1]:8377")
		if ok && !allowed {
			t.Fatalf("GET %q Host %q Origin %q = %d, want refused", path, reqHost, origin, w.Code)
		}
		if ok && !strings.Contains(w.Header().Get("Content-Security-Policy"), "default-src 'self'") {
			t.Fatalf("GET %q: no Content-Security-Policy", path)
		}
	})
}
