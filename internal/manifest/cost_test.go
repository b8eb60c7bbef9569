package manifest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/manifest"
)

// mapOf is a ConfigMap of n small values, in YAML.
func mapOf(n int) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n")
	for i := range n {
		fmt.Fprintf(&b, "  k%d: \"%d\"\n", i, i)
	}
	return b.String()
}

func TestEstimateMemory(t *testing.T) {
	many := strings.Repeat("---\n"+mapOf(100), 100) // 100 documents of 100 values
	one := mapOf(10_000)
	long := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: " + strings.Repeat("x", 1<<20) + "\n"
	jsonList := `{"apiVersion":"v1","kind":"List","items":[` + strings.Repeat(`{"apiVersion":"v1","kind":"X"},`, 1000) + `{"apiVersion":"v1","kind":"X"}]}`
	flow := "{apiVersion: v1, kind: X}" // starts like JSON, is YAML
	tests := []struct {
		name     string
		stream   string
		min, max int64
	}{
		{"empty", "", 0, 0},
		// The largest document's nodes, not all of the stream's.
		{"many documents", many, 100 * manifest.YAMLNodeCost, 2*110*manifest.YAMLNodeCost + int64(len(many))*4},
		{"one large map", one, 10_000 * manifest.YAMLNodeCost, 10_010*manifest.YAMLNodeCost + int64(len(one))*4},
		// A long string costs its bytes, not nodes.
		{"long string", long, int64(len(long)), int64(len(long)) * 4},
		{"json", jsonList, int64(len(jsonList)) * manifest.JSONByteCost, int64(len(jsonList)) * (manifest.JSONByteCost + 4)},
		{"flow yaml", flow, 3 * manifest.YAMLNodeCost, 20 * manifest.YAMLNodeCost},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := manifest.EstimateMemory([]byte(tc.stream))
			if got < tc.min || got > tc.max {
				t.Errorf("EstimateMemory(%s, %d bytes) = %d, want %d to %d", tc.name, len(tc.stream), got, tc.min, tc.max)
			}
		})
	}
}

// manifestsOf is an output of n ConfigMaps of 20 values each, as a
// plugin prints it.
func manifestsOf(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n", i)
		for k := range 20 {
			fmt.Fprintf(&b, "  key%d: value %d\n", k, k)
		}
	}
	return []byte(b.String())
}

// BenchmarkEstimateMemory is what the sidecar's memory budget costs a
// request before it reads the output: 2,000 ConfigMaps (1 MB).
func BenchmarkEstimateMemory(b *testing.B) {
	out := manifestsOf(2000)
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		manifest.EstimateMemory(out)
	}
}

// BenchmarkEach is the reading that follows it, for scale.
func BenchmarkEach(b *testing.B) {
	out := manifestsOf(2000)
	b.SetBytes(int64(len(out)))
	for b.Loop() {
		if err := manifest.Each(out, "out", manifest.Options{YAML11: true, LastKeyWins: true}, func(manifest.Document) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
