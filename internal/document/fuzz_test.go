package document_test

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/document/documenttest"
)

var (
	fuzzDocs = documenttest.FuzzDocs
	canon    = documenttest.Canon
)

// FuzzParse: any input parses or fails cleanly; what parses encodes to YAML
// and JSON that parse back to the same tree.
func FuzzParse(f *testing.F) {
	for _, d := range fuzzDocs {
		f.Add([]byte(d))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, err := document.Parse(data, "fuzz.yaml")
		if err != nil {
			return
		}
		for _, format := range []document.Format{document.YAML, document.JSON} {
			var b bytes.Buffer
			if err := document.Encode(&b, tree, format); err != nil {
				if format == document.JSON {
					continue // NaN and infinities have no JSON form
				}
				t.Fatalf("Encode(%s): %v", format, err)
			}
			back, err := document.Parse(b.Bytes(), "again")
			if err != nil {
				t.Fatalf("re-parsing %s output %q: %v", format, b.String(), err)
			}
			if diff := cmp.Diff(canon(tree), canon(back)); diff != "" {
				t.Fatalf("%s round trip mismatch (-in +out):\n%s\noutput:\n%s", format, diff, b.String())
			}
		}
	})
}
