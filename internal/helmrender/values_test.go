package helmrender_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/strata-dev/strata/internal/document/documenttest"
	"github.com/strata-dev/strata/internal/document/yamljson"
	"github.com/strata-dev/strata/internal/helmrender"
)

// TestLoadValuesMatchesHelm: LoadValuesFast gives what loader.LoadValues
// gives, value for value and type for type, or leaves the text to it.
func TestLoadValuesMatchesHelm(t *testing.T) {
	for i, text := range documenttest.AllYAMLCases() {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkLoadValues(t, []byte(text)) })
	}
}

// checkLoadValues compares the fast path with Helm's. Where the fast path
// declines, LoadValues calls loader.LoadValues itself: its result is
// Helm's by construction (and may not even be deterministic: Helm keeps
// one of the keys 1 and "1" depending on map iteration order).
func checkLoadValues(t *testing.T, data []byte) {
	t.Helper()
	orig := bytes.Clone(data)
	want, wantErr := loader.LoadValues(bytes.NewReader(data))
	got, gotErr := helmrender.LoadValuesFast(data)
	if !bytes.Equal(data, orig) {
		t.Fatalf("LoadValuesFast(%q) changed its input", orig)
	}
	switch {
	case gotErr != nil && gotErr != yamljson.ErrNotFast:
		t.Fatalf("LoadValuesFast(%q) error = %v, want yamljson.ErrNotFast", data, gotErr)
	case gotErr != nil:
		return
	case wantErr != nil:
		t.Fatalf("LoadValuesFast(%q) read it; Helm fails: %v", data, wantErr)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("LoadValuesFast(%q) differs from loader.LoadValues (-helm +fast):\n%s", data, diff)
	}
}

// TestLoadValuesFastPathTaken guards the point of the fast path: a plain
// values file, of one document or several, does not go the reference way.
func TestLoadValuesFastPathTaken(t *testing.T) {
	values := "image:\n  repository: nginx\n  tag: \"1.27\"\nreplicas: 3\nratio: 0.5\nenabled: yes\nlist: [a, {b: c}]\n"
	for _, text := range []string{values, "a: 1\n---\nb: 2\n---\na: 3", string(documenttest.BenchValues())} {
		if _, err := helmrender.LoadValuesFast([]byte(text)); err != nil {
			t.Errorf("LoadValuesFast(%q) = %v, want the fast path", text, err)
		}
	}
}

// FuzzLoadValues holds LoadValuesFast to loader.LoadValues on any text.
func FuzzLoadValues(f *testing.F) {
	for _, c := range documenttest.AllYAMLCases() {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 || strings.Count(string(data), "*") > 16 {
			return // aliases multiply the work; both sides bound them alike
		}
		checkLoadValues(t, data)
	})
}

// BenchmarkLoadValues reads a values.yaml with the fast path alone and
// with Helm's loader.LoadValues.
func BenchmarkLoadValues(b *testing.B) {
	data := documenttest.BenchValues()
	if _, err := helmrender.LoadValuesFast(data); err != nil {
		b.Fatalf("the benchmark's values leave the fast path: %v", err)
	}
	b.Run("reference=false", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := helmrender.LoadValues(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference=true", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := loader.LoadValues(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
