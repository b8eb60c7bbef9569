package generator_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkHandlerCached measures the server's own work for a cached
// answer, without the network: what every repeated request of the
// ApplicationSet controller costs.
func BenchmarkHandlerCached(b *testing.B) {
	cfg, dir := parseTestConfig(b, `
- name: p
  token: {env: GEN_BENCH_TOKEN}
  cache: {ttl: 1h}
  backend: {static: {files: [sets.yaml]}}
`, map[string]string{"sets.yaml": "- {a: b}\n"})
	b.Setenv("GEN_BENCH_TOKEN", "tok")
	ts := startServer(b, cfg, dir)
	h := ts.srv.Handler()
	const body = `{"applicationSetName":"bench","input":{"parameters":{"branch":"main","repo":"example"}}}`
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		req := httptest.NewRequest(http.MethodPost, "/p/api/v1/getparams.execute", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer tok")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}
