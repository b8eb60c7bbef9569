//go:build linux

package hookexec

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestSandboxUncached runs sandboxed commands when the directories
// around the hidden one hold more entries than the cache may keep open:
// each command builds its rules, and the confinement is the same.
func TestSandboxUncached(t *testing.T) {
	if _, err := LandlockABI(); err != nil {
		t.Fatalf("this kernel cannot run the test: %v", err)
	}
	old := maxHeld
	maxHeld = func() int { return 3 }
	t.Cleanup(func() { maxHeld = old })
	root := t.TempDir()
	hidden := filepath.Join(root, "store")
	mine := filepath.Join(hidden, "ws-1")
	other := filepath.Join(hidden, "ws-2")
	for _, d := range []string{mine, other, filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "a", "f"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := &Sandbox{Writable: []string{mine}, Hidden: []string{hidden}}
	for range 2 {
		c := &Command{Argv: []string{"sh", "-c", "cat ../../a/f > out && ! echo evil > ../ws-2/evil"}, Dir: mine,
			Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: sb}
		if res, err := c.Run(context.Background()); err != nil {
			t.Fatalf("Run() = %v; stderr %q", err, res.Stderr)
		}
	}
	rulesCache.mu.Lock()
	rr := rulesCache.sets[hidden]
	uncached := rr != nil && rr.uncached && rr.held == 0 && len(rr.rulesets) == 0
	rulesCache.mu.Unlock()
	if !uncached {
		t.Errorf("the rules for %s were cached, want them built per command", hidden)
	}
	if b, err := os.ReadFile(filepath.Join(mine, "out")); err != nil || string(b) != "a\n" {
		t.Errorf("out = %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(other, "evil")); err == nil {
		t.Error("the command wrote into the other workspace")
	}
}
