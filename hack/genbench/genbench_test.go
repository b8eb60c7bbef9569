package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for genbench when the bench
// re-executes itself as strata's server.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "-serve" {
		if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestBenchSmoke runs the whole bench for a moment: both servers answer,
// every row has requests and none has errors.
func TestBenchSmoke(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-quick", "-concurrency", "1,4"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("genbench -quick: %v\n%s", err, stderr.String())
	}
	table := stdout.String()
	for _, target := range []string{targetOff, targetOn, targetPython} {
		if strings.Count(table, "| "+target+" |") != 2 {
			t.Errorf("the table lacks the rows of %s:\n%s", target, table)
		}
	}
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "| strata") && (strings.HasSuffix(line, "| 0 | 0 µs | 0 µs | 0 |") || !strings.HasSuffix(line, " 0 |")) {
			t.Errorf("row without requests or with errors: %s", line)
		}
	}
}

func TestRawClient(t *testing.T) {
	var gotBody, gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody, gotAuth = string(b), r.Header.Get("Authorization")
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
		}
		w.WriteHeader(201)
		io.WriteString(w, `{"output":{"parameters":[{"a":"b"}]}}`)
	}))
	defer srv.Close()
	for _, path := range []string{"/keep", "/close"} {
		c, err := newRawClient(srv.URL+path, map[string]string{"Authorization": "Bearer x"}, `{"k":1}`, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			status, body, err := c.do()
			if err != nil || status != 201 || !validAnswer(body) {
				t.Fatalf("%s request %d: %d %s %v", path, i, status, body, err)
			}
		}
		if gotBody != `{"k":1}` || gotAuth != "Bearer x" {
			t.Errorf("server got body %q, Authorization %q", gotBody, gotAuth)
		}
		if path == "/close" && c.conn != nil {
			t.Errorf("the connection was kept after Connection: close")
		}
		c.close()
	}
}

func TestReportTargets(t *testing.T) {
	rows := func(onRPS float64, onP99 time.Duration, onErrs int) *Report {
		return &Report{Duration: time.Second, CPUs: 2, Rows: []Row{
			{Target: targetOff, Clients: 64, RequestsSec: 1000, P99: 50 * time.Millisecond},
			{Target: targetOn, Clients: 64, RequestsSec: onRPS, P99: onP99, Errors: onErrs, FirstError: "x"},
			{Target: targetPython, Clients: 64, RequestsSec: 2000, P99: time.Second},
		}}
	}
	for _, tc := range []struct {
		r    *Report
		want string
	}{
		{rows(20000, time.Millisecond, 0), "| 64 | 10.0× | 0.5× |"},
		{rows(20000, time.Millisecond, 0), "Target at 64 clients (cache on ≥ 5× python requests/s, p99 < 5 ms, no errors): met."},
		{rows(9000, time.Millisecond, 0), "missed: under 5×"},
		{rows(20000, 6*time.Millisecond, 0), "missed: p99 6.00 ms"},
		{rows(20000, time.Millisecond, 3), "missed: 3 errors"},
	} {
		if md := tc.r.Markdown(); !strings.Contains(md, tc.want) {
			t.Errorf("Markdown() =\n%s\nwant it to contain %q", md, tc.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	if p50, p99 := percentile(d, 0.5), percentile(d, 0.99); p50 != 50 || p99 != 99 {
		t.Errorf("percentile = %d, %d; want 50, 99", p50, p99)
	}
	if percentile(nil, 0.5) != 0 {
		t.Error("percentile of nothing is not 0")
	}
}

func TestMedian(t *testing.T) {
	runs := []Row{
		{RequestsSec: 10, P99: 3, Errors: 1, FirstError: "a", Requests: 5},
		{RequestsSec: 30, P99: 1, Requests: 5},
		{RequestsSec: 20, P99: 2, Errors: 2, Requests: 5},
	}
	m := median(runs)
	if m.RequestsSec != 20 || m.P99 != 2 || m.Errors != 3 || m.FirstError != "a" || m.Requests != 15 {
		t.Errorf("median = %+v", m)
	}
}

func TestParseTargets(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"off,on,python", []string{targetOff, targetOn, targetPython}, false},
		{"on", []string{targetOn}, false},
		{" python , on,on", []string{targetPython, targetOn}, false},
		{"on,cached", nil, true},
		{"", nil, true},
	}
	for _, tc := range tests {
		got, err := parseTargets(tc.in)
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) {
			t.Errorf("parseTargets(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
