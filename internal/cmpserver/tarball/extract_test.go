package tarball_test

import (
	"archive/tar"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/cmpserver/tarball"
)

// testLimits are small enough for the hostile cases to reach quickly.
var testLimits = tarball.Limits{MaxCompressed: 1 << 20, MaxBytes: 1 << 20, MaxFiles: 10, MaxPathLen: 100}

// hostileCase is an archive Extract must reject.
type hostileCase struct {
	name    string
	data    []byte // compressed; built from entries when nil
	entries []ent
	want    error  // the sentinel
	msg     string // the whole message, when given
	lim     *tarball.Limits
}

func hostileCases(tb testing.TB) []hostileCase {
	big := strings.Repeat("x", 600<<10)
	many := make([]ent, 11)
	for i := range many {
		many[i] = reg(string(rune('a'+i)), "x")
	}
	valid := tgz(tb, reg("a", "hello"))
	cases := []hostileCase{
		{
			name:    "dotdot",
			entries: []ent{reg("../x", "evil")},
			want:    tarball.ErrUnsafePath,
			msg:     `tar entry "../x": path escapes the repository`,
		},
		{
			name:    "dotdot deep",
			entries: []ent{dir("a"), reg("a/../../x", "evil")},
			want:    tarball.ErrUnsafePath,
			msg:     `tar entry "a/../../x": path escapes the repository`,
		},
		{
			name:    "dotdot inside",
			entries: []ent{dir("a"), reg("a/../b", "x")},
			want:    tarball.ErrUnsafePath,
			msg:     `tar entry "a/../b": path contains a ".." element`,
		},
		{
			name:    "absolute",
			entries: []ent{reg("/etc/evil", "x")},
			want:    tarball.ErrUnsafePath,
			msg:     `tar entry "/etc/evil": path is absolute; entries must be relative to the repository root`,
		},
		{
			name:    "symlink absolute",
			entries: []ent{dir("a"), symlink("a/link", "/etc/passwd")},
			want:    tarball.ErrUnsafePath,
			msg:     `tar entry "a/link": is a symlink to "/etc/passwd" outside the repository`,
		},
		{
			name:    "symlink up",
			entries: []ent{symlink("up", "..")},
			want:    tarball.ErrUnsafePath,
			msg:     `tar entry "up": is a symlink to ".." outside the repository`,
		},
		{
			name:    "symlink up from subdir",
			entries: []ent{dir("a"), symlink("a/up", "../../etc")},
			want:    tarball.ErrUnsafePath,
			msg:     `tar entry "a/up": is a symlink to "../../etc" outside the repository`,
		},
		{
			// Lexically "a/.." is the root, but the kernel resolves a
			// first: a is the root, so a/.. is its parent.
			name:    "symlink through symlink",
			entries: []ent{symlink("a", "."), symlink("b", "a/..")},
			want:    tarball.ErrUnsafePath,
			msg:     `tar entry "b": is a symlink to "a/.." outside the repository`,
		},
		{
			// s looks safe until d arrives.
			name:    "symlink made unsafe by a later one",
			entries: []ent{dir("x"), symlink("x/s", "d/../.."), symlink("x/d", "..")},
			want:    tarball.ErrUnsafePath,
			msg:     `tar entry "x/s": is a symlink to "d/../.." outside the repository`,
		},
		{
			name:    "symlink loop",
			entries: []ent{symlink("a", "b"), symlink("b", "a/x")},
			want:    tarball.ErrUnsafePath,
		},
		{
			name:    "write through symlink",
			entries: []ent{dir("sub"), symlink("d", "sub"), reg("d/x", "evil")},
			want:    tarball.ErrUnsafePath,
			msg:     `tar entry "d/x": path passes through symlink "d"`,
		},
		{
			name:    "write through escaping symlink",
			entries: []ent{symlink("d", "/tmp"), reg("d/x", "evil")},
			want:    tarball.ErrUnsafePath,
			msg:     `tar entry "d": is a symlink to "/tmp" outside the repository`,
		},
		{
			name:    "replace file by symlink",
			entries: []ent{reg("f", "x"), symlink("f", "/etc/passwd")},
			want:    tarball.ErrUnsafePath,
		},
		{
			name:    "replace symlink by file",
			entries: []ent{reg("t", "x"), symlink("f", "t"), reg("f", "y")},
			want:    tarball.ErrUnsafePath,
			msg:     `tar entry "f": symlink was already extracted by an earlier entry`,
		},
		{
			name:    "duplicate file",
			entries: []ent{reg("f", "x"), reg("f", "y")},
			want:    tarball.ErrUnsafePath,
			msg:     `tar entry "f": file was already extracted by an earlier entry`,
		},
		{
			name:    "file as parent",
			entries: []ent{reg("f", "x"), reg("f/g", "y")},
			want:    tarball.ErrUnsafePath,
			msg:     `tar entry "f/g": path passes through file "f"`,
		},
		{
			name:    "hardlink absolute",
			entries: []ent{hardlink("h", "/etc/passwd")},
			want:    tarball.ErrUnsafePath,
			msg:     `tar entry "h": hard link to "/etc/passwd": path is absolute; entries must be relative to the repository root`,
		},
		{
			name:    "hardlink up",
			entries: []ent{hardlink("h", "../secret")},
			want:    tarball.ErrUnsafePath,
			msg:     `tar entry "h": hard link to "../secret": path escapes the repository`,
		},
		{
			name:    "hardlink to missing",
			entries: []ent{hardlink("h", "later"), reg("later", "x")},
			want:    tarball.ErrUnsafePath,
			msg:     `tar entry "h": is a hard link to "later", which is not an earlier regular file of the archive`,
		},
		{
			name:    "hardlink to symlink",
			entries: []ent{reg("t", "x"), symlink("s", "t"), hardlink("h", "s")},
			want:    tarball.ErrUnsafePath,
		},
		{
			name:    "hardlink to dir",
			entries: []ent{dir("d"), hardlink("h", "d")},
			want:    tarball.ErrUnsafePath,
		},
		{
			name:    "hardlink through symlink",
			entries: []ent{dir("d"), reg("d/f", "x"), symlink("s", "d"), hardlink("h", "s/f")},
			want:    tarball.ErrUnsafePath,
		},
		{
			name:    "char device",
			entries: []ent{{name: "null", typ: tar.TypeChar}},
			want:    tarball.ErrEntryType,
			msg:     `tar entry "null": is a character device; a repository may hold only files, directories and links`,
		},
		{
			name:    "block device",
			entries: []ent{{name: "sda", typ: tar.TypeBlock}},
			want:    tarball.ErrEntryType,
		},
		{
			name:    "fifo",
			entries: []ent{{name: "pipe", typ: tar.TypeFifo}},
			want:    tarball.ErrEntryType,
		},
		{
			name:    "unknown type",
			entries: []ent{{name: "odd", typ: 'Z'}},
			want:    tarball.ErrEntryType,
		},
		{
			name:    "root is a file",
			entries: []ent{reg(".", "x")},
			want:    tarball.ErrUnsafePath,
		},
		{
			name:    "huge size",
			entries: []ent{{name: "huge", size: 1 << 40}},
			want:    tarball.ErrLimit,
		},
		{
			name:    "too much content",
			entries: []ent{reg("a", big), reg("b", big)},
			want:    tarball.ErrLimit,
		},
		{
			name:    "hardlink bomb",
			entries: []ent{reg("a", big), hardlink("b", "a")},
			want:    tarball.ErrLimit,
		},
		{
			name:    "many files",
			entries: many,
			want:    tarball.ErrLimit,
		},
		{
			name:    "many implied dirs",
			entries: []ent{reg("a/b/c/d/e/f/g/h/i/j/k", "x")},
			want:    tarball.ErrLimit,
		},
		{
			name:    "long path",
			entries: []ent{reg(strings.Repeat("a/", 50)+"b", "x")},
			want:    tarball.ErrLimit,
			msg:     `tar entry "` + strings.Repeat("a/", 50) + `b": path is longer than 100 bytes (cmp serve --max-repo-path-length)`,
		},
		{
			name:    "long symlink target",
			entries: []ent{symlink("l", strings.Repeat("a/", 60))},
			want:    tarball.ErrLimit,
		},
		{
			name:    "compressed too large",
			entries: []ent{reg("a", randomish(4096))},
			lim:     &tarball.Limits{MaxCompressed: 1000},
			want:    tarball.ErrLimit,
			msg:     "limit exceeded: the repository tarball is more than 1000 bytes compressed (cmp serve --max-repo-compressed-bytes)" + hint,
		},
		{
			name: "header bomb",
			entries: []ent{
				{name: "a", pax: map[string]string{"comment": strings.Repeat("x", 900<<10)}},
				{name: "b", pax: map[string]string{"comment": strings.Repeat("x", 900<<10)}},
			},
			want: tarball.ErrLimit,
		},
		{
			name: "not gzip",
			data: rawTar(tb, reg("a", "x")),
			want: tarball.ErrFormat,
		},
		{
			name: "not tar",
			data: gz(tb, []byte(strings.Repeat("not a tar header ", 100))),
			want: tarball.ErrFormat,
		},
		{
			name: "truncated",
			data: valid[:len(valid)/2],
			want: tarball.ErrFormat,
		},
		{
			name: "empty",
			data: []byte{},
			want: tarball.ErrFormat,
		},
	}
	for i, c := range cases {
		if c.data == nil {
			cases[i].data = tgz(tb, c.entries...)
		}
	}
	return cases
}

const hint = "; exclude files from the tarball with the repo-server's reposerver.plugin.tar.exclusions setting, or raise that limit of the plugin server"

// randomish returns n bytes that gzip cannot shrink, the same every time.
func randomish(n int) string {
	b := make([]byte, n)
	x := uint64(0x9E3779B97F4A7C15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return string(b)
}

func TestExtractRejects(t *testing.T) {
	for _, tc := range hostileCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "repo")
			lim := testLimits
			if tc.lim != nil {
				lim = *tc.lim
			}
			err := tarball.Extract(context.Background(), chunks(tc.data), dir, tarball.Options{Limits: lim})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Extract() = %v, want an error matching %v", err, tc.want)
			}
			if tc.msg != "" && err.Error() != tc.msg {
				t.Errorf("Extract() error:\n got %s\nwant %s", err, tc.msg)
			}
			if des, err := os.ReadDir(parent); err != nil || len(des) != 0 {
				t.Errorf("after a rejected archive the parent holds %v (%v), want nothing", des, err)
			}
		})
	}
}

func TestExtract(t *testing.T) {
	entries := []ent{
		dir("./"),
		dir("./app/"),
		reg("./app/values.yaml", "replicas: 1\n"),
		{name: "app/run.sh", body: "#!/bin/sh\n", mode: 0o4755},
		{name: "app/secret", body: "s", mode: 0o200},
		{name: "ro", typ: tar.TypeDir, mode: 0o1500},
		reg("ro/f", "r"),
		reg("implied/deep/file", "d"),
		symlink("app/link", "../implied/deep/file"),
		symlink("self", "."),
		symlink("chain", "app/link"),
		symlink("dangling", "app/missing"),
		symlink("viaself", "self/app/values.yaml"),
		hardlink("app/copy", "app/values.yaml"),
		reg("empty", ""),
	}
	data := tgz(t, entries...)
	tests := []struct {
		name     string
		preserve bool
		want     map[string]string
	}{
		{
			name: "default modes",
			want: map[string]string{
				"app":               "d 0755",
				"app/values.yaml":   "f 0644 replicas: 1\n",
				"app/run.sh":        "f 0644 #!/bin/sh\n",
				"app/secret":        "f 0644 s",
				"app/link":          "l ../implied/deep/file",
				"app/copy":          "f 0644 replicas: 1\n",
				"ro":                "d 0755",
				"ro/f":              "f 0644 r",
				"implied":           "d 0755",
				"implied/deep":      "d 0755",
				"implied/deep/file": "f 0644 d",
				"self":              "l .",
				"chain":             "l app/link",
				"dangling":          "l app/missing",
				"viaself":           "l self/app/values.yaml",
				"empty":             "f 0644 ",
			},
		},
		{
			name:     "preserved modes",
			preserve: true,
			want: map[string]string{
				"app":               "d 0755",
				"app/values.yaml":   "f 0644 replicas: 1\n",
				"app/run.sh":        "f 0755 #!/bin/sh\n",
				"app/secret":        "f 0600 s",
				"app/link":          "l ../implied/deep/file",
				"app/copy":          "f 0644 replicas: 1\n",
				"ro":                "d 0700",
				"ro/f":              "f 0644 r",
				"implied":           "d 0755",
				"implied/deep":      "d 0755",
				"implied/deep/file": "f 0644 d",
				"self":              "l .",
				"chain":             "l app/link",
				"dangling":          "l app/missing",
				"viaself":           "l self/app/values.yaml",
				"empty":             "f 0644 ",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "repo")
			err := tarball.Extract(context.Background(), chunks(data), dir, tarball.Options{PreserveFileMode: tc.preserve})
			if err != nil {
				t.Fatalf("Extract() = %v", err)
			}
			if diff := cmp.Diff(tc.want, listing(t, dir)); diff != "" {
				t.Errorf("extracted tree (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExtractExistingDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := tarball.Extract(context.Background(), chunks(tgz(t, reg("a", "b"))), dir, tarball.Options{})
	if err == nil {
		t.Fatal("Extract() into an existing directory succeeded, want an error")
	}
	if _, err := os.Stat(filepath.Join(dir, "keep")); err != nil {
		t.Errorf("Extract() touched the existing directory: %v", err)
	}
}

func TestExtractCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	parent := t.TempDir()
	err := tarball.Extract(ctx, chunks(tgz(t, reg("a", "b"))), filepath.Join(parent, "repo"), tarball.Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Extract() = %v, want context.Canceled", err)
	}
	if des, _ := os.ReadDir(parent); len(des) != 0 {
		t.Errorf("a canceled Extract left %v", des)
	}
}
