package helmplugin_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/helmplugin/paritytest"
	"github.com/strata-dev/strata/internal/params"
	"github.com/strata-dev/strata/internal/worker"
	"github.com/strata-dev/strata/internal/worker/workertest"
)

// TestMain lets the test binary stand in for strata as the render worker
// (`strata helm-worker`): a Plugin with workers starts this binary again
// as helmplugin.WorkerEntry, which it runs as cmd/strata's main does.
func TestMain(m *testing.M) {
	if code, ok := worker.Run(context.Background(), os.Args, os.Stderr, helmplugin.WorkerEntry()); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// testWorkers are worker options: the workers run this test binary.
func testWorkers(tb testing.TB, memory int64) helmplugin.WorkerOptions {
	tb.Helper()
	return helmplugin.WorkerOptions{Enabled: true, Memory: memory}
}

func newWorkerPlugin(tb testing.TB, opts helmplugin.Options) *helmplugin.Plugin {
	tb.Helper()
	p := helmplugin.New(opts)
	tb.Cleanup(func() { p.Close() })
	return p
}

// TestWorkerParity renders every parity case in a worker and in-process:
// the same manifests, or the same error.
func TestWorkerParity(t *testing.T) {
	files, err := filepath.Glob("testdata/parity/*.txtar")
	if err != nil {
		t.Fatal(err)
	}
	in := helmplugin.New(helmplugin.Options{})
	out := newWorkerPlugin(t, helmplugin.Options{MaxConcurrent: 2, Workers: testWorkers(t, 0)})
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			req := paritytest.Load(t, file).Request(t)
			want, wantErr := in.Generate(t.Context(), req)
			got, gotErr := out.Generate(t.Context(), req)
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("Generate in a worker: error %v, in-process: %v", gotErr, wantErr)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("a worker renders other manifests than the plugin in-process (-in-process +worker):\n%s", diff)
			}
		})
	}
	if s := out.Stats(); s.Charts.Misses == 0 {
		t.Errorf("Stats() = %+v: the workers' chart caches are not counted", s)
	}
}

// writeChart writes a chart of one template (and values.yaml) into a new
// repository and returns the request for it.
func writeChart(t *testing.T, name, values, template string) *params.Request {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "apps", name)
	files := map[string]string{
		"Chart.yaml":          fmt.Sprintf("apiVersion: v2\nname: %s\nversion: 0.1.0\n", name),
		"values.yaml":         values,
		"templates/cm.yaml":   template,
		"templates/_help.tpl": `{{ define "help" }}x{{ end }}`,
	}
	for f, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &params.Request{AppName: name, RepoRoot: root, AppPath: dir, Env: []string{"ARGOCD_APP_NAMESPACE=default"}}
}

const okTemplate = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\ndata:\n  a: {{ .Values.a | quote }}\n"

// The attacks of issue 16 (§3, §4): templates that never end or that
// build a value without bound.
var attacks = []struct {
	name, values, template string
	// want is in the error.
	want string
	// stopped is the WorkerStats counter the attack adds one to.
	stopped string
}{
	{
		name:     "loop",
		template: `{{- range until 100000 }}{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}{{ end }}`,
		want:     "did not finish",
		stopped:  "timeout",
	},
	{
		// Refused by the bounded repeat before anything is allocated.
		name:     "nested-repeat",
		template: `{{ repeat 1000000 (repeat 1000000 "x") }}`,
		want:     "repeat: 1000000 copies of a string of 1000000 bytes would be larger than the rendered manifests may be",
	},
	{
		name:     "string-doubling",
		template: `{{- $s := repeat 1000000 "x" }}{{ range until 40 }}{{ $s = printf "%s%s" $s $s }}{{ end }}{{ len $s }}`,
		want:     "memory budget of 256 MiB",
		stopped:  "memory",
	},
	{
		name:     "tpl-recursion",
		values:   "t: '{{ tpl .Values.t . }}'\n",
		template: `{{ tpl .Values.t . }}`,
		want:     "memory budget of 256 MiB",
		stopped:  "memory",
	},
}

// TestWorkerStopsAttacks runs each attack in a worker, with another
// chart's render under way in the other slot: the attack fails with an
// error naming its chart and the budget, the other render succeeds, and
// so does one after.
//
// The loop is stopped by a time budget of 3 s; the others are given
// minutes, so that they meet their memory budget (256 MiB) first even in
// a race-detector build on a loaded machine.
func TestWorkerStopsAttacks(t *testing.T) {
	ok := writeChart(t, "ok", "a: b\n", okTemplate)
	for _, tc := range attacks {
		t.Run(tc.name, func(t *testing.T) {
			timeout := 5 * time.Minute
			if tc.name == "loop" {
				timeout = 3 * time.Second
			}
			p := newWorkerPlugin(t, helmplugin.Options{MaxConcurrent: 2, Timeout: timeout, Workers: testWorkers(t, 256<<20)})
			bad := writeChart(t, "bad-"+tc.name, tc.values, tc.template)
			var wg sync.WaitGroup
			var badErr error
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, badErr = p.Generate(t.Context(), bad)
			}()
			// Renders of the good chart go on in the other slot meanwhile.
			for i := 0; i < 3; i++ {
				if _, err := p.Generate(t.Context(), ok); err != nil {
					t.Errorf("rendering chart ok beside %s: %v", tc.name, err)
				}
			}
			wg.Wait()
			t.Logf("Generate(%s): %v", tc.name, badErr)
			if badErr == nil || !strings.Contains(badErr.Error(), tc.want) || !strings.Contains(badErr.Error(), fmt.Sprintf("%q", "bad-"+tc.name)) {
				t.Errorf("Generate(%s) error = %v, want one naming the chart and %q", tc.name, badErr, tc.want)
			}
			if _, err := p.Generate(t.Context(), ok); err != nil {
				t.Errorf("rendering chart ok after %s: %v", tc.name, err)
			}
			s := p.WorkerStats()
			got := map[string]uint64{"timeout": s.TimedOut, "memory": s.OutOfMemory, "crash": s.Crashed}
			want := map[string]uint64{"timeout": 0, "memory": 0, "crash": 0}
			if tc.stopped != "" {
				want[tc.stopped] = 1
			}
			if diff := cmp.Diff(want, got); diff != "" || s.Renders != 5 {
				t.Errorf("WorkerStats() = %+v: renders stopped (-want +got):\n%s", s, diff)
			}
		})
	}
}

// TestWorkerLoopsFreeTheirSlots: two looping charts, as many as there are
// slots, are stopped at their time budget and leave the slots to the
// renders after them (in-process they kept them until they ended: never).
func TestWorkerLoopsFreeTheirSlots(t *testing.T) {
	p := newWorkerPlugin(t, helmplugin.Options{MaxConcurrent: 2, Timeout: 2 * time.Second, Workers: testWorkers(t, 0)})
	loop := writeChart(t, "loop", "", attacks[0].template)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The chart's name is in the error once the worker has loaded it;
			// on a loaded machine the budget can end before that.
			if _, err := p.Generate(t.Context(), loop); err == nil || !strings.Contains(err.Error(), `in apps/loop did not finish`) || !strings.Contains(err.Error(), "time budget of 2s is spent") {
				t.Errorf("Generate(loop) error = %v, want a render stopped", err)
			}
		}()
	}
	wg.Wait()
	ok := writeChart(t, "ok", "a: b\n", okTemplate)
	// A deadline far past the budget: before the workers, the loops held
	// both slots for ever and this failed waiting for one.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for range 2 {
		if _, err := p.Generate(ctx, ok); err != nil {
			t.Fatalf("rendering chart ok after two loops: %v", err)
		}
	}
}

// TestWorkerCanceled: a request whose context ends stops its render.
func TestWorkerCanceled(t *testing.T) {
	p := newWorkerPlugin(t, helmplugin.Options{MaxConcurrent: 1, Workers: testWorkers(t, 0)})
	loop := writeChart(t, "loop", "", attacks[0].template)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		time.Sleep(500 * time.Millisecond)
		cancel()
	}()
	if _, err := p.Generate(ctx, loop); !errors.Is(err, context.Canceled) {
		t.Fatalf("Generate(loop) with its context canceled: error %v, want context.Canceled", err)
	}
	ok := writeChart(t, "ok", "a: b\n", okTemplate)
	if _, err := p.Generate(t.Context(), ok); err != nil {
		t.Fatalf("rendering chart ok after a canceled render: %v", err)
	}
}

// TestBoundedRepeatInProcess: the bounded repeat holds in-process too.
func TestBoundedRepeatInProcess(t *testing.T) {
	p := helmplugin.New(helmplugin.Options{})
	req := writeChart(t, "nested", "", attacks[1].template)
	if _, err := p.Generate(t.Context(), req); err == nil || !strings.Contains(err.Error(), attacks[1].want) {
		t.Fatalf("Generate(nested-repeat) error = %v, want %q", err, attacks[1].want)
	}
	req = writeChart(t, "small", "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ repeat 3 \"ab\" }}\n")
	got, err := p.Generate(t.Context(), req)
	if err != nil || len(got) != 1 || !strings.Contains(got[0], `"name":"ababab"`) {
		t.Fatalf("Generate(small repeat) = %v, %v; want one ConfigMap named ababab", got, err)
	}
}

// TestWorkerLogs: what the plugin logs while a worker renders reaches the
// Plugin's logger, once, with the plugin's attributes.
func TestWorkerLogs(t *testing.T) {
	var buf syncBuffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	p := newWorkerPlugin(t, helmplugin.Options{MaxConcurrent: 1, Logger: log, Workers: testWorkers(t, 0)})
	req := writeChart(t, "ok", "a: b\n", okTemplate)
	req.Parameters = []params.Parameter{{Name: "no-such-parameter", String: str("x")}}
	if _, err := p.Generate(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	if !strings.Contains(got, `parameter \"no-such-parameter\" is not one the Helm plugin accepts`) || strings.Count(got, "plugin=helm") != 1 {
		t.Errorf("the log = %q, want the worker's warning about no-such-parameter, with plugin=helm once", got)
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestWorkerKilledWhileIdle: a worker killed from outside between renders
// (the kernel's OOM killer, an operator) is replaced; the next render
// does not fail for it.
func TestWorkerKilledWhileIdle(t *testing.T) {
	p := newWorkerPlugin(t, helmplugin.Options{MaxConcurrent: 1, Workers: testWorkers(t, 0)})
	ok := writeChart(t, "ok", "a: b\n", okTemplate)
	if _, err := p.Generate(t.Context(), ok); err != nil {
		t.Fatal(err)
	}
	pids := workertest.Children(t)
	if len(pids) == 0 {
		t.Fatal("no render worker found among this process's children")
	}
	for _, pid := range pids {
		proc, err := os.FindProcess(pid)
		if err != nil {
			t.Fatal(err)
		}
		// A worker of an earlier test's plugin, closing, may end on its own
		// between the listing and the kill.
		if err := proc.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Fatal(err)
		}
	}
	// The pool reaps the killed worker (its exit is seen as it is idle,
	// or when the request cannot be written to it); wait for it, so that
	// the worker is gone before the next render whichever way.
	for i := 0; len(workertest.Children(t)) > 0; i++ {
		if i > 500 {
			t.Fatal("the killed worker is still there after 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := p.Generate(t.Context(), ok); err != nil {
		t.Fatalf("rendering after the idle worker was killed: %v", err)
	}
	if s := p.WorkerStats(); s.Crashed != 0 || s.Started < 2 {
		t.Errorf("WorkerStats() = %+v, want no render crashed and a second worker started", s)
	}
}
