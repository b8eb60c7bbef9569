package helmplugin

import (
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
)

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

func TestSplitManifestsMatchesHelm(t *testing.T) {
	for _, s := range splitCases {
		if diff := cmp.Diff(helmSplit(s), splitManifests(s)); diff != "" {
			t.Errorf("splitManifests(%q) differs from Helm's (-helm +strata):\n%s", s, diff)
		}
	}
}

// FuzzSplitManifests holds splitManifests to releaseutil.SplitManifests.
func FuzzSplitManifests(f *testing.F) {
	for _, s := range splitCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if want, got := helmSplit(s), splitManifests(s); !slices.Equal(want, got) {
			t.Errorf("splitManifests(%q) = %q, Helm's %q", s, got, want)
		}
	})
}
