package hookexec_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/hookexec"
)

// sandboxRoot makes root/store (hidden) with workspaces ws-1 and ws-2 in
// it, each holding a file, and a file beside the store.
func sandboxRoot(t *testing.T) (root, hidden string) {
	t.Helper()
	if _, err := hookexec.LandlockABI(); err != nil {
		t.Fatalf("this kernel cannot run the test: %v", err)
	}
	root = t.TempDir()
	hidden = filepath.Join(root, "store")
	for _, ws := range []string{"ws-1", "ws-2"} {
		d := filepath.Join(hidden, "work", ws)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte(ws+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "beside"), []byte("beside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, hidden
}

// sandboxed runs script in dir, confined to writing dir and to not
// reaching hidden; it returns stdout, or the error with stderr.
func sandboxed(t *testing.T, dir, hidden, script string) (string, error) {
	t.Helper()
	sb := &hookexec.Sandbox{Writable: []string{dir}, Hidden: []string{hidden}}
	c := &hookexec.Command{Argv: sh(script), Dir: dir, Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: sb}
	res, err := run(t, context.Background(), c)
	if err != nil {
		return "", fmt.Errorf("%w; stderr %q", err, stderrOf(res))
	}
	return string(res.Stdout), nil
}

// TestSandboxCacheFollowsChanges changes the directories around the
// hidden one between commands: the sandbox's rules are cached, and each
// command must still see the directories as they are when it starts.
func TestSandboxCacheFollowsChanges(t *testing.T) {
	root, hidden := sandboxRoot(t)
	ws1 := filepath.Join(hidden, "work", "ws-1")
	ws2 := filepath.Join(hidden, "work", "ws-2")
	mustRun := func(dir, script string) string {
		t.Helper()
		out, err := sandboxed(t, dir, hidden, script)
		if err != nil {
			t.Fatalf("%s: %v", script, err)
		}
		return out
	}
	mustFail := func(dir, script string) {
		t.Helper()
		if out, err := sandboxed(t, dir, hidden, script); err == nil {
			t.Fatalf("%s succeeded (stdout %q), want it denied", script, out)
		}
	}

	mustRun(ws1, "cat ../../../beside && echo x > f")

	// Made beside the hidden directory after the rules were cached, and
	// at once (within the file system's timestamp granularity).
	for i := range 3 {
		d := filepath.Join(root, fmt.Sprintf("new-%d", i))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "g"), []byte("new\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := mustRun(ws1, "cat "+filepath.Join(d, "g")); got != "new\n" {
			t.Fatalf("reading %s/g = %q", d, got)
		}
	}
	// A file replaced by another of the same name.
	if err := os.Remove(filepath.Join(root, "beside")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "beside"), []byte("replaced\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := mustRun(ws1, "cat "+filepath.Join(root, "beside")); got != "replaced\n" {
		t.Fatalf("reading the replaced file = %q", got)
	}
	// A sibling replaced by a symbolic link into the hidden directory:
	// symbolic links are never allowed, what they lead to is readable
	// only by its own path.
	if err := os.RemoveAll(filepath.Join(root, "new-0")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(ws2, filepath.Join(root, "new-0")); err != nil {
		t.Fatal(err)
	}
	mustFail(ws1, "cat "+filepath.Join(root, "new-0", "f"))
	// The hidden directory and the other workspace stay out of reach,
	// whatever has been cached.
	mustFail(ws1, "cat ../ws-2/f")
	mustFail(ws1, "echo evil > ../ws-2/f")
	mustFail(ws1, "ls "+hidden)
	mustFail(ws2, "cat ../ws-1/f")
	mustRun(ws2, "echo y > f")

	// A workspace removed and made again at the same path is a new
	// directory: writable, and the old rules give nothing.
	if err := os.RemoveAll(ws1); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ws1, 0o755); err != nil {
		t.Fatal(err)
	}
	mustRun(ws1, "echo z > f && cat f")
	mustFail(ws1, "cat ../ws-2/f")

	// A directory beside the hidden one, taken away, may be missing.
	if err := os.RemoveAll(filepath.Join(root, "new-1")); err != nil {
		t.Fatal(err)
	}
	mustRun(ws1, "cat "+filepath.Join(root, "new-2", "g"))

	for ws, want := range map[string]string{ws2: "y\n"} {
		if b, err := os.ReadFile(filepath.Join(ws, "f")); err != nil || string(b) != want {
			t.Errorf("%s/f = %q, %v; want %q", ws, b, err, want)
		}
	}
}

// TestSandboxCacheConcurrent runs commands in many workspaces at once,
// each trying to write the others: every one may write only its own.
func TestSandboxCacheConcurrent(t *testing.T) {
	_, hidden := sandboxRoot(t)
	const n = 12
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = filepath.Join(hidden, "work", fmt.Sprintf("c-%d", i))
		if err := os.Mkdir(dirs[i], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*n*3)
	for round := range 3 {
		for i, d := range dirs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				other := dirs[(i+1)%n]
				if _, err := sandboxed(t, d, hidden, fmt.Sprintf("echo %d > mine", round)); err != nil {
					errs <- fmt.Errorf("%s: writing its own: %w", d, err)
				}
				if _, err := sandboxed(t, d, hidden, "echo evil > "+filepath.Join(other, "evil")); err == nil {
					errs <- fmt.Errorf("%s wrote into %s", d, other)
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, d := range dirs {
		if _, err := os.Lstat(filepath.Join(d, "evil")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s/evil: %v, want it not to exist", d, err)
		}
		if b, err := os.ReadFile(filepath.Join(d, "mine")); err != nil || !strings.HasSuffix(string(b), "\n") {
			t.Errorf("%s/mine = %q, %v", d, b, err)
		}
	}
}

// TestSandboxCacheSignals checks, on Landlock ABI 6 and later, that a
// command cannot signal a command of another workspace while both run
// with cached rulesets.
func TestSandboxCacheSignals(t *testing.T) {
	_, hidden := sandboxRoot(t)
	if abi, _ := hookexec.LandlockABI(); abi < 6 {
		t.Logf("Landlock ABI %d cannot scope signals; checking the commands only run", abi)
	}
	ws1 := filepath.Join(hidden, "work", "ws-1")
	ws2 := filepath.Join(hidden, "work", "ws-2")
	// Cache both rulesets first.
	for _, d := range []string{ws1, ws2} {
		if _, err := sandboxed(t, d, hidden, "true"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sb := &hookexec.Sandbox{Writable: []string{ws1}, Hidden: []string{hidden}}
	long := &hookexec.Command{Argv: sh("echo $$ > pid.tmp && mv pid.tmp pid && exec sleep 30"), Dir: ws1,
		Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: sb, Grace: -1}
	done := make(chan error, 1)
	go func() {
		_, err := long.Run(ctx)
		done <- err
	}()
	var pid string
	for pid == "" {
		select {
		case err := <-done:
			t.Fatalf("the long command ended: %v", err)
		default:
		}
		if b, err := os.ReadFile(filepath.Join(ws1, "pid")); err == nil {
			pid = strings.TrimSpace(string(b))
		} else {
			time.Sleep(5 * time.Millisecond)
		}
	}
	out, err := sandboxed(t, ws2, hidden, "kill -0 "+pid+" && echo reached")
	if abi, _ := hookexec.LandlockABI(); abi >= 6 && err == nil {
		t.Errorf("a command of another workspace signalled process %s: %q", pid, out)
	}
	cancel()
	<-done
}

// TestSandboxCacheKeepsDescriptors checks that the descriptors the cache
// holds open (hundreds, for a crowded directory) do not reach commands.
func TestSandboxCacheKeepsDescriptors(t *testing.T) {
	root, hidden := sandboxRoot(t)
	for i := range 50 {
		if err := os.Mkdir(filepath.Join(root, fmt.Sprintf("d-%02d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ws1 := filepath.Join(hidden, "work", "ws-1")
	for range 2 {
		out, err := sandboxed(t, ws1, hidden, "ls -l /proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		// What the test process itself inherited may show; what the
		// cache holds must not: the directories beside the hidden one,
		// the devices, rulesets.
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, root) || strings.Contains(line, "landlock") || strings.Contains(line, "-> /dev/") && !strings.HasSuffix(line, "/dev/null") {
				t.Errorf("the command inherited %q", line)
			}
		}
	}
}
