package tarball_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/cmpserver/tarball"
)

// FuzzExtract feeds Extract arbitrary archives: a tar that the test
// compresses (compressed false), or arbitrary bytes as the stream. Extract
// must not panic, must write nothing outside its directory, must leave
// nothing on error, and what it keeps must obey the rules.
func FuzzExtract(f *testing.F) {
	for _, tc := range hostileCases(f) {
		raw, err := gunzip(tc.data)
		if len(tc.data) > 64<<10 || len(raw) > 64<<10 {
			continue // the bombs: too slow to mutate
		}
		f.Add(tc.data, true)
		if err == nil {
			f.Add(raw, false)
		}
	}
	f.Add(rawTar(f, repoEntries...), false)
	f.Add(rawTar(f, dir("./"), reg("a/b", "x"), symlink("a/l", "b"), symlink("s", "a/l"), hardlink("h", "a/b")), false)
	f.Add(tgz(f, repoEntries...), true)

	lim := tarball.Limits{MaxCompressed: 1 << 20, MaxBytes: 1 << 20, MaxFiles: 200, MaxPathLen: 1024}
	f.Fuzz(func(t *testing.T, data []byte, compressed bool) {
		if !compressed {
			data = gzipBytes(data)
		}
		base := t.TempDir()
		parent := filepath.Join(base, "p")
		if err := os.Mkdir(parent, 0o700); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(parent, "repo")
		err := tarball.Extract(context.Background(), bytes.NewReader(data), dir, tarball.Options{Limits: lim, PreserveFileMode: len(data)%2 == 0})

		if des, _ := os.ReadDir(base); len(des) != 1 {
			t.Fatalf("Extract wrote beside its parent: %v", des)
		}
		des, _ := os.ReadDir(parent)
		if err != nil {
			if len(des) != 0 {
				t.Fatalf("Extract() = %v and left %v", err, des)
			}
			return
		}
		if len(des) != 1 {
			t.Fatalf("Extract wrote beside its directory: %v", des)
		}
		checkTree(t, dir, lim)
	})
}

// checkTree checks an extracted tree against the rules of Extract.
func checkTree(t *testing.T, dir string, lim tarball.Limits) {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var n int
	var content int64
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		n++
		fi, err := d.Info()
		if err != nil {
			return err
		}
		m := fi.Mode()
		if m&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
			t.Errorf("%s has mode %v", rel, m)
		}
		switch {
		case m.IsDir():
			if m.Perm()&0o700 != 0o700 {
				t.Errorf("directory %s has mode %v", rel, m)
			}
		case m.IsRegular():
			content += fi.Size()
			if m.Perm()&0o400 == 0 {
				t.Errorf("file %s has mode %v", rel, m)
			}
		case m&fs.ModeSymlink != 0:
			// os.Root follows the link and refuses to leave dir.
			if _, err := root.Stat(rel); err != nil && strings.Contains(err.Error(), "escapes") {
				target, _ := os.Readlink(p)
				t.Errorf("symlink %s -> %s leads outside the repository: %v", rel, target, err)
			}
		default:
			t.Errorf("%s has mode %v", rel, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n > lim.MaxFiles || content > lim.MaxBytes {
		t.Errorf("extracted %d entries and %d bytes, over the limits", n, content)
	}
}

func gzipBytes(raw []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(raw)
	zw.Close()
	return buf.Bytes()
}

func gunzip(data []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}
