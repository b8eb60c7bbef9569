package hookexec

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// FuzzParseHelperArgs: the helper's argument parser never panics, what it
// accepts has only clean absolute directories and an absolute path, and
// it reads back what encode writes of it.
func FuzzParseHelperArgs(f *testing.F) {
	f.Add("-w\x00/ws/repo\x00-w\x00/ws/tmp\x00-h\x00/store\x00--\x00/bin/sh\x00sh\x00-c\x00true")
	f.Add("--\x00/bin/true\x00true")
	f.Add("-w\x00rel\x00--\x00/x\x00x")
	f.Add("-x")
	f.Fuzz(func(t *testing.T, joined string) {
		args := splitNUL(joined)
		h, err := parseHelperArgs(args)
		if err != nil {
			return
		}
		for _, d := range append(slices.Clone(h.writable), h.hidden...) {
			if !filepath.IsAbs(d) || filepath.Clean(d) != d {
				t.Fatalf("parseHelperArgs(%q) accepted directory %q", args, d)
			}
		}
		if !filepath.IsAbs(h.path) || len(h.argv) == 0 {
			t.Fatalf("parseHelperArgs(%q) accepted command %q %q", args, h.path, h.argv)
		}
		h2, err := parseHelperArgs(h.encode())
		if err != nil {
			t.Fatalf("parseHelperArgs(encode(%+v)) = %v", h, err)
		}
		if !reflect.DeepEqual(h, h2) {
			t.Fatalf("parseHelperArgs(encode(%+v)) = %+v", h, h2)
		}
	})
}

func splitNUL(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
