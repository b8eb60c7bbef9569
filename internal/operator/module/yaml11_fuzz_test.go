package module

import (
	"reflect"
	"testing"

	"github.com/strata-dev/strata/internal/document"
)

// yaml11Bools are the plain scalars YAML 1.1 reads as booleans and YAML 1.2
// as strings.
var yaml11Bools = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
	"n": false, "N": false, "no": false, "No": false, "NO": false, "off": false, "Off": false, "OFF": false,
}

// FuzzYAML11Booleans: on any values.yaml the loader accepts, reading it as
// addon-operator does (parseValues) changes nothing but strings of
// yaml11Bools into their booleans.
func FuzzYAML11Booleans(f *testing.F) {
	for _, s := range []string{"a: yes\n", "a: [on, &x off, *x]\n", "a: {b: n}\n<<: {c: y}\n", "a: |\n  yes\n", "a: 'no'\nb: No\n", "a: yes\n---\nb: no\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		read, _, err := document.Loader{Limits: document.Limits{MaxBytes: 1 << 16}}.Parse(data, "values.yaml")
		if err != nil {
			return
		}
		before := read
		read, _, err = parseValues(data, "values.yaml", 1<<16)
		if err != nil {
			t.Fatalf("%q: parseValues: %v, the plain loader reads it", data, err)
		}
		var same func(a, b any) bool
		same = func(a, b any) bool {
			switch x := a.(type) {
			case map[string]any:
				y, ok := b.(map[string]any)
				if !ok || len(x) != len(y) {
					return false
				}
				for k, v := range x {
					if w, ok := y[k]; !ok || !same(v, w) {
						return false
					}
				}
				return true
			case []any:
				y, ok := b.([]any)
				if !ok || len(x) != len(y) {
					return false
				}
				for i := range x {
					if !same(x[i], y[i]) {
						return false
					}
				}
				return true
			case float64:
				if y, ok := b.(float64); ok && x != x && y != y {
					return true // NaN
				}
			case string:
				if bv, ok := b.(bool); ok {
					want, known := yaml11Bools[x]
					return known && want == bv
				}
			}
			return reflect.DeepEqual(a, b)
		}
		if before != nil && !same(before, read) {
			t.Errorf("%q: %v became %v", data, before, read)
		}
	})
}
