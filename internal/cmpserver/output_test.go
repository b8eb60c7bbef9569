package cmpserver_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/golden"
)

// outputSource names the output in the golden cases' errors.
const outputSource = "stdout of `generate`"

// TestParseManifestsGolden runs every testdata/output/*.txtar case:
//
//	-- stdout --   what the generate command printed
//	-- want --     the manifests, one a line, or "error: <message>"
//
// A case may hold its stdout in a section named "stdout.nonl" instead, for
// output without a final newline. Run with -update to rewrite want.
func TestParseManifestsGolden(t *testing.T) {
	golden.Run(t, "testdata/output/*.txtar", func(t *testing.T, c golden.Case) {
		stdout, ok := goldenStdout(c)
		if !ok {
			t.Fatal("no stdout section")
		}
		got := describeManifests(cmpserver.ParseManifests([]byte(stdout), outputSource))
		golden.Check(t, c.Path, "want", got)
	})
}

func goldenStdout(c golden.Case) (string, bool) {
	if s, ok := c.Section("stdout"); ok {
		return s, true
	}
	s, ok := c.Section("stdout.nonl")
	return strings.TrimSuffix(s, "\n"), ok
}

// describeManifests is the want section for a result of ParseManifests.
func describeManifests(manifests []string, err error) string {
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	var b strings.Builder
	for _, m := range manifests {
		b.WriteString(m)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestParseManifestsErrorKinds(t *testing.T) {
	tests := []struct {
		name, stdout string
		want         error
	}{
		{"not YAML", "Error: [\n", document.ErrSyntax},
		{"not UTF-8", "apiVersion: v1\nkind: \xff\n", document.ErrInvalidUTF8},
		{"no kind", "apiVersion: v1\n", cmpserver.ErrInvalidManifest},
		{"too many", strings.Repeat("---\n{apiVersion: v1, kind: A}\n", cmpserver.MaxManifests+1), document.ErrTooLarge},
		{"too many in a list", "apiVersion: v1\nkind: List\nitems:\n" + strings.Repeat("- {apiVersion: v1, kind: A}\n", cmpserver.MaxManifests+1), document.ErrTooLarge},
		{"alias bomb", aliasBomb(), document.ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cmpserver.ParseManifests([]byte(tc.stdout), outputSource)
			if !errors.Is(err, tc.want) {
				t.Fatalf("ParseManifests() = %d manifests, error %v; want an error matching %v", len(got), err, tc.want)
			}
			var le *document.LoadError
			if !errors.As(err, &le) || le.Source != outputSource || le.Line == 0 {
				t.Errorf("error %v is %T, want a *document.LoadError with source and line", err, err)
			}
		})
	}
}

// aliasBomb is YAML whose aliases repeat a large string far beyond the size
// of the manifests allowed.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nx0: &x0 \"" + strings.Repeat("x", 1<<16) + "\"\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "x%d: &x%d [*x%d, *x%d, *x%d, *x%d]\n", i, i, i-1, i-1, i-1, i-1)
	}
	return b.String()
}

// TestParseManifestsExactIntegers checks that integers too large for a
// float64 survive, in YAML and in JSON.
func TestParseManifestsExactIntegers(t *testing.T) {
	for _, stdout := range []string{
		"apiVersion: v1\nkind: A\nbig: 12345678901234567891\nmax: 9007199254740993\n",
		`{"apiVersion": "v1", "kind": "A", "big": 12345678901234567891, "max": 9007199254740993}`,
	} {
		got, err := cmpserver.ParseManifests([]byte(stdout), outputSource)
		if err != nil {
			t.Fatalf("ParseManifests(%q) error: %v", stdout, err)
		}
		want := []string{`{"apiVersion":"v1","big":12345678901234567891,"kind":"A","max":9007199254740993}`}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ParseManifests(%q) differs (-want +got):\n%s", stdout, diff)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(got[0]), &m); err != nil {
			t.Errorf("manifest %s is not JSON: %v", got[0], err)
		}
	}
}
