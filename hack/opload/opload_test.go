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
// the operator under 512Mi, normal modules and hostile hooks for 10 s. It
// proves the run drives every module and reports each one's outcome: no
// normal error, the hostile hooks' runs failed, the peak memory under the
// limit; not how much load the operator takes.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and runs strata for 10 s; run without -short")
	}
	strata := testbin.Strata(t)
	var stdout, stderr bytes.Buffer
	args := []string{"-quick", "-strata", strata}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run(%q) = %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
	}
	report := stdout.String()
	m := regexp.MustCompile(`rounds seen in the releases: (\d+), errors: 0\n`).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("report lacks the normal modules' line with 0 errors:\n%s", report)
	}
	// Each module's first release, and the round after the run.
	if n, _ := strconv.Atoi(m[1]); n < 3 {
		t.Errorf("rounds seen: %d, want at least 3:\n%s", n, report)
	}
	for _, want := range []string{
		`(?m)^  norm00 +ok × [1-9]\d*$`,
		`(?m)^  hostilepatch +error × [1-9]\d*$`,
		`(?m)^  hostileendless +error × [1-9]\d*$`,
		`800 KB watched object: [1-9]\d* changes while its hook ran`,
		`peak RssAnon: [1-9]\d* MiB of 512 MiB`,
	} {
		if !regexp.MustCompile(want).MatchString(report) {
			t.Errorf("report does not match %q:\n%s", want, report)
		}
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-strata", "x", "-modules", "0"},
		{"-strata", "x", "-limit", "0"},
		{"-strata", "x", "-hook-timeout", "0"},
		{"-strata", "x", "extra"},
	} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, &stdout, &stderr); err == nil {
			t.Errorf("run(%q) = nil, want an error", args)
		}
	}
}

func TestValuesPatch(t *testing.T) {
	if n := len(valuesPatch(700_000)); n < 26_000_000 || n > 28_000_000 {
		t.Errorf("valuesPatch(700000) is %d bytes, want the issue's 27 MB", n)
	}
}
