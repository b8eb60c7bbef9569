package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/hack/internal/release"
)

var src = release.Source{Version: "v1.2.3", Commit: "0123456789abcdef0123456789abcdef01234567",
	Time: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}

var helloBuild struct {
	once sync.Once
	path string
	err  error
}

// hello builds testdata/hello, a stand-in for strata with one module
// dependency (go-cmp), for this machine as release builds build (once per
// test process: another platform would compile the standard library once
// more), and returns it for each platform: the archives and the SBOM do
// not look at the binary's architecture.
func hello(t *testing.T, ps []release.Platform) map[release.Platform]string {
	t.Helper()
	b := &helloBuild
	b.once.Do(func() {
		root, err := filepath.Abs("../..")
		if err != nil {
			b.err = err
			return
		}
		dir, err := os.MkdirTemp("", "strata-dist-test-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "strata")
		b.err = release.BuildPackage(context.Background(), root, "./hack/dist/testdata/hello", src,
			release.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}, b.path)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	bins := map[release.Platform]string{}
	for _, p := range ps {
		bins[p] = b.path
	}
	return bins
}

func TestMain(m *testing.M) {
	code := m.Run()
	if helloBuild.path != "" {
		os.RemoveAll(filepath.Dir(helloBuild.path))
	}
	os.Exit(code)
}

func TestDist(t *testing.T) {
	ps := []release.Platform{{OS: "linux", Arch: "amd64"}, {OS: "darwin", Arch: "arm64"}}
	bins := hello(t, ps)
	docs := t.TempDir()
	d := dist{src: src, docs: []string{filepath.Join(docs, "README.md"), filepath.Join(docs, "CHANGELOG.md")}}
	for _, f := range d.docs {
		if err := os.WriteFile(f, []byte("# "+filepath.Base(f)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	outs := []string{t.TempDir(), t.TempDir()}
	// A file of an earlier release is removed; other files stay.
	for _, name := range []string{"strata_v1.2.2_linux_amd64.tar.gz", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(outs[0], name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var written [][]string
	for _, out := range outs {
		names, err := d.write(out, ps, bins)
		if err != nil {
			t.Fatal(err)
		}
		written = append(written, names)
	}
	wantNames := []string{"SHA256SUMS", "strata_v1.2.3_darwin_arm64.cdx.json", "strata_v1.2.3_darwin_arm64.tar.gz",
		"strata_v1.2.3_linux_amd64.cdx.json", "strata_v1.2.3_linux_amd64.tar.gz"}
	if diff := cmp.Diff(wantNames, written[0]); diff != "" {
		t.Errorf("files written mismatch (-want +got):\n%s", diff)
	}
	if entries, _ := os.ReadDir(outs[0]); len(entries) != len(wantNames)+1 {
		t.Errorf("%s holds %d files, want the %d written and notes.txt", outs[0], len(entries), len(wantNames))
	}

	// Reproducible: the second run wrote the same bytes.
	for _, name := range wantNames {
		a, err := os.ReadFile(filepath.Join(outs[0], name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(outs[1], name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs", name)
		}
	}

	// SHA256SUMS verifies every other file, as sha256sum -c reads it.
	sumsData, err := os.ReadFile(filepath.Join(outs[0], "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(sumsData), "\n"), "\n")
	if len(lines) != len(wantNames)-1 {
		t.Errorf("SHA256SUMS has %d lines, want %d", len(lines), len(wantNames)-1)
	}
	for _, l := range lines {
		sum, name, ok := strings.Cut(l, "  ")
		data, err := os.ReadFile(filepath.Join(outs[0], name))
		h := sha256.Sum256(data)
		if !ok || err != nil || sum != hex.EncodeToString(h[:]) {
			t.Errorf("SHA256SUMS line %q does not verify (%v)", l, err)
		}
	}

	// The archive: a directory named after it, the binary and the docs.
	for _, p := range ps {
		base := "strata_v1.2.3_" + p.OS + "_" + p.Arch
		bin, _ := os.ReadFile(bins[p])
		got := readTgz(t, filepath.Join(outs[0], base+".tar.gz"))
		want := map[string]string{base + "/": "dir 755", base + "/strata": "file 755 " + string(bin),
			base + "/README.md": "file 644 # README.md\n", base + "/CHANGELOG.md": "file 644 # CHANGELOG.md\n"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s.tar.gz mismatch (-want +got):\n%s", base, diff)
		}
	}
}

func readTgz(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("%s: gzip header name %q, time %v; want neither", path, zr.Name, zr.ModTime)
	}
	got := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(src.Time) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" {
			t.Errorf("%s: mtime %v, owner %d:%d %q; want the commit time and root without names", h.Name, h.ModTime, h.Uid, h.Gid, h.Uname)
		}
		if h.Typeflag == tar.TypeDir {
			got[h.Name] = "dir " + octal(h.Mode)
			continue
		}
		b, _ := io.ReadAll(tr)
		got[h.Name] = "file " + octal(h.Mode) + " " + string(b)
	}
}

func octal(m int64) string {
	const digits = "01234567"
	return string([]byte{digits[m>>6&7], digits[m>>3&7], digits[m&7]})
}

func TestSBOM(t *testing.T) {
	p := release.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}
	bin := hello(t, []release.Platform{p})[p]
	data, err := SBOM(bin, src)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		BOMFormat, SpecVersion string
		Metadata               struct {
			Timestamp string
			Component struct{ Name, Version, PURL string }
		}
		Components []struct {
			Name, Version, PURL, Type string
			Properties                []struct{ Name, Value string }
		}
		Dependencies []struct {
			Ref       string
			DependsOn []string
		}
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("SBOM is not JSON: %v", err)
	}
	if doc.BOMFormat != "CycloneDX" || doc.SpecVersion != "1.5" || doc.Metadata.Timestamp != "2026-11-27T10:00:00Z" {
		t.Errorf("SBOM header: %s %s %s; want CycloneDX 1.5 dated the commit", doc.BOMFormat, doc.SpecVersion, doc.Metadata.Timestamp)
	}
	mc := doc.Metadata.Component
	if mc.Name != "github.com/strata-dev/strata" || mc.PURL != "pkg:golang/github.com/strata-dev/strata@v1.2.3?goarch="+p.Arch+"&goos="+p.OS+"&type=module" {
		t.Errorf("SBOM component = %+v, want strata at v1.2.3", mc)
	}
	// go-cmp at go.mod's version, with its go.sum hash; the standard library.
	goMod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var cmpVersion string
	for _, l := range strings.Split(string(goMod), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "github.com/google/go-cmp" {
			cmpVersion = f[1]
		}
	}
	found := map[string]bool{}
	for _, c := range doc.Components {
		switch c.Name {
		case "github.com/google/go-cmp":
			found[c.Name] = c.Version == cmpVersion && c.PURL == "pkg:golang/github.com/google/go-cmp@"+cmpVersion+"?type=module" &&
				len(c.Properties) == 1 && c.Properties[0].Name == "cdx:gomod:sum" && strings.HasPrefix(c.Properties[0].Value, "h1:")
		case "stdlib":
			found[c.Name] = c.Version == runtime.Version()
		}
	}
	if !found["github.com/google/go-cmp"] || !found["stdlib"] {
		t.Errorf("SBOM components = %+v; want go-cmp %s with its go.sum hash and stdlib %s", doc.Components, cmpVersion, runtime.Version())
	}
	if len(doc.Dependencies) != 1 || len(doc.Dependencies[0].DependsOn) != len(doc.Components) {
		t.Errorf("SBOM dependencies = %+v; want strata depending on every component", doc.Dependencies)
	}
	if _, err := SBOM(filepath.Join(t.TempDir(), "none"), src); err == nil {
		t.Error("SBOM of a missing file succeeded")
	}
}
