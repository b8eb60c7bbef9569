package module

import (
	"errors"
	"testing"

	"github.com/strata-dev/strata/internal/document"
)

// FuzzValuesFile reads a values.yaml as discovery does: the file, then the
// module's section, its enabled flag and the global section. Every error
// must be a *document.LoadError (file and line), never a panic.
func FuzzValuesFile(f *testing.F) {
	for _, s := range []string{
		"global:\n  a: 1\nfoo:\n  x: 1\nfooEnabled: true\n",
		"foo: [1]\n",
		"fooEnabled: \"yes\"\n",
		"global: 3\n",
		"foo:\n  a: &x [1, 2]\n  b: *x\n",
		"{\"foo\": {\"x\": 1}, \"fooEnabled\": false}",
		"---\nfoo: {a: 1}\n---\nfoo: {b: 2}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, pos, err := parseValues(data, "values.yaml", 1<<16)
		check := func(err error) {
			var le *document.LoadError
			if err != nil && !errors.As(err, &le) {
				t.Fatalf("error %v (%T) is not a *document.LoadError", err, err)
			}
		}
		check(err)
		if err != nil {
			return
		}
		_, _, err = section(tree, pos, "foo", "values.yaml")
		check(err)
		_, err = flag(tree, pos, "fooEnabled", "values.yaml")
		check(err)
		if g, ok := tree[GlobalKey]; ok {
			if _, isMap := g.(map[string]any); !isMap && g != nil {
				check(valuesFileError("values.yaml", pos.Key(GlobalKey), "global must be a map"))
			}
		}
	})
}
