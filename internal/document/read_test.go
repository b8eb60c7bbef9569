package document_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/document"
)

func TestReadAll(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		max     int64
		want    string
		wantErr string // "" for none
	}{
		{"empty", "", 4, "", ""},
		{"under the limit", "abc", 4, "abc", ""},
		{"at the limit", "abcd", 4, "abcd", ""},
		{"one byte over", "abcde", 4, "abcd", "in.yaml: larger than the limit of 4 bytes"},
		{"far over", strings.Repeat("x", 1000), 10, strings.Repeat("x", 10), "in.yaml: larger than the limit of 10 bytes"},
		{"zero: the default limit", strings.Repeat("x", 1000), 0, strings.Repeat("x", 1000), ""},
		{"negative: no limit", strings.Repeat("x", 1000), -1, strings.Repeat("x", 1000), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := document.ReadAll(strings.NewReader(tc.in), tc.max, "in.yaml")
			if string(got) != tc.want {
				t.Errorf("ReadAll(%d bytes, %d) = %d bytes, want %d", len(tc.in), tc.max, len(got), len(tc.want))
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("ReadAll(%d bytes, %d) error: %v", len(tc.in), tc.max, err)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("ReadAll(%d bytes, %d) error = %v, want %q", len(tc.in), tc.max, err, tc.wantErr)
			}
			if !errors.Is(err, document.ErrTooLarge) {
				t.Errorf("errors.Is(%v, ErrTooLarge) = false", err)
			}
			var le *document.LoadError
			if !errors.As(err, &le) || le.Source != "in.yaml" {
				t.Errorf("error %v is not a *LoadError naming in.yaml", err)
			}
		})
	}
}

// countingReader counts the bytes read from it.
type countingReader struct{ n int64 }

func (r *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	r.n += int64(len(p))
	return len(p), nil
}

// TestReadAllStopsAtTheLimit: an endless input is not read past the limit.
func TestReadAllStopsAtTheLimit(t *testing.T) {
	r := &countingReader{}
	if _, err := document.ReadAll(r, 100, "endless"); !errors.Is(err, document.ErrTooLarge) {
		t.Fatalf("ReadAll(endless) error = %v, want ErrTooLarge", err)
	}
	if r.n > 101+512 {
		t.Errorf("ReadAll(endless, 100) read %d bytes", r.n)
	}
}

// TestReadAllDefault: a max of 0 is the default limit, not "none".
func TestReadAllDefault(t *testing.T) {
	r := &countingReader{}
	_, err := document.ReadAll(r, 0, "endless")
	if want := fmt.Sprintf("endless: larger than the limit of %d bytes", document.DefaultLimits().MaxBytes); err == nil || err.Error() != want {
		t.Fatalf("ReadAll(endless, 0) error = %v, want %q", err, want)
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.yaml")
	if err := os.WriteFile(small, []byte("a: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := document.ReadFile(small, 5); err != nil || string(got) != "a: 1\n" {
		t.Errorf("ReadFile(small, 5) = %q, %v", got, err)
	}
	_, err := document.ReadFile(small, 4)
	if want := small + ": larger than the limit of 4 bytes"; err == nil || err.Error() != want {
		t.Errorf("ReadFile(small, 4) error = %v, want %q", err, want)
	}
	if !errors.Is(err, document.ErrTooLarge) {
		t.Errorf("errors.Is(%v, ErrTooLarge) = false", err)
	}
	if _, err := document.ReadFile(filepath.Join(dir, "missing"), 4); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing) error = %v, want fs.ErrNotExist", err)
	}
}
