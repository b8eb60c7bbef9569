package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/testbin"
)

// TestQuick runs the whole load run in its smoke mode against the real
// server, which proves the run starts it, drives every client and reports
// each one's outcome, not how much load anything takes.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs strata for 15 s; run without -short")
	}
	strata := testbin.Strata(t)
	var stdout, stderr bytes.Buffer
	args := []string{"-quick", "-strata", strata}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run(%q) = %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
	}
	report := stdout.String()
	m := regexp.MustCompile(`requests ok: (\d+), errors: 0\n`).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("report lacks the normal clients' line with 0 errors:\n%s", report)
	}
	if n, _ := strconv.Atoi(m[1]); n < 2 {
		t.Errorf("normal requests ok: %d, want at least 2 (the run's and the one after it):\n%s", n, report)
	}
	// Each hostile client met the defence meant for it. The huge list's
	// 15 MB answers may take longer than the smoke run on a loaded
	// machine; it is not asked for.
	for kind, want := range map[string]string{
		"deeply nested JSON": "400 × ",
		"endless output":     "502 × ",
		"no token":           "401 × ",
		"wrong token":        "403 × ",
		"oversized body":     "413 × ",
		"oversized chunked":  "413 × ",
		"slow command":       "504 × ",
		"idle connection":    "closed by the server × ",
		"slowloris":          " × ",
	} {
		line := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(kind) + ` +(.*)$`).FindStringSubmatch(report)
		if line == nil || !strings.Contains(line[1], want) {
			t.Errorf("report has no %q outcome for %s:\n%s", want, kind, report)
		}
	}
	if !regexp.MustCompile(`peak RssAnon: [1-9]\d* MiB of 256 MiB`).MatchString(report) {
		t.Errorf("report lacks the peak memory:\n%s", report)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-strata", "x", "-normal", "0"},
		{"-strata", "x", "-limit", "0"},
		{"-strata", "x", "-huge", "0"},
		{"-strata", "x", "extra"},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stderr); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
	}
}

func TestBodies(t *testing.T) {
	deep := deepBody(1 << 20)
	if len(deep) > 1<<20 {
		t.Errorf("deepBody is %d bytes, more than the server's default maxRequestBytes", len(deep))
	}
	if !bytes.Contains(deep, bytes.Repeat([]byte("["), 500000)) {
		t.Error("deepBody does not nest 500,000 lists")
	}
	huge := hugeList(15 << 20)
	if len(huge) >= 16<<20 {
		t.Errorf("hugeList is %d bytes, not under the default maxOutputBytes", len(huge))
	}
	var sets []map[string]any
	if err := json.Unmarshal(huge, &sets); err != nil || len(sets) < 100000 {
		t.Errorf("hugeList is not a long JSON list of objects: %d sets, %v", len(sets), err)
	}
}
