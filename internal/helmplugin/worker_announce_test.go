package helmplugin_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/params"
)

// TestWorkerAnnounceParity: an announcement made in a worker is the one
// made in-process, for charts with and without user values.
func TestWorkerAnnounceParity(t *testing.T) {
	in := helmplugin.New(helmplugin.Options{})
	out := newWorkerPlugin(t, helmplugin.Options{MaxConcurrent: 1, Workers: testWorkers(t, 0)})
	plain := writeChart(t, "plain", "a: b\nlist: [1, 2]\nnested:\n  x: true\n", okTemplate)
	withValues := writeChart(t, "with-values", "a: b\nlist: [1, 2]\n", okTemplate)
	if err := os.WriteFile(filepath.Join(withValues.AppPath, "prod.yaml"), []byte("a: c\nmore: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	withValues.Parameters = []params.Parameter{{Name: helmplugin.ParamValuesFiles, Array: []string{"prod.yaml"}}}
	missing := writeChart(t, "missing", "a: b\n", okTemplate)
	missing.Parameters = []params.Parameter{{Name: helmplugin.ParamValuesFiles, Array: []string{"nope.yaml"}}}
	for _, req := range []*params.Request{plain, withValues, missing} {
		t.Run(req.AppName, func(t *testing.T) {
			want, wantErr := in.Announce(t.Context(), req)
			// Twice: the second announcement of a chart without user
			// values comes from the server's cache.
			for round := range 2 {
				got, gotErr := out.Announce(t.Context(), req)
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Fatalf("Announce in a worker, round %d: error %v, in-process: %v", round, gotErr, wantErr)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("a worker announces otherwise than the plugin in-process, round %d (-in-process +worker):\n%s", round, diff)
				}
			}
		})
	}
	// plain once (then cached), the two with values files twice each.
	if s := out.WorkerStats(); s.Renders != 5 {
		t.Errorf("WorkerStats() = %+v, want 5 requests sent to workers", s)
	}
}

// TestAttackAnnounceValuesFiles: the announcement of 5 values files of
// ~1M values each was parsed in the server process (73 s, 2.6 GB, 620 MiB
// still held 43 minutes later). It runs in a worker now, under the render
// memory budget: here 5 files of 120,000 values under a 64 MiB budget (a
// sixteenth of the default), stopped with an error naming the budget,
// and the next announcement is served by a new worker.
func TestAttackAnnounceValuesFiles(t *testing.T) {
	if raceDetector {
		t.Skip("parses a million values under a memory budget, which the race detector multiplies, as it does the time: runs without -race (make unit)")
	}
	p := newWorkerPlugin(t, helmplugin.Options{MaxConcurrent: 1, Workers: testWorkers(t, 64<<20)})
	req := writeChart(t, "huge", "a: b\n", okTemplate)
	var files []string
	for f := range 5 {
		var b strings.Builder
		for i := range 120_000 {
			fmt.Fprintf(&b, "v%d_%d: %d\n", f, i, i)
		}
		name := fmt.Sprintf("values-%d.yaml", f)
		if err := os.WriteFile(filepath.Join(req.AppPath, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	req.Parameters = []params.Parameter{{Name: helmplugin.ParamValuesFiles, Array: files}}
	_, err := p.Announce(t.Context(), req)
	t.Logf("Announce(5 × 120,000 values): %v", err)
	if err == nil || !strings.Contains(err.Error(), "--helm-render-memory") || !strings.Contains(err.Error(), "announcing the parameters of") {
		t.Fatalf("Announce(5 × 120,000 values) error = %v, want one naming the announcement and --helm-render-memory", err)
	}
	if s := p.WorkerStats(); s.OutOfMemory != 1 {
		t.Errorf("WorkerStats() = %+v, want one request stopped past its memory", s)
	}
	ok := writeChart(t, "ok", "a: b\n", okTemplate)
	anns, err := p.Announce(t.Context(), ok)
	if err != nil || len(anns) == 0 {
		t.Errorf("Announce(ok) after the attack = %d announcements, %v", len(anns), err)
	}
}
