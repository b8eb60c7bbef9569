package operator_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/golden"
	"github.com/strata-dev/strata/internal/operator"
)

// TestLifecycle runs each testdata/lifecycle/*.txtar: its files (except
// those under next/) are the operator's tree — modules/, global-hooks/,
// config.yaml, objects/ — written to a temporary directory (files under
// hooks/ and files named enabled made executable); its comment is a
// script of steps, one per line:
//
//	start                  start the operator and wait for the first converge
//	write next/F DEST      copy the archive's next/F to DEST
//	remove PATH            remove a file or directory (releases/... is the release store)
//	wait TEXT              wait until a history line after the last wait's contains TEXT, and the queues are idle
//	restart                stop the operator, then start it again on the same state
//	stop                   stop the operator
//	ignore TEXT            leave history lines containing TEXT out of the comparison
//	from TEXT              compare the history from the first line containing TEXT
//	helm-ignore-release R  start with HELM_IGNORE_RELEASE=R
//	reload-on-change       start with --reload-on-change
//	failing N              wait until a queued task has failed N times in a row
//	contains FILE TEXT     check that FILE (relative to the tree) holds TEXT
//	lacks FILE TEXT        check that it does not
//
// (ignore and from keep timing out of the golden history: schedules fire
// every second, as often as the test's timing makes them.)
//
// The history (hook runs, discoveries, Helm, deletions) is compared with
// the "history" section; each start's history begins with "== start".
func TestLifecycle(t *testing.T) {
	golden.Run(t, "testdata/lifecycle/*.txtar", runLifecycle)
}

type harness struct {
	t      *testing.T
	dir    string
	eng    *operator.Engine
	cancel context.CancelFunc
	done   chan error
	prev   []string
	// seen is how many lines of the history a wait has passed: the next
	// wait looks after them.
	seen int
	// extra adjusts the settings of a test.
	extra func(*operator.Settings)
}

func runLifecycle(t *testing.T, c golden.Case) {
	dir := t.TempDir()
	for _, f := range c.Archive.Files {
		if strings.HasPrefix(f.Name, "next/") || f.Name == "history" {
			continue
		}
		writeFile(t, filepath.Join(dir, f.Name), f.Data)
	}
	h := &harness{t: t, dir: dir}
	defer h.stop()
	var ignore []string
	from := ""
	for _, line := range strings.Split(string(c.Archive.Comment), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, arg, _ := strings.Cut(line, " ")
		switch verb {
		case "start":
			h.start()
		case "restart":
			h.stop()
			h.start()
		case "stop":
			h.stop()
		case "write":
			src, dst, ok := strings.Cut(arg, " ")
			if !ok {
				t.Fatalf("bad step %q: write next/FILE DEST", line)
			}
			var data []byte
			found := false
			for _, f := range c.Archive.Files {
				if f.Name == src {
					data, found = f.Data, true
				}
			}
			if !found {
				t.Fatalf("step %q: no file %s in the archive", line, src)
			}
			writeFile(t, filepath.Join(dir, dst), data)
		case "remove":
			if err := os.RemoveAll(filepath.Join(dir, arg)); err != nil {
				t.Fatal(err)
			}
		case "wait":
			h.wait(arg)
		case "ignore":
			ignore = append(ignore, arg)
		case "from":
			from = arg
		case "contains", "lacks":
			file, text, ok := strings.Cut(arg, " ")
			if !ok {
				t.Fatalf("bad step %q: %s FILE TEXT", line, verb)
			}
			data, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(data), text); has != (verb == "contains") {
				t.Errorf("step %q: %s holds:\n%s", line, file, data)
			}
		case "helm-ignore-release":
			h.extra = func(s *operator.Settings) { s.HelmIgnoreRelease = arg }
		case "reload-on-change":
			h.extra = func(s *operator.Settings) { s.ReloadOnChange = true }
		case "failing":
			n, err := strconv.Atoi(arg)
			if err != nil {
				t.Fatalf("bad step %q: failing N", line)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			err = h.eng.WaitFailing(ctx, n)
			cancel()
			if err != nil {
				t.Fatalf("step %q: %v", line, err)
			}
		default:
			t.Fatalf("unknown step %q", line)
		}
	}
	h.stop()
	var got []string
	for _, l := range h.prev {
		if from != "" && len(got) == 0 && !strings.Contains(l, from) {
			continue
		}
		if !slices.ContainsFunc(ignore, func(s string) bool { return strings.Contains(l, s) }) {
			got = append(got, l)
		}
	}
	golden.Check(t, c.Path, "history", strings.Join(got, "\n")+"\n")
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	mode := os.FileMode(0o644)
	if strings.Contains(filepath.ToSlash(path), "/hooks/") || filepath.Base(path) == "enabled" {
		mode = 0o755
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) settings() operator.Settings {
	s := operator.DefaultSettings()
	s.ModulesDir = filepath.Join(h.dir, "modules")
	s.GlobalHooksDir = filepath.Join(h.dir, "global-hooks")
	s.Namespace = "addons"
	s.TempDir = filepath.Join(h.dir, "tmp")
	s.StateDir = filepath.Join(h.dir, "releases")
	s.ConfigFile = filepath.Join(h.dir, "config.yaml")
	if _, err := os.Stat(filepath.Join(h.dir, "objects")); err == nil {
		s.ObjectsDir = filepath.Join(h.dir, "objects")
	}
	s.ListenPort = ""
	s.DebugUnixSocket = ""
	s.Retry = 20 * time.Millisecond
	s.RetryMax = 50 * time.Millisecond
	s.ReleaseCheck = 20 * time.Millisecond
	s.Local = true
	if h.extra != nil {
		h.extra(&s)
	}
	return s
}

func (h *harness) start() {
	h.t.Helper()
	e, err := operator.New(h.settings(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.eng, h.cancel, h.done, h.seen = e, cancel, make(chan error, 1), 0
	go func() { h.done <- e.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	select {
	case <-e.Ready():
	case err := <-h.done:
		h.eng = nil
		h.t.Fatalf("operator stopped before the first converge: %v", err)
	case <-wctx.Done():
		h.t.Fatalf("no converge within a minute; history:\n%s", strings.Join(e.History(), "\n"))
	}
	if err := e.WaitIdle(wctx); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) wait(text string) {
	h.t.Helper()
	eventually.True(h.t, "a history line with "+strconv.Quote(text), func() (bool, string) {
		hist := h.eng.History()
		for i := h.seen; i < len(hist); i++ {
			if strings.Contains(hist[i], text) {
				h.seen = i + 1
				return true, ""
			}
		}
		return false, "history:\n" + strings.Join(hist, "\n")
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.eng.WaitIdle(ctx); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) stop() {
	if h.eng == nil {
		return
	}
	h.cancel()
	if err := <-h.done; err != nil {
		h.t.Errorf("Run: %v", err)
	}
	h.prev = append(h.prev, "== start")
	for _, l := range h.eng.History() {
		h.prev = append(h.prev, strings.ReplaceAll(l, h.dir, "$WORK"))
	}
	h.eng = nil
}
