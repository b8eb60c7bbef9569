// Package golden is the support for strata's golden-file tests: cases kept
// as txtar archives under testdata/ (inputs and expected output together),
// expected output compared with a diff, and rewritten in place when the test
// binary runs with -update.
//
// A test runs each case as a subtest with Run (or lists them with Cases, to
// seed a fuzz test) and checks every output with Check:
//
//	golden.Run(t, "testdata/render/*.txtar", func(t *testing.T, c golden.Case) {
//		got := render(t, c)
//		golden.Check(t, c.Path, "want", got)
//	})
//
// Expected output kept in a file of its own (a shipped example's
// expected.yaml) is checked with CheckFile.
//
// An absent section reads as empty, so a case need not hold the sections
// whose output is empty. Under -update, Check rewrites only the body of the
// section it checks, and only when it differs, and leaves every other byte
// of the archive as it was; a section the archive lacks is added at its end.
// Sections are never removed: one whose output became empty stays, empty.
//
// The package registers the -update flag; a test package that imports it
// must not register its own.
package golden

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite golden files (txtar sections and expected-output files) with the output the tests produce")

// Update reports whether the test binary runs with -update.
func Update() bool { return *update }

// A Case is one golden test case: a txtar archive.
type Case struct {
	// Name is the archive's file name without ".txtar", for t.Run.
	Name string
	// Path is the archive's absolute path, so it stays valid when a test
	// changes its working directory.
	Path string
	// Archive is the archive as read when the case was listed.
	Archive *txtar.Archive
}

// Cases reads the txtar archives matching glob, in lexical order. It fails
// the test if the pattern is malformed, matches nothing, or an archive
// cannot be read or holds a section name twice.
func Cases(t testing.TB, glob string) []Case {
	t.Helper()
	paths, err := filepath.Glob(glob)
	if err != nil {
		t.Fatalf("golden: listing %s: %v", glob, err)
	}
	if len(paths) == 0 {
		t.Fatalf("golden: no files match %s", glob)
	}
	cases := make([]Case, 0, len(paths))
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatalf("golden: %v", err)
		}
		data, err := os.ReadFile(abs)
		if err != nil {
			t.Fatalf("golden: %v", err)
		}
		if name, dup := duplicateSection(data); dup {
			t.Fatalf("golden: %s holds section %q more than once", p, name)
		}
		cases = append(cases, Case{
			Name:    strings.TrimSuffix(filepath.Base(p), ".txtar"),
			Path:    abs,
			Archive: txtar.Parse(data),
		})
	}
	return cases
}

// Run runs fn as a subtest named after the case for each case Cases lists
// for glob.
func Run(t *testing.T, glob string, fn func(t *testing.T, c Case)) {
	t.Helper()
	for _, c := range Cases(t, glob) {
		t.Run(c.Name, func(t *testing.T) { fn(t, c) })
	}
}

// Section returns the body of the case's section name and whether the
// archive holds it.
func (c Case) Section(name string) (string, bool) {
	for _, f := range c.Archive.Files {
		if f.Name == name {
			return string(f.Data), true
		}
	}
	return "", false
}

// WriteFiles writes the case's sections, except those named in skip, as
// files under dir, a section name being a slash-separated path relative to
// dir. It fails the test on a name that would leave dir.
func (c Case) WriteFiles(t testing.TB, dir string, skip ...string) {
	t.Helper()
	for _, f := range c.Archive.Files {
		if contains(skip, f.Name) {
			continue
		}
		if !filepath.IsLocal(filepath.FromSlash(f.Name)) {
			t.Fatalf("golden: %s: section %q is not a path inside the case's directory", c.Path, f.Name)
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatalf("golden: %v", err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatalf("golden: %v", err)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Check compares got with the body of section in the txtar archive at path
// (empty if the archive lacks it) and reports a difference as a test error
// with a diff. Under -update it instead writes got into the archive, keeping
// the rest of it byte for byte.
//
// got must be empty or end in a newline, and must hold no line that reads
// as a txtar file marker ("-- name --"): an archive cannot store anything
// else faithfully.
func Check(t testing.TB, path, section, got string) {
	t.Helper()
	check(t, path, section, got, *update)
}

func check(t testing.TB, path, section, got string, rewrite bool) {
	t.Helper()
	if err := storable(section, got); err != nil {
		t.Fatalf("golden: %s: %v", path, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden: %v", err)
	}
	if name, dup := duplicateSection(data); dup {
		t.Fatalf("golden: %s holds section %q more than once", path, name)
	}
	sp, found := findSection(data, section)
	want := ""
	if found {
		want = sp.text(data)
	}
	if want == got {
		return
	}
	if rewrite {
		var out []byte
		if found {
			out = make([]byte, 0, len(data)-(sp.end-sp.start)+len(got))
			out = append(out, data[:sp.start]...)
			if sp.start == len(data) && data[len(data)-1] != '\n' {
				// The marker line ends the file without a newline.
				out = append(out, '\n')
			}
			out = append(out, got...)
			out = append(out, data[sp.end:]...)
		} else {
			out = append(out, data...)
			if len(out) > 0 && out[len(out)-1] != '\n' {
				out = append(out, '\n')
			}
			out = append(out, "-- "+section+" --\n"+got...)
		}
		if sp, ok := findSection(out, section); !ok || sp.text(out) != got {
			t.Fatalf("golden: %s: section %q cannot be rewritten to hold the output", path, section)
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatalf("golden: updating %s: %v", path, err)
		}
		return
	}
	if !found {
		t.Errorf("%s has no %q section, so it expects no output (run the test with -update to write it); got (-want +got):\n%s",
			path, section, diff(want, got))
		return
	}
	t.Errorf("%s: section %q differs (-want +got):\n%s", path, section, diff(want, got))
}

// storable reports why got cannot be the body of a txtar section.
func storable(section, got string) error {
	if section == "" || strings.TrimSpace(section) != section || strings.ContainsAny(section, "\r\n") {
		return fmt.Errorf("section name %q is not a valid txtar file name", section)
	}
	if got != "" && !strings.HasSuffix(got, "\n") {
		return fmt.Errorf("output for section %q does not end in a newline, which a txtar archive cannot store; got:\n%q", section, got)
	}
	if _, files := scan([]byte(got)); len(files) > 0 {
		return fmt.Errorf("output for section %q holds the line %q, which a txtar archive would read as a file marker", section, markerLine([]byte(got), files[0]))
	}
	return nil
}

// CheckFile compares got with the contents of the file at path and reports
// a difference as a test error with a diff. Under -update it instead writes
// got to the file (creating it and its directory if needed) when they
// differ.
func CheckFile(t testing.TB, path string, got []byte) {
	t.Helper()
	checkFile(t, path, got, *update)
}

func checkFile(t testing.TB, path string, got []byte, rewrite bool) {
	t.Helper()
	want, err := os.ReadFile(path)
	if rewrite {
		if err == nil && string(want) == string(got) {
			return
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("golden: %v", err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("golden: updating %s: %v", path, err)
		}
		return
	}
	if errors.Is(err, os.ErrNotExist) {
		t.Fatalf("golden: %s does not exist; run the test with -update to write it", path)
	}
	if err != nil {
		t.Fatalf("golden: %v", err)
	}
	if string(want) != string(got) {
		t.Errorf("output differs from %s (-want +got):\n%s", path, diff(string(want), string(got)))
	}
}

// diff shows how got differs from want, a line at a time.
func diff(want, got string) string {
	return cmp.Diff(lines(want), lines(got))
}

// lines splits s after each newline.
func lines(s string) []string {
	l := strings.SplitAfter(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}
