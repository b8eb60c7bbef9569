package hookexec_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/strata-dev/strata/internal/hookexec"
)

func newWorkspace(t *testing.T) *hookexec.Workspace {
	t.Helper()
	ws, err := hookexec.NewWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ws.Close(); err != nil {
			t.Error(err)
		}
	})
	return ws
}

func TestWorkspaceWithAHook(t *testing.T) {
	ws, err := hookexec.NewWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(ws.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("workspace mode = %v, want 0700", perm)
	}

	input := []byte(`{"global":{"replicas":3}}`)
	if err := ws.WriteFile("values.json", input); err != nil {
		t.Fatal(err)
	}
	c := &hookexec.Command{
		Argv: sh(`cat "$VALUES_PATH" > "$VALUES_JSON_PATCH_PATH"; mkdir "$(dirname "$VALUES_PATH")/locked"; touch "$(dirname "$VALUES_PATH")/locked/f"; chmod 0 "$(dirname "$VALUES_PATH")/locked"`),
		Env: []string{
			testPath,
			"VALUES_PATH=" + ws.Path("values.json"),
			"VALUES_JSON_PATCH_PATH=" + ws.Path("values-patch.json"),
		},
	}
	if _, err := run(t, t.Context(), c); err != nil {
		t.Fatalf("Run(%s) = %v", c, err)
	}
	got, err := ws.ReadBounded("values-patch.json", 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(input) {
		t.Errorf("ReadBounded(values-patch.json) = %q, want %q", got, input)
	}

	// The hook left a directory without permissions; Close removes it all.
	if err := ws.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if _, err := os.Stat(ws.Dir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Close, Stat(%s) = %v, want it gone", ws.Dir(), err)
	}
	if err := ws.Close(); err != nil {
		t.Errorf("second Close() = %v, want nil", err)
	}
}

func TestWorkspaceReadBounded(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, path string)
		max     int64
		want    string
		wantIs  error
		wantMsg string
	}{
		{
			name:  "within the bound",
			setup: func(t *testing.T, p string) { writeFile(t, p, "[]") },
			max:   10,
			want:  "[]",
		},
		{
			name:  "exactly the bound",
			setup: func(t *testing.T, p string) { writeFile(t, p, "0123456789") },
			max:   10,
			want:  "0123456789",
		},
		{
			name:  "empty file, zero bound",
			setup: func(t *testing.T, p string) { writeFile(t, p, "") },
			max:   0,
			want:  "",
		},
		{
			name:    "over the bound",
			setup:   func(t *testing.T, p string) { writeFile(t, p, "0123456789X") },
			max:     10,
			wantIs:  hookexec.ErrOutputTooLarge,
			wantMsg: "hook output file out is larger than 10 bytes",
		},
		{
			name:   "missing",
			setup:  func(*testing.T, string) {},
			max:    10,
			wantIs: fs.ErrNotExist,
		},
		{
			name: "symbolic link",
			setup: func(t *testing.T, p string) {
				target := filepath.Join(t.TempDir(), "secret")
				writeFile(t, target, "secret")
				if err := os.Symlink(target, p); err != nil {
					t.Fatal(err)
				}
			},
			max:     100,
			wantMsg: "it is a symbolic link",
		},
		{
			name: "FIFO, which must not block",
			setup: func(t *testing.T, p string) {
				if err := syscall.Mkfifo(p, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			max:     100,
			wantMsg: "not a regular file",
		},
		{
			name: "directory",
			setup: func(t *testing.T, p string) {
				if err := os.Mkdir(p, 0o700); err != nil {
					t.Fatal(err)
				}
			},
			max:     100,
			wantMsg: "not a regular file",
		},
		{
			name:    "negative bound",
			setup:   func(t *testing.T, p string) { writeFile(t, p, "") },
			max:     -1,
			wantMsg: "negative bound",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := newWorkspace(t)
			tc.setup(t, ws.Path("out"))
			got, err := ws.ReadBounded("out", tc.max)
			if tc.wantIs == nil && tc.wantMsg == "" {
				if err != nil {
					t.Fatalf("ReadBounded(out, %d) = %v", tc.max, err)
				}
				if string(got) != tc.want {
					t.Errorf("ReadBounded(out, %d) = %q, want %q", tc.max, got, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ReadBounded(out, %d) = %q, want an error", tc.max, got)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("ReadBounded(out, %d) = %v, want an error matching %v", tc.max, err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("ReadBounded(out, %d) = %q, want it to contain %q", tc.max, err, tc.wantMsg)
			}
		})
	}
}

func TestWorkspaceWriteFile(t *testing.T) {
	ws := newWorkspace(t)
	for _, content := range []string{"first, longer", "second"} {
		if err := ws.WriteFile("in", []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(ws.Path("in"))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != content {
			t.Errorf("after WriteFile(in, %q) the file holds %q", content, got)
		}
	}
	fi, err := os.Stat(ws.Path("in"))
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("input file mode = %v, want 0600", perm)
	}

	// Never through a symbolic link.
	target := filepath.Join(t.TempDir(), "target")
	writeFile(t, target, "untouched")
	if err := os.Symlink(target, ws.Path("link")); err != nil {
		t.Fatal(err)
	}
	if err := ws.WriteFile("link", []byte("overwritten")); err == nil {
		t.Error("WriteFile(link) = nil, want an error for a symbolic link")
	}
	if got, _ := os.ReadFile(target); string(got) != "untouched" {
		t.Errorf("WriteFile(link) wrote through the link: target holds %q", got)
	}
}

func TestWorkspacePathRefusesBadNames(t *testing.T) {
	ws := newWorkspace(t)
	for _, name := range []string{"", ".", "..", "a/b", "../x", "/abs", "a\x00b"} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("Path(%q) did not panic", name)
				}
			}()
			ws.Path(name)
		})
	}
	if got, want := ws.Path("values.json"), filepath.Join(ws.Dir(), "values.json"); got != want {
		t.Errorf("Path(values.json) = %q, want %q", got, want)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
