package generator_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// benchBody is what the ApplicationSet controller sends.
const benchBody = `{"applicationSetName":"bench","input":{"parameters":{"branch":"main","repo":"example"}}}`

func benchServer(b *testing.B) *testServer {
	cfg, dir := parseTestConfig(b, `
- name: p
  token: {env: GEN_BENCH_TOKEN}
  cache: {ttl: 1h}
  backend: {static: {files: [sets.yaml]}}
`, map[string]string{"sets.yaml": "- {a: b}\n"})
	b.Setenv("GEN_BENCH_TOKEN", "tok")
	return startServer(b, cfg, dir)
}

// BenchmarkHandlerCached measures the server's own work for a cached
// answer, without the network: what every repeated request of the
// ApplicationSet controller costs. The request and recorder are built
// outside the timer's reach only in part: httptest's allocations count.
func BenchmarkHandlerCached(b *testing.B) {
	ts := benchServer(b)
	h := ts.srv.Handler()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		req := httptest.NewRequest(http.MethodPost, "/p/api/v1/getparams.execute", strings.NewReader(benchBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer tok")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkServeCached measures a cached answer through Serve (the
// http.Server as `strata generator serve` configures it) over one
// keep-alive loopback connection, the request written as the controller
// writes it: allocations per request are the server's (net/http's and
// strata's), the client here allocates nothing per request.
func BenchmarkServeCached(b *testing.B) {
	ts := benchServer(b)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ts.srv.Serve(ctx, lis, nil) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	})
	conn, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	request := []byte(fmt.Sprintf("POST /p/api/v1/getparams.execute HTTP/1.1\r\nHost: %s\r\nUser-Agent: argocd-applicationset\r\n"+
		"Content-Type: application/json\r\nAccept: application/json\r\nAuthorization: Bearer tok\r\nContent-Length: %d\r\n\r\n%s",
		lis.Addr(), len(benchBody), benchBody))
	// The answers are parsed until a hit; the hits after it have its
	// length (the Date header has a fixed width) and are only read.
	cr := &countingReader{r: conn}
	br := bufio.NewReader(cr)
	var answer []byte
	for answer == nil {
		before := cr.n
		if _, err := conn.Write(request); err != nil {
			b.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 || resp.ContentLength != int64(len(body)) || br.Buffered() != 0 {
			b.Fatalf("answer %d (Content-Length %d): %s, %v", resp.StatusCode, resp.ContentLength, body, err)
		}
		if resp.Header.Get("X-Strata-Cache") == "hit" {
			answer = make([]byte, cr.n-before)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := conn.Write(request); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(conn, answer); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if !strings.Contains(string(answer), `{"output":{"parameters":[{"a":"b"}]}}`) {
		b.Fatalf("last answer %q", answer)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
