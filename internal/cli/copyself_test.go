package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/cli"
)

func TestCopySelf(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "old"), []byte("an older copy"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, arg, written string
	}{
		{"a file path", filepath.Join(dir, "bin"), filepath.Join(dir, "bin")},
		{"a directory", dir, filepath.Join(dir, "strata")},
		{"over an older copy", filepath.Join(dir, "old"), filepath.Join(dir, "old")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := cli.Main(context.Background(), []string{"copy-self", tc.arg}, nil, &stdout, &stderr); code != 0 {
				t.Fatalf("copy-self %s: exit %d: %s", tc.arg, code, stderr.String())
			}
			got, err := os.ReadFile(tc.written)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("copy-self %s wrote %d bytes, not this binary's %d", tc.arg, len(got), len(want))
			}
			fi, err := os.Stat(tc.written)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o755 {
				t.Errorf("copy-self %s: mode %v, want -rwxr-xr-x", tc.arg, fi.Mode())
			}
			if !strings.Contains(stderr.String(), tc.written) {
				t.Errorf("copy-self %s said %q, want the path written", tc.arg, stderr.String())
			}
		})
	}
	// No temporary file is left behind.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".strata-copy-") {
			t.Errorf("temporary file %s left in %s", e.Name(), dir)
		}
	}
}

func TestCopySelfErrors(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing directory", []string{"copy-self", filepath.Join(dir, "nope", "strata")}, "the directory " + filepath.Join(dir, "nope") + " does not exist; mount the shared volume there"},
		{"no argument", []string{"copy-self"}, "missing DEST: usage: strata copy-self DEST"},
	}
	if os.Geteuid() != 0 { // root writes into a 0555 directory
		tests = append(tests, struct {
			name string
			args []string
			want string
		}{"read-only directory", []string{"copy-self", filepath.Join(ro, "strata")}, "is the volume writable by this user?"})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := cli.Main(context.Background(), tc.args, nil, &stdout, &stderr)
			if code == 0 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("%v: exit %d, stderr %q; want a failure saying %q", tc.args, code, stderr.String(), tc.want)
			}
		})
	}
}
