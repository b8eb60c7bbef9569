package hookexec_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/hookexec"
)

// TestSandbox runs commands confined to one workspace of a directory
// holding others and a cache, and tries, as a hostile repository's script
// would, to read and write everything else there.
func TestSandbox(t *testing.T) {
	if _, err := hookexec.LandlockABI(); err != nil {
		t.Fatalf("this kernel cannot run the test: %v", err)
	}
	root := t.TempDir()
	hidden := filepath.Join(root, "store")
	cache := filepath.Join(hidden, "cache", "sha-1")
	mine := filepath.Join(hidden, "work", "ws-1")
	other := filepath.Join(hidden, "work", "ws-2")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{cache, mine, other, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(cache, "app.yaml"), filepath.Join(other, "app.yaml"), filepath.Join(outside, "readme")} {
		if err := os.WriteFile(f, []byte("original\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sb := &hookexec.Sandbox{Writable: []string{mine}, Hidden: []string{hidden}}

	tests := []struct {
		name   string
		script string
		ok     bool
	}{
		{"write its own workspace", "echo x > ws.txt && mkdir d && mv ws.txt d/ && cat d/ws.txt", true},
		{"read outside the hidden directory", "cat " + filepath.Join(outside, "readme"), true},
		{"run a program", "/bin/sh -c true", true},
		{"write /dev/null", "echo x > /dev/null", true},
		{"write the cache by ../", "echo evil > ../../cache/sha-1/app.yaml", false},
		{"write the cache by its path", "echo evil > " + filepath.Join(cache, "app.yaml"), false},
		{"add a file to the cache", "echo evil > ../../cache/sha-1/new.yaml", false},
		{"write another workspace by ../", "echo evil > ../ws-2/app.yaml", false},
		{"write another workspace by its path", "echo evil > " + filepath.Join(other, "app.yaml"), false},
		{"remove another workspace's file", "rm -f ../ws-2/app.yaml", false},
		{"read another workspace", "cat ../ws-2/app.yaml", false},
		{"read the cache", "cat " + filepath.Join(cache, "app.yaml"), false},
		{"list the hidden directory", "ls " + hidden, false},
		{"write outside", "echo evil > " + filepath.Join(outside, "readme"), false},
		{"move its file into the cache", "echo x > f && mv f ../../cache/sha-1/f", false},
		{"link into the cache", "ln ../../cache/sha-1/app.yaml l", false},
		{"through /proc", "echo evil > /proc/self/cwd/../ws-2/app.yaml", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &hookexec.Command{Argv: sh(tc.script), Dir: mine, Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: sb}
			res, err := run(t, context.Background(), c)
			if tc.ok && err != nil {
				t.Fatalf("Run() = %v, want success; stderr %q", err, stderrOf(res))
			}
			if !tc.ok {
				var exit *hookexec.ExitError
				if !errors.As(err, &exit) {
					t.Fatalf("Run() = %v, want the command to fail", err)
				}
				// Landlock denies a link or rename into a directory the
				// command may not write with EXDEV.
				if s := stderrOf(res); !strings.Contains(s, "ermission denied") && !strings.Contains(s, "cross-device") {
					t.Errorf("stderr %q does not say permission denied", s)
				}
			}
		})
	}
	for _, f := range []string{filepath.Join(cache, "app.yaml"), filepath.Join(other, "app.yaml"), filepath.Join(outside, "readme")} {
		b, err := os.ReadFile(f)
		if err != nil || string(b) != "original\n" {
			t.Errorf("%s = %q, %v; want it unchanged", f, b, err)
		}
	}
	for _, f := range []string{filepath.Join(cache, "new.yaml"), filepath.Join(cache, "f"), filepath.Join(mine, "l")} {
		if _, err := os.Lstat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Lstat(%s) = %v, want it not to exist", f, err)
		}
	}
}

func stderrOf(res *hookexec.Result) string {
	if res == nil {
		return ""
	}
	return string(res.Stderr)
}

func TestSandboxWithoutHidden(t *testing.T) {
	if _, err := hookexec.LandlockABI(); err != nil {
		t.Fatalf("this kernel cannot run the test: %v", err)
	}
	root := t.TempDir()
	mine := filepath.Join(root, "mine")
	if err := os.Mkdir(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	sb := &hookexec.Sandbox{Writable: []string{mine}}
	c := &hookexec.Command{Argv: sh("cat /etc/passwd >/dev/null && echo ok > ok && echo evil > ../evil"), Dir: mine, Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: sb}
	res, err := run(t, context.Background(), c)
	var exit *hookexec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(stderrOf(res), "ermission denied") {
		t.Fatalf("Run() = %v, stderr %q; want the write beside the workspace denied", err, stderrOf(res))
	}
	if b, err := os.ReadFile(filepath.Join(mine, "ok")); err != nil || string(b) != "ok\n" {
		t.Errorf("the command's own file = %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(root, "evil")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Lstat(evil) = %v, want it not to exist", err)
	}
}

func TestSandboxRejectsRelativeDirs(t *testing.T) {
	c := &hookexec.Command{Argv: []string{"true"}, Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: &hookexec.Sandbox{Writable: []string{"rel"}}}
	if _, err := c.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
		t.Fatalf("Run() = %v, want an error about the relative directory", err)
	}
}

// BenchmarkSandbox compares starting a command with and without a
// Sandbox: what the confinement adds to each plugin command.
func BenchmarkSandbox(b *testing.B) {
	root := b.TempDir()
	hidden := filepath.Join(root, "store")
	mine := filepath.Join(hidden, "work", "ws-1")
	if err := os.MkdirAll(mine, 0o755); err != nil {
		b.Fatal(err)
	}
	for _, sb := range []*hookexec.Sandbox{nil, {Writable: []string{mine}, Hidden: []string{hidden}}} {
		name := "unconfined"
		if sb != nil {
			name = "sandboxed"
		}
		b.Run(name, func(b *testing.B) {
			c := &hookexec.Command{Argv: []string{"true"}, Dir: mine, Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: sb}
			for i := 0; i < b.N; i++ {
				if _, err := c.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
