package document_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
)

// TestLoaderLastKeyWins: with LastKeyWins a repeated key takes its last
// value, in YAML and JSON, nested maps too; without, it is an error.
func TestLoaderLastKeyWins(t *testing.T) {
	tests := []struct {
		name string
		json bool
		in   string
		want any
	}{
		{name: "yaml", in: "a: 1\nb: {c: 1, c: 2}\na: 3\n", want: map[string]any{"a": int64(3), "b": map[string]any{"c": int64(2)}}},
		{name: "json", json: true, in: `{"a": 1, "b": {"c": 1, "c": [2]}, "a": 3}`, want: map[string]any{"a": int64(3), "b": map[string]any{"c": []any{int64(2)}}}},
		{name: "a map replaced by a scalar", in: "a: {x: 1}\na: 2\n", want: map[string]any{"a": int64(2)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := document.Loader{JSON: tc.json, LastKeyWins: true, Positions: true}.ParseAny([]byte(tc.in), "in")
			if err != nil {
				t.Fatalf("ParseAny() error: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseAny() differs (-want +got):\n%s", diff)
			}
			_, _, err = document.Loader{JSON: tc.json}.ParseAny([]byte(tc.in), "in")
			if !errors.Is(err, document.ErrDuplicateKey) {
				t.Errorf("ParseAny() without LastKeyWins error = %v, want ErrDuplicateKey", err)
			}
		})
	}
}
