package manifest

import (
	"bufio"
	"errors"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/strata-dev/strata/internal/document"
)

// readerCases are streams for the corners of Kubernetes' reader:
// separators at the start, in a row, with comments or text after them,
// indented (not separators), "----", CRLF line ends, no line break at the
// end, blank documents, block scalars holding "---"-like lines, and
// helm template's output (a "# Source:" comment heading every document).
var readerCases = []string{
	"", "\n", "---", "---\n", "--- \n", "---\t# c\n", "---x\nkind: A\n", "----\nkind: A\n",
	"kind: A\n", "kind: A", "kind: A\n---\nkind: B\n", "---\nkind: A\n---\n---\nkind: B\n---\n",
	"  ---\nkind: A\n", "kind: A\n  ---\nkind: B\n", "kind: A\n--- # c\nkind: B\n", "kind: A\n--- x\nkind: B\n",
	"kind: A\r\n---\r\nkind: B\r\n", "kind: A\n---\n\n\n   \nkind: B\n", "a: |\n  x\n  ---\n  y\n---\nb: 1\n",
	"------\n", "--- ---\n---", "x\n---", "x\n--", "\n---\n\n---\n \t\n---\n",
	"---\n# Source: c/crds/a.yaml\nkind: A\n---\n# Source: c/templates/b.yaml\nkind: B\n\n---\n# Source: c/templates/h.yaml\nkind: C\ndata: |+\n  x\n\n\n",
}

// readerSplit is what Kubernetes' YAML reader gives.
func readerSplit(stream string) ([]string, error) {
	var docs []string
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(stream)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, string(doc))
	}
}

func checkSplitReader(t *testing.T, stream string) {
	t.Helper()
	want, wantErr := readerSplit(stream)
	for _, codecs := range []document.Codecs{document.FastCodecs, document.ReferenceCodecs} {
		got, err := SplitReader(stream, codecs)
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("SplitReader(%q, %v): error %v, the reader's %v", stream, codecs, err, wantErr)
		}
		if !slices.Equal(got, want) {
			t.Errorf("SplitReader(%q, %v) = %q, the reader's %q", stream, codecs, got, want)
		}
	}
}

func TestSplitReaderMatchesReader(t *testing.T) {
	for _, s := range readerCases {
		checkSplitReader(t, s)
		checkSplitReader(t, s+"\n")
	}
	// helm's output as printed takes the fast way.
	if _, ok := splitReaderFast(readerCases[len(readerCases)-1]); !ok {
		t.Error("splitReaderFast declined a plain stream")
	}
}

// FuzzSplitReader holds SplitReader to Kubernetes' YAML reader.
func FuzzSplitReader(f *testing.F) {
	for _, s := range readerCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkSplitReader(t, s) })
}

// splitCases are rendered files for the splitter's corners: separators at
// the start, after white space, with spaces, tabs and text after them, in
// a row, indented (not separators), "----", CRLF line ends, vertical tabs
// and Unicode white space (which Helm's trimming drops and its separator
// does not take), empty and blank documents.
var splitCases = []string{
	"", " ", "\n\n", "---", "---\n", "--- \n", "---\t\t\n", "---x\nkind: A\n", "----\nkind: A",
	"kind: A\n", "kind: A\n---\nkind: B\n", "---\nkind: A\n---\n---\nkind: B\n---\n",
	"\n\n---\nkind: A\n", "  ---\nkind: A\n", "kind: A\n  ---\nkind: B\n", "kind: A\n--- # c\nkind: B\n",
	"kind: A\r\n---\r\nkind: B\r\n", "kind: A\n---\n\n\n   \nkind: B\n", "\v\u00a0kind: A\n---\v\nkind: B\n",
	"a: |\n  x\n  ---\n  y\n---\nb: 1\n", "------\n", "--- ---\n---", "x\n---", "x\n--", "\u2028---\nkind: A",
	"kind: A\n---kind: B\n---\t kind: C", "\n---\n\n---\n \t\n---\n",
}

// helmSplit is releaseutil.SplitManifests's documents in order.
func helmSplit(s string) []string {
	m := releaseutil.SplitManifests(s)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var docs []string
	for _, k := range keys {
		docs = append(docs, m[k])
	}
	return docs
}

func TestSplitRenderedMatchesHelm(t *testing.T) {
	for _, s := range splitCases {
		if diff := cmp.Diff(helmSplit(s), SplitRendered(s)); diff != "" {
			t.Errorf("SplitRendered(%q) differs from Helm's (-helm +strata):\n%s", s, diff)
		}
	}
}

// FuzzSplitRendered holds SplitRendered to releaseutil.SplitManifests.
func FuzzSplitRendered(f *testing.F) {
	for _, s := range splitCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if want, got := helmSplit(s), SplitRendered(s); !slices.Equal(want, got) {
			t.Errorf("SplitRendered(%q) = %q, Helm's %q", s, got, want)
		}
	})
}
