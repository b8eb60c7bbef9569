package tarball_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// An ent is one tar entry of a test archive.
type ent struct {
	name string
	typ  byte   // tar.TypeReg when zero
	body string // content of a file
	link string // target of a link
	mode int64  // 0644 (0755 for a directory) when zero
	size int64  // header size when not len(body): a lie
	pax  map[string]string
}

func reg(name, body string) ent   { return ent{name: name, body: body} }
func dir(name string) ent         { return ent{name: name, typ: tar.TypeDir} }
func symlink(name, to string) ent { return ent{name: name, typ: tar.TypeSymlink, link: to} }
func hardlink(name, to string) ent {
	return ent{name: name, typ: tar.TypeLink, link: to}
}

// rawTar writes entries as an uncompressed tar. A header whose size lies
// ends the archive there, as a truncated stream would.
func rawTar(tb testing.TB, entries ...ent) []byte {
	tb.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: e.mode, Size: int64(len(e.body)), Format: tar.FormatPAX, PAXRecords: e.pax}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
			if h.Typeflag == tar.TypeDir {
				h.Mode = 0o755
			}
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if e.size != 0 {
			h.Size = e.size
		}
		if err := tw.WriteHeader(h); err != nil {
			tb.Fatalf("writing test archive: %v", err)
		}
		if e.size != 0 {
			return buf.Bytes()
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			tb.Fatalf("writing test archive: %v", err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatalf("writing test archive: %v", err)
	}
	return buf.Bytes()
}

func gz(tb testing.TB, raw []byte) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		tb.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func tgz(tb testing.TB, entries ...ent) []byte {
	tb.Helper()
	return gz(tb, rawTar(tb, entries...))
}

func sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// chunks returns a reader that hands out data 1 KiB at a time, as the
// gRPC layer does with Argo CD's chunks.
func chunks(data []byte) io.Reader { return &chunkReader{data: data, size: 1024} }

type chunkReader struct {
	data []byte
	size int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.size)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// failingReader returns data, then err.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p[:min(len(p), 1024)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// listing describes the tree under dir, one line per entry:
// "d 0755", "f 0644 <content>", "l <target>".
func listing(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			got[rel] = fmt.Sprintf("d %04o", fi.Mode()&fs.ModePerm)
			if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
				got[rel] += " special"
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			got[rel] = "l " + t
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			got[rel] = fmt.Sprintf("f %04o %s", fi.Mode()&fs.ModePerm, b)
			if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
				got[rel] += " special"
			}
		default:
			got[rel] = "? " + fi.Mode().String()
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("listing %s: %v", dir, err)
	}
	return got
}

// leftovers lists what is under root besides the store's own directories
// and the published cache: temporary directories, spool files and
// workspaces that should be gone.
func leftovers(tb testing.TB, root string) []string {
	tb.Helper()
	var left []string
	for _, sub := range []string{"tmp", "work"} {
		des, err := os.ReadDir(filepath.Join(root, sub))
		if err != nil {
			tb.Fatal(err)
		}
		for _, de := range des {
			left = append(left, sub+"/"+de.Name())
		}
	}
	sort.Strings(left)
	return left
}

// cached lists the directories of the cache.
func cached(tb testing.TB, root string) []string {
	tb.Helper()
	des, err := os.ReadDir(filepath.Join(root, "cache"))
	if err != nil {
		tb.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}
