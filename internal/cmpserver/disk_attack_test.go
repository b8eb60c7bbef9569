//go:build linux

package cmpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"net/http/httptest"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/pluginpb"
	"github.com/strata-dev/strata/internal/cmpserver/tarball"
	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/hookexec"
)

// The budgets of the disk attack tests: small, so that the attacks write
// little before they are stopped.
const (
	attackPerRequest = 32 << 20
	attackTotal      = 48 << 20
)

// diskServer serves a plugin running the application's run.sh under the
// disk budgets of the attack tests, in each command's own namespaces when
// processTree is false; its workspaces are under the returned store.
func diskServer(t *testing.T, processTree bool) (pluginpb.ConfigManagementPluginServiceClient, *tarball.Store, *cmpserver.Metrics) {
	t.Helper()
	if _, err := cmpserver.TrackCommands(t.Context()); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "cmpdisk") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	store, err := tarball.NewStore(filepath.Join(dir, "repos"), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	opts := cmpserver.CommandOptions{Env: []string{"PATH=" + os.Getenv("PATH")}}
	if _, err := hookexec.LandlockABI(); err != nil {
		opts.NoSandbox = true
	}
	p := newCommandPlugin(t, "  generate:\n    command: [sh, run.sh]\n", opts, nil)
	m := cmpserver.NewMetrics()
	client := serve(t, dir, &cmpserver.Server{Plugin: p.Hiding(store.Root()), Store: store, ShutdownGrace: 5 * time.Second,
		CommandNamespaces: !processTree, MaxWrittenBytes: attackPerRequest, MaxWrittenBytesTotal: attackTotal, Metrics: m})
	return client, store, m
}

// diskRepo is a repository whose application a runs script, then prints
// its manifest.
func diskRepo(t *testing.T, script string) []byte {
	return tarGz(t, map[string]string{
		"app/m.yaml": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}` + "\n",
		"app/run.sh": script + "\ncat m.yaml\n",
	})
}

// workspaces lists what is left under the store's work directory.
func workspaces(t *testing.T, store *tarball.Store) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(store.Root(), "work"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func trackingModes() []bool {
	modes := []bool{true}
	if hookexec.Namespaces() == nil {
		modes = append(modes, false)
	}
	return modes
}

// TestAttackDiskWrites plays repositories whose commands fill the work
// volume and hold it: one large file (RLIMIT_FSIZE stops its writer one
// block past the budget; the script goes on), a million empty files,
// files written by a process the command left behind. Each request is
// stopped once its writes pass the request's budget, with
// ResourceExhausted and a message naming the budget, its flag and what
// was written, long before its 30 s sleep or the test's deadline ends; a
// normal request in between succeeds; nothing stays on disk.
func TestAttackDiskWrites(t *testing.T) {
	attacks := []struct {
		name, script string
		want         []string // in the message
		// alone: no normal request during the attack. Following the
		// process tree, the end of a request kills every process left
		// behind since it began, the attack's writer too.
		alone bool
	}{
		{name: "one large file", script: `head -c 50000000000 /dev/zero > "$TMPDIR/big"; sleep 30`,
			want: []string{"stopped", "the largest file, tmp/big, 32.0 MiB", "(33558528 bytes)", "disk budget of a request, 32.0 MiB (33554432 bytes; cmp serve --max-written-bytes)"}},
		{name: "one large file in the repository", script: `head -c 50000000000 /dev/zero > big.bin; echo status $?; sleep 30`,
			want: []string{"the largest file, repo/app/big.bin, 32.0 MiB", "--max-written-bytes"}},
		{name: "the command itself past the file size limit", script: `exec head -c 50000000000 /dev/zero > "$TMPDIR/big"`,
			want: []string{"the largest file, tmp/big, 32.0 MiB", "--max-written-bytes"}},
		{name: "a million empty files", script: `mkdir "$TMPDIR/d"; i=0; while [ $i -lt 1000000 ]; do : > "$TMPDIR/d/$i"; i=$((i+1)); done`,
			want: []string{"new entries", "--max-written-bytes"}},
		{name: "directories nested past what is measured", script: `cd "$TMPDIR"; i=0; while [ $i -lt 300 ]; do mkdir d; cd d; i=$((i+1)); done; sleep 30`,
			want: []string{"cannot be measured", "more than 256 directories deep"}},
		{name: "written slowly by a process left behind", script: `(setsid sh -c 'while :; do head -c 4000000 /dev/zero > "$TMPDIR/f$$RANDOM$(date +%N)"; sleep 0.01; done' &) ; sleep 60`,
			want: []string{"--max-written-bytes"}, alone: true},
	}
	for _, processTree := range trackingModes() {
		for _, a := range attacks {
			t.Run("processTree="+strconv.FormatBool(processTree)+"/"+a.name, func(t *testing.T) {
				client, store, m := diskServer(t, processTree)
				ctx, cancel := context.WithTimeout(t.Context(), 50*time.Second)
				defer cancel()
				attack := make(chan error, 1)
				go func() {
					_, err := generate(t, ctx, client, "a", diskRepo(t, a.script))
					attack <- err
				}()
				if !a.alone {
					// A normal request while the attack runs.
					if got, err := generate(t, ctx, client, "a", diskRepo(t, "true")); err != nil || len(got) != 1 {
						t.Errorf("a normal request during the attack: %q, %v", got, err)
					}
				}
				err := <-attack
				if status.Code(err) != codes.ResourceExhausted {
					t.Fatalf("Generate = %v, want ResourceExhausted", err)
				}
				t.Logf("the attack's error: %s", status.Convert(err).Message())
				for _, w := range a.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("Generate = %q, want it to say %q", status.Convert(err).Message(), w)
					}
				}
				eventually.Within(t, 20*time.Second, "the workspaces removed", func() (bool, string) {
					left := workspaces(t, store)
					return len(left) == 0, strings.Join(left, " ")
				})
				if got := counterValue(t, m, "strata_cmp_written_budget_stops_total", "request"); got != 1 {
					t.Errorf("strata_cmp_written_budget_stops_total{budget=\"request\"} = %v, want 1", got)
				}
			})
		}
	}
}

// TestAttackDiskWritesTotal runs two requests that each write under the
// request's budget, and over the total together: one is stopped, naming
// the total's flag, and the other, once it goes on, succeeds.
func TestAttackDiskWritesTotal(t *testing.T) {
	for _, processTree := range trackingModes() {
		t.Run("processTree="+strconv.FormatBool(processTree), func(t *testing.T) {
			client, store, m := diskServer(t, processTree)
			goFile := filepath.Join(t.TempDir(), "go")
			repo := diskRepo(t, `head -c 29360128 /dev/zero > "$TMPDIR/fill"; while [ ! -e "`+goFile+`" ]; do sleep 0.02; done`)
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Second)
			defer cancel()
			results := make(chan error, 2)
			for range 2 {
				go func() {
					_, err := generate(t, ctx, client, "a", repo)
					results <- err
				}()
			}
			first := <-results
			if status.Code(first) != codes.ResourceExhausted || !strings.Contains(first.Error(), "--max-written-bytes-total") ||
				!strings.Contains(first.Error(), "disk budget of all requests, 48.0 MiB (50331648 bytes;") {
				t.Fatalf("first answer %v, want the total's refusal", first)
			}
			t.Logf("the refusal: %s", status.Convert(first).Message())
			if err := os.WriteFile(goFile, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if second := <-results; second != nil {
				t.Errorf("second answer %v, want success", second)
			}
			eventually.Within(t, 20*time.Second, "the workspaces removed", func() (bool, string) {
				left := workspaces(t, store)
				return len(left) == 0, strings.Join(left, " ")
			})
			if got := counterValue(t, m, "strata_cmp_written_budget_stops_total", "total"); got != 1 {
				t.Errorf("strata_cmp_written_budget_stops_total{budget=\"total\"} = %v, want 1", got)
			}
		})
	}
}

// counterValue reads the series name{budget="label"} from m's /metrics.
func counterValue(t *testing.T, m *cmpserver.Metrics, name, budget string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	prefix := name + `{budget="` + budget + `"} `
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no %s in /metrics", prefix)
	return 0
}
