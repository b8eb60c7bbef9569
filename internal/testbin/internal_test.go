package testbin

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestModulePath(t *testing.T) {
	tests := []struct{ gomod, want string }{
		{"module github.com/strata-dev/strata\n\ngo 1.26\n", "github.com/strata-dev/strata"},
		{"// comment\nmodule \"example.com/x\"\n", "example.com/x"},
		{"  module   example.com/y  \r\n", "example.com/y"},
		{"go 1.26\n", ""},
		{"", ""},
	}
	for _, tc := range tests {
		if got := modulePath([]byte(tc.gomod)); got != tc.want {
			t.Errorf("modulePath(%q) = %q, want %q", tc.gomod, got, tc.want)
		}
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 8}
	for _, s := range []string{"abc", "defgh", "ijklmnopq", "r"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got, want := b.String(), "klmnopqr"; got != want {
		t.Errorf("tail = %q, want %q", got, want)
	}
}

func TestLimitedWriter(t *testing.T) {
	var buf bytes.Buffer
	w := &limitedWriter{w: &buf, n: 5}
	for _, s := range []string{"abc", "defg", "hij"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if got := buf.String(); got != "abcde" {
		t.Errorf("written = %q, want %q", got, "abcde")
	}
}

func FuzzModulePath(f *testing.F) {
	f.Add("module github.com/strata-dev/strata\n")
	f.Add("module \"a\"\r\nmodule b\n")
	f.Fuzz(func(t *testing.T, gomod string) {
		got := modulePath([]byte(gomod))
		if strings.ContainsAny(got, "\n") {
			t.Errorf("modulePath(%q) = %q, spans lines", gomod, got)
		}
	})
}

// TestSweepStrata: the build directory of a test process that has ended is
// removed; a live process's (this one's) is kept.
func TestSweepStrata(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(os.TempDir(), strataDirPrefix+strconv.Itoa(done.Process.Pid))
	live := filepath.Join(os.TempDir(), strataDirPrefix+strconv.Itoa(os.Getppid()))
	for _, d := range []string{dead, live} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	sweepStrata()
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("%s of an ended process: %v, want removed", dead, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("%s of a live process: %v, want kept", live, err)
	}
}
