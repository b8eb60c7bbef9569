package values_test

import (
	"io"
	"log"
	"testing"

	"github.com/google/go-cmp/cmp"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/values"
)

// Differential tests of Merge against Helm's own merging (docs/values.md,
// "Merging"). Helm merges values in two ways:
//
//   - `helm -f a.yaml -f b.yaml`: the files merge with loader.MergeMaps
//     (cli/values.Options.MergeValues), which keeps nulls;
//   - the merged user values over the chart's values.yaml, and a parent
//     chart's values over a subchart's: chartutil CoalesceValues, where a
//     null removes the default below it.
//
// strata's Merge is one rule for a whole stack: each layer coalesces over
// everything below it, as Helm coalesces user values over chart defaults,
// and no null is left in a map. The three properties below say exactly
// where that meets Helm and where it must differ.

// helmFiles merges user files as `helm -f` does.
func helmFiles(layers []map[string]any) map[string]any {
	out := map[string]any{}
	for _, l := range layers {
		out = loader.MergeMaps(out, values.DeepCopy(l).(map[string]any))
	}
	return out
}

// helmCoalesce coalesces user values over a chart whose values.yaml is
// defaults, as helm install/template does.
func helmCoalesce(t testing.TB, defaults, user map[string]any) map[string]any {
	ch := &chart.Chart{Metadata: &chart.Metadata{Name: "c", APIVersion: chart.APIVersionV2, Version: "0.1.0"},
		Values: values.DeepCopy(defaults).(map[string]any)}
	out, err := commonutil.CoalesceValues(ch, values.DeepCopy(user).(map[string]any))
	if err != nil {
		t.Fatalf("helm CoalesceValues: %v", err)
	}
	return out
}

// pruneNulls removes the nulls of maps, at any depth (not inside lists).
func pruneNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			if e != nil {
				out[k] = pruneNulls(e)
			}
		}
		return out
	case []any:
		return v
	}
	return v
}

// replacedThenMap reports whether a layer sets a value that is not a map
// (a null, a scalar, a list) at a path where a later layer sets a map: the
// one case in which Helm's chart pipeline and strata differ (see
// checkMergeAgainstHelm).
func replacedThenMap(layers []map[string]any) bool {
	var walk func(a any, later []any) bool
	walk = func(a any, later []any) bool {
		m, ok := a.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range m {
			var sub []any
			for _, l := range later {
				if lm, ok := l.(map[string]any); ok {
					if lv, ok := lm[k]; ok {
						sub = append(sub, lv)
					}
				}
			}
			if _, isMap := v.(map[string]any); !isMap {
				for _, s := range sub {
					if _, laterMap := s.(map[string]any); laterMap {
						return true
					}
				}
				continue
			}
			if walk(v, sub) {
				return true
			}
		}
		return false
	}
	for i := range layers {
		later := make([]any, 0, len(layers)-i-1)
		for _, l := range layers[i+1:] {
			later = append(later, l)
		}
		if walk(layers[i], later) {
			return true
		}
	}
	return false
}

func strataMerge(t testing.TB, layers []map[string]any) map[string]any {
	ls := make([]*values.Layer, len(layers))
	for i, l := range layers {
		ls[i] = &values.Layer{Name: "l", Values: l}
	}
	res, err := values.Merge(ls, values.MergeOptions{})
	if err != nil {
		t.Fatalf("Merge: %v", err)
	}
	return res.Values
}

// checkMergeAgainstHelm checks the three properties on a stack whose first
// layer plays the chart's values.yaml.
func checkMergeAgainstHelm(t testing.TB, layers []map[string]any) {
	t.Helper()
	got := canon(strataMerge(t, layers))

	// 1. `helm -f` over the files: the same, once Helm's leftover nulls
	// (which delete nothing there) are removed, as strata removes them.
	if len(layers) > 0 {
		want := canon(pruneNulls(helmFiles(layers)))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Merge differs from helm -f (loader.MergeMaps) (-helm +strata):\n%s", diff)
		}
	}
	if len(layers) < 2 {
		return
	}

	// 2. Helm coalescing each layer over all below it, as it coalesces a
	// parent chart's values over a subchart's: always the same.
	seq := pruneNulls(helmCoalesce(t, map[string]any{}, layers[0])).(map[string]any)
	for _, l := range layers[1:] {
		seq = pruneNulls(helmCoalesce(t, seq, l)).(map[string]any)
	}
	if diff := cmp.Diff(canon(seq), got); diff != "" {
		t.Errorf("Merge differs from Helm coalescing layer by layer (-helm +strata):\n%s", diff)
	}

	// 3. Helm's chart pipeline: the user layers merged with MergeMaps,
	// then coalesced over the first. The same, except where a user layer
	// sets a null or a scalar or a list, and a later one a map, at the same
	// path: MergeMaps lets the map replace it, so it never reaches the
	// chart's defaults and the map merges into them. strata keeps layer
	// order: the null or scalar replaced what was below, and the map starts
	// afresh (property 2's answer, checked above).
	chartRes := canon(pruneNulls(helmCoalesce(t, layers[0], helmFiles(layers[1:]))))
	if diff := cmp.Diff(chartRes, got); diff != "" && !replacedThenMap(layers[1:]) {
		t.Errorf("Merge differs from Helm's chart coalescing without a null followed by a map (-helm +strata):\n%s", diff)
	}
}

// quietHelm silences the warnings Helm's coalescing logs (log.Printf) for
// type changes, for the duration of a test.
func quietHelm(tb testing.TB) {
	w := log.Writer()
	log.SetOutput(io.Discard)
	tb.Cleanup(func() { log.SetOutput(w) })
}

func parseLayers(tb testing.TB, docs ...string) ([]map[string]any, bool) {
	var out []map[string]any
	for _, d := range docs {
		m, err := document.Parse([]byte(d), "fuzz")
		if err != nil {
			return nil, false
		}
		out = append(out, m)
	}
	return out, true
}

// TestMergeMatchesHelm runs the merge table, and the cases where Helm's
// coalescing differs, through the three properties.
func TestMergeMatchesHelm(t *testing.T) {
	quietHelm(t)
	extra := [][]string{
		// The documented difference: Helm gives a: {b: 1, c: 2}.
		{"a: {b: 1}", "a: null", "a: {c: 2}"},
		{"a: {b: 1}", "a: 1", "a: {c: 2}"},
		{"a: {b: 1}", "a: [1]", "a: {c: 2}"},
		{"a: {b: {x: 1}}", "a: {b: null}", "a: {b: {y: 2}}"},
		// Type changes, both ways, over defaults and between files.
		{"a: 1", "a: {b: 1}", "a: 2"},
		{"a: {b: {c: 1}}", "a: {b: 1}"},
		{"a: {b: 1}", "a: {b: {c: 1}}"},
		// Nulls in the defaults, and nulls that delete nothing.
		{"a: null\nb: {c: null}", "d: null"},
		{"a: {b: null}", "a: {b: {c: null}}"},
		{"a: [1, null]", "b: {c: [null]}"},
	}
	var cases [][]string
	for _, tc := range mergeTests {
		cases = append(cases, tc.layers)
	}
	cases = append(cases, extra...)
	for _, docs := range cases {
		ls, ok := parseLayers(t, docs...)
		if !ok {
			t.Fatalf("parsing %q", docs)
		}
		checkMergeAgainstHelm(t, ls)
	}
}

// TestMergeHelmDifference pins the one difference, so that it stays a
// decision: Helm's chart pipeline merges a map given after a null (or a
// scalar) into the defaults the null removed; strata does not.
func TestMergeHelmDifference(t *testing.T) {
	quietHelm(t)
	ls, _ := parseLayers(t, "a: {b: 1}", "a: null", "a: {c: 2}")
	helmGot := canon(pruneNulls(helmCoalesce(t, ls[0], helmFiles(ls[1:]))))
	if diff := cmp.Diff(canon(map[string]any{"a": map[string]any{"b": int64(1), "c": int64(2)}}), helmGot); diff != "" {
		t.Errorf("Helm's answer changed (-was +now):\n%s\nupdate docs/values.md", diff)
	}
	got := strataMerge(t, ls)
	if diff := cmp.Diff(map[string]any{"a": map[string]any{"c": int64(2)}}, got); diff != "" {
		t.Errorf("Merge mismatch (-want +got):\n%s", diff)
	}
}

func FuzzMergeMatchesHelm(f *testing.F) {
	quietHelm(f)
	for _, tc := range mergeTests {
		docs := append(append([]string{}, tc.layers...), "", "", "")
		f.Add(docs[0], docs[1], docs[2])
	}
	f.Add("a: {b: 1}", "a: null", "a: {c: 2}")
	f.Add("a: {b: {c: 1}}", "a: {b: 1}", "a: {b: {d: null}}")
	f.Fuzz(func(t *testing.T, d, a, b string) {
		ls, ok := parseLayers(t, d, a, b)
		if !ok {
			return
		}
		checkMergeAgainstHelm(t, ls)
	})
}
