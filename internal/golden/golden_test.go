package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

// fakeTB records what a helper reports instead of failing the real test.
// Fatal stops the helper's goroutine, as testing.T does.
type fakeTB struct {
	testing.TB
	errors []string
	fatal  bool
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fail()   { f.errors = append(f.errors, "Fail") }
func (f *fakeTB) Error(args ...any) {
	f.errors = append(f.errors, fmt.Sprint(args...))
}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeTB) FailNow() {
	f.fatal = true
	runtime.Goexit()
}
func (f *fakeTB) Fatal(args ...any) {
	f.Error(args...)
	f.FailNow()
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	f.FailNow()
}

// report runs fn with a fakeTB and returns what it reported.
func report(t *testing.T, fn func(tb testing.TB)) *fakeTB {
	t.Helper()
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	return f
}

func writeTemp(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// archive is a golden file whose sections cover txtar's corners: a comment
// without sections in it, a marker with extra spaces, a CRLF marker line, an
// empty section and a final section without a final newline.
const archive = "comment line\n-- not a marker\n" +
	"-- in --\ninput\n" +
	"--   spaced   --\nkept\n" +
	"-- crlf --\r\nbody\r\n" +
	"-- empty --\n" +
	"-- want --\nold\nlines\n" +
	"-- last --\nno newline"

func TestCheck(t *testing.T) {
	tests := []struct {
		name, section, got string
		wantErr            string // "" if Check must pass
		wantFatal          bool
	}{
		{name: "equal", section: "want", got: "old\nlines\n"},
		{name: "spaced marker", section: "spaced", got: "kept\n"},
		{name: "crlf marker", section: "crlf", got: "body\r\n"},
		{name: "empty section", section: "empty", got: ""},
		{name: "final newline implied", section: "last", got: "no newline\n"},
		{name: "absent means empty", section: "stderr", got: ""},
		{name: "mismatch", section: "want", got: "new\nlines\n", wantErr: `section "want" differs (-want +got):`},
		{name: "empty expected", section: "empty", got: "x\n", wantErr: `section "empty" differs`},
		{name: "output expected empty", section: "want", got: "", wantErr: `section "want" differs`},
		{name: "absent section", section: "stderr", got: "oops\n", wantErr: `has no "stderr" section, so it expects no output (run the test with -update to write it)`},
		{name: "no final newline", section: "want", got: "old", wantErr: `does not end in a newline`, wantFatal: true},
		{name: "marker in output", section: "want", got: "a\n-- b --\n", wantErr: `holds the line "-- b --", which a txtar archive would read as a file marker`, wantFatal: true},
		{name: "bad section name", section: " want", got: "", wantErr: `section name " want" is not a valid txtar file name`, wantFatal: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, "case.txtar", archive)
			f := report(t, func(tb testing.TB) { check(tb, path, tc.section, tc.got, false) })
			if tc.wantErr == "" {
				if len(f.errors) > 0 {
					t.Fatalf("check(%q, %q) reported %q, want no error", tc.section, tc.got, f.errors)
				}
			} else {
				if len(f.errors) != 1 || !strings.Contains(f.errors[0], tc.wantErr) {
					t.Fatalf("check(%q, %q) reported %q, want one error containing %q", tc.section, tc.got, f.errors, tc.wantErr)
				}
				if f.fatal != tc.wantFatal {
					t.Errorf("check(%q, %q): fatal = %v, want %v", tc.section, tc.got, f.fatal, tc.wantFatal)
				}
			}
			if got := readFile(t, path); got != archive {
				t.Errorf("check without -update changed the file:\n%q", got)
			}
		})
	}
}

// TestCheckMismatchDiff: the error shows the lines that differ.
func TestCheckMismatchDiff(t *testing.T) {
	path := writeTemp(t, "case.txtar", "-- want --\na\nb\nc\nd\ne\n")
	f := report(t, func(tb testing.TB) { Check(tb, path, "want", "a\nB\nc\nd\ne\n") })
	if len(f.errors) != 1 {
		t.Fatalf("Check reported %q, want one error", f.errors)
	}
	msg := f.errors[0]
	if !strings.Contains(msg, path) {
		t.Errorf("Check error\n%s\ndoes not name %s", msg, path)
	}
	// go-cmp varies its spacing on purpose; look for the changed lines only.
	removed, added := false, false
	for _, line := range strings.Split(msg, "\n") {
		removed = removed || strings.HasPrefix(line, "-") && strings.Contains(line, `"b\n"`)
		added = added || strings.HasPrefix(line, "+") && strings.Contains(line, `"B\n"`)
		if strings.Contains(line, `"c\n"`) && !strings.HasPrefix(strings.TrimSpace(line), `"c`) {
			t.Errorf("Check error marks the unchanged line c: %q", line)
		}
	}
	if !removed || !added {
		t.Errorf("Check error\n%s\ndoes not show line b replaced by B", msg)
	}
}

func TestCheckErrors(t *testing.T) {
	dir := t.TempDir()
	dup := filepath.Join(dir, "dup.txtar")
	if err := os.WriteFile(dup, []byte("-- want --\na\n-- want --\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, wantErr string
	}{
		{"missing file", filepath.Join(dir, "missing.txtar"), "no such file"},
		{"section twice", dup, `holds section "want" more than once`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, rewrite := range []bool{false, true} {
				f := report(t, func(tb testing.TB) { check(tb, tc.path, "want", "a\n", rewrite) })
				if !f.fatal || len(f.errors) != 1 || !strings.Contains(f.errors[0], tc.wantErr) {
					t.Errorf("check(rewrite=%v) reported %q (fatal %v), want a fatal error containing %q", rewrite, f.errors, f.fatal, tc.wantErr)
				}
			}
		})
	}
}

func TestCheckUpdate(t *testing.T) {
	tests := []struct {
		name, in, section, got, want string
	}{
		{
			name:    "replace keeps every other byte",
			in:      archive,
			section: "want",
			got:     "new\n",
			want:    strings.Replace(archive, "-- want --\nold\nlines\n", "-- want --\nnew\n", 1),
		},
		{
			name:    "equal leaves a file without final newline alone",
			in:      archive,
			section: "last",
			got:     "no newline\n",
			want:    archive,
		},
		{
			name:    "replace the final section",
			in:      archive,
			section: "last",
			got:     "one\ntwo\n",
			want:    strings.TrimSuffix(archive, "no newline") + "one\ntwo\n",
		},
		{
			name:    "fill an empty section",
			in:      archive,
			section: "empty",
			got:     "now\n",
			want:    strings.Replace(archive, "-- empty --\n", "-- empty --\nnow\n", 1),
		},
		{
			name:    "empty a section, keeping it",
			in:      archive,
			section: "in",
			got:     "",
			want:    strings.Replace(archive, "-- in --\ninput\n", "-- in --\n", 1),
		},
		{
			name:    "CRLF marker line kept",
			in:      archive,
			section: "crlf",
			got:     "x\n",
			want:    strings.Replace(archive, "-- crlf --\r\nbody\r\n", "-- crlf --\r\nx\n", 1),
		},
		{
			name:    "append a missing section",
			in:      "-- in --\na\n",
			section: "want",
			got:     "b\n",
			want:    "-- in --\na\n-- want --\nb\n",
		},
		{
			name:    "append after a final line without newline",
			in:      archive,
			section: "stdout",
			got:     "out\n",
			want:    archive + "\n-- stdout --\nout\n",
		},
		{
			name:    "append to an empty file",
			in:      "",
			section: "want",
			got:     "b\n",
			want:    "-- want --\nb\n",
		},
		{
			name:    "absent and empty: nothing to write",
			in:      "-- in --\na\n",
			section: "stderr",
			got:     "",
			want:    "-- in --\na\n",
		},
		{
			name:    "marker line ends the file",
			in:      "-- in --\na\n-- want --",
			section: "want",
			got:     "b\n",
			want:    "-- in --\na\n-- want --\nb\n",
		},
		{
			name:    "comment only",
			in:      "just a comment",
			section: "want",
			got:     "b\n",
			want:    "just a comment\n-- want --\nb\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeTemp(t, "case.txtar", tc.in)
			f := report(t, func(tb testing.TB) { check(tb, path, tc.section, tc.got, true) })
			if len(f.errors) > 0 {
				t.Fatalf("check with -update reported %q", f.errors)
			}
			if diff := cmp.Diff(tc.want, readFile(t, path)); diff != "" {
				t.Errorf("archive after update differs (-want +got):\n%s", diff)
			}
			// What was written now passes without -update.
			f = report(t, func(tb testing.TB) { check(tb, path, tc.section, tc.got, false) })
			if len(f.errors) > 0 {
				t.Errorf("check after update reported %q", f.errors)
			}
		})
	}
}

// TestCheckUpdateRefusesUnstorable: -update does not write output the
// archive cannot hold.
func TestCheckUpdateRefusesUnstorable(t *testing.T) {
	for _, got := range []string{"no newline", "a\n-- b --\n", "-- b --\n"} {
		path := writeTemp(t, "case.txtar", archive)
		f := report(t, func(tb testing.TB) { check(tb, path, "want", got, true) })
		if !f.fatal {
			t.Errorf("check(%q) with -update reported %q, want a fatal error", got, f.errors)
		}
		if readFile(t, path) != archive {
			t.Errorf("check(%q) with -update changed the file", got)
		}
	}
}

func TestCheckFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "expected.yaml")
	if err := os.WriteFile(path, []byte("a: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, got string
		rewrite         bool
		wantErr         string
		wantFile        string
	}{
		{name: "equal", path: path, got: "a: 1\n", wantFile: "a: 1\n"},
		{name: "differs", path: path, got: "a: 2\n", wantErr: "output differs from " + path + " (-want +got):", wantFile: "a: 1\n"},
		{name: "missing", path: filepath.Join(dir, "none.yaml"), got: "x\n", wantErr: "run the test with -update to write it"},
		{name: "update", path: path, got: "a: 2", rewrite: true, wantFile: "a: 2"},
		{name: "update creates", path: filepath.Join(dir, "new", "out.json"), got: "{}\n", rewrite: true, wantFile: "{}\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := report(t, func(tb testing.TB) { checkFile(tb, tc.path, []byte(tc.got), tc.rewrite) })
			if tc.wantErr == "" && len(f.errors) > 0 {
				t.Errorf("checkFile reported %q, want no error", f.errors)
			}
			if tc.wantErr != "" && (len(f.errors) != 1 || !strings.Contains(f.errors[0], tc.wantErr)) {
				t.Errorf("checkFile reported %q, want one error containing %q", f.errors, tc.wantErr)
			}
			if tc.wantFile != "" {
				if got := readFile(t, tc.path); got != tc.wantFile {
					t.Errorf("%s holds %q, want %q", tc.path, got, tc.wantFile)
				}
			}
		})
	}
}

func TestCases(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"b.txtar":   "comment\n-- in --\nb\n",
		"a.txtar":   "-- in --\na\n-- want --\n",
		"other.txt": "-- in --\nx\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	cases := Cases(t, "*.txtar")
	var names []string
	for _, c := range cases {
		names = append(names, c.Name)
		if c.Path != filepath.Join(dir, c.Name+".txtar") {
			t.Errorf("case %s: Path = %s, want it absolute", c.Name, c.Path)
		}
	}
	if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" {
		t.Fatalf("Cases names differ (-want +got):\n%s", diff)
	}
	if s, ok := cases[0].Section("in"); !ok || s != "a\n" {
		t.Errorf(`Section("in") = %q, %v; want "a\n", true`, s, ok)
	}
	if s, ok := cases[0].Section("want"); !ok || s != "" {
		t.Errorf(`Section("want") = %q, %v; want "", true`, s, ok)
	}
	if _, ok := cases[1].Section("want"); ok {
		t.Errorf(`Section("want") of b found a section b lacks`)
	}
	if got := string(cases[1].Archive.Comment); got != "comment\n" {
		t.Errorf("Archive.Comment = %q, want %q", got, "comment\n")
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"one.txtar", "two.txtar"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("-- in --\n"+name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var ran []string
	Run(t, filepath.Join(dir, "*.txtar"), func(t *testing.T, c Case) {
		in, _ := c.Section("in")
		ran = append(ran, t.Name()+" "+in)
	})
	want := []string{"TestRun/one one.txtar\n", "TestRun/two two.txtar\n"}
	if diff := cmp.Diff(want, ran); diff != "" {
		t.Errorf("Run subtests differ (-want +got):\n%s", diff)
	}
}

func TestCasesErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dup.txtar"), []byte("-- a --\n-- a --\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, glob, wantErr string }{
		{"no match", filepath.Join(dir, "*.none"), "no files match"},
		{"bad pattern", filepath.Join(dir, "[.txtar"), "syntax error in pattern"},
		{"section twice", filepath.Join(dir, "*.txtar"), `holds section "a" more than once`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := report(t, func(tb testing.TB) { Cases(tb, tc.glob) })
			if !f.fatal || len(f.errors) != 1 || !strings.Contains(f.errors[0], tc.wantErr) {
				t.Errorf("Cases(%s) reported %q (fatal %v), want a fatal error containing %q", tc.glob, f.errors, f.fatal, tc.wantErr)
			}
		})
	}
}

func TestWriteFiles(t *testing.T) {
	c := Case{Path: "case.txtar", Archive: txtar.Parse([]byte("-- a.yaml --\na\n-- sub/b.yaml --\nb\n-- want --\nw\n"))}
	dir := t.TempDir()
	c.WriteFiles(t, dir, "want")
	for name, want := range map[string]string{"a.yaml": "a\n", "sub/b.yaml": "b\n"} {
		if got := readFile(t, filepath.Join(dir, filepath.FromSlash(name))); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "want")); err == nil {
		t.Errorf("WriteFiles wrote the skipped section want")
	}

	for _, name := range []string{"../escape", "/abs", "a/../../escape"} {
		c := Case{Path: "case.txtar", Archive: txtar.Parse([]byte("-- " + name + " --\nx\n"))}
		f := report(t, func(tb testing.TB) { c.WriteFiles(tb, filepath.Join(dir, "inner"), "want") })
		if !f.fatal || len(f.errors) != 1 || !strings.Contains(f.errors[0], "is not a path inside the case's directory") {
			t.Errorf("WriteFiles with section %q reported %q, want a fatal error", name, f.errors)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "escape")); err == nil {
		t.Errorf("WriteFiles wrote outside its directory")
	}
}

// scanCases are archives whose parsing has corners; FuzzScan starts from
// them.
var scanCases = []string{
	"",
	"comment only",
	"comment\n",
	archive,
	"-- a --",
	"-- a --\n",
	"-- a --\r\nx\r\n-- b --\r\n",
	"--  --\n-- a --\nx",
	"-- a--\n-- a --\n",
	"x\n--a --\n-- a --\n-- b --\n-- c --\nc",
	"-- --\n",
	"-- \t --\nx\n",
	"---- --\n",
	"\n-- a --\n\n\n-- b --",
	"-- a --\r",
}

// TestScanMatchesTxtar: scan reads archives as txtar.Parse does.
func TestScanMatchesTxtar(t *testing.T) {
	for _, data := range scanCases {
		if err := scanAgrees([]byte(data)); err != nil {
			t.Errorf("scan(%q): %v", data, err)
		}
	}
}

func FuzzScan(f *testing.F) {
	for _, data := range scanCases {
		f.Add([]byte(data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := scanAgrees(data); err != nil {
			t.Fatalf("scan(%q): %v", data, err)
		}
	})
}

// scanAgrees reports how scan and txtar.Parse read data differently.
func scanAgrees(data []byte) error {
	ar := txtar.Parse(data)
	comment, sections := scan(data)
	if got := comment.text(data); got != string(ar.Comment) {
		return fmt.Errorf("comment %q, txtar %q", got, ar.Comment)
	}
	if len(sections) != len(ar.Files) {
		return fmt.Errorf("%d sections, txtar %d", len(sections), len(ar.Files))
	}
	prev := comment.end
	for i, s := range sections {
		f := ar.Files[i]
		if s.name != f.Name || s.text(data) != string(f.Data) {
			return fmt.Errorf("section %d is %q %q, txtar %q %q", i, s.name, s.text(data), f.Name, f.Data)
		}
		if s.marker != prev || s.marker > s.start || s.start > s.end {
			return fmt.Errorf("section %d spans %d..%d..%d after %d", i, s.marker, s.start, s.end, prev)
		}
		if m := markerLine(data, s); !strings.HasPrefix(m, "-- ") || !strings.HasSuffix(m, " --") {
			return fmt.Errorf("section %d marker line %q", i, m)
		}
		prev = s.end
	}
	if prev != len(data) {
		return fmt.Errorf("spans end at %d of %d bytes", prev, len(data))
	}
	return nil
}
