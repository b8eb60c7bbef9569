package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"testing"

	"github.com/strata-dev/strata/internal/testbin"
)

// TestQuick runs the whole load run in its smoke mode: a control plane,
// the controller under 512Mi, normal and hostile tenants for 6 s. It
// proves the run drives every tenant and reports each one's outcome: no
// normal error, each hostile tenant refused by its named reason, the
// peak memory under the limit; not how much load the controller takes.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and runs strata for 6 s; run without -short")
	}
	strata := testbin.Strata(t)
	var stdout, stderr bytes.Buffer
	args := []string{"-quick", "-strata", strata}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run(%q) = %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
	}
	report := stdout.String()
	m := regexp.MustCompile(`changes seen through: (\d+), errors: 0\n`).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("report lacks the normal tenants' line with 0 errors:\n%s", report)
	}
	// Each tenant's App, at least, and the change after the run.
	if n, _ := strconv.Atoi(m[1]); n < 4 {
		t.Errorf("changes seen through: %d, want at least 4:\n%s", n, report)
	}
	for kind, want := range map[string]string{
		"960 KB flow list":       `False/ConfigMapMergeFailed × \d+$`,
		"cross-namespace refs":   `False/NamespaceNotAllowed × \d+$`,
		"huge and nested values": `False/\w+ × \d+$`,
	} {
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(kind) + ` +` + want).MatchString(report) {
			t.Errorf("report has no %s outcome matching %q:\n%s", kind, want, report)
		}
	}
	if !regexp.MustCompile(`churn: [1-9]\d* Apps and ConfigMaps created and deleted`).MatchString(report) {
		t.Errorf("report lacks the churn:\n%s", report)
	}
	if !regexp.MustCompile(`peak RssAnon: [1-9]\d* MiB of 512 MiB`).MatchString(report) {
		t.Errorf("report lacks the peak memory:\n%s", report)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-strata", "x", "-tenants", "0"},
		{"-strata", "x", "-limit", "0"},
		{"-strata", "x", "extra"},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stderr); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
	}
}

func TestFlowList(t *testing.T) {
	if n := len(flowList(480_000, 7)); n < 960_000 || n > 961_000 {
		t.Errorf("flowList(480000) is %d bytes, want the issue's 960 KB", n)
	}
}
