package helmplugin

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/values"
)

func TestExpand(t *testing.T) {
	env := map[string]string{"ARGOCD_APP_NAME": "shop", "ARGOCD_APP_NAMESPACE": "prod"}
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"$ARGOCD_APP_NAME", "shop"},
		{"${ARGOCD_APP_NAME}-${ARGOCD_APP_NAMESPACE}", "shop-prod"},
		{"$ARGOCD_APP_NAME.example.com", "shop.example.com"},
		{"pa$$word", "pa$word"},
		{"$UNKNOWN and ${UNKNOWN}", "$UNKNOWN and ${UNKNOWN}"},
		{"cost: 5$", "cost: 5$"},
		{"${unterminated", "${unterminated"},
		{"${}", "${}"},
		{"$-x", "$-x"},
	}
	for _, tc := range tests {
		if got := expand(tc.in, env); got != tc.want {
			t.Errorf("expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestEscapeSetValue(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a,b", `a\,b`},
		{`a\,b`, `a\,b`},
		{"{a,b}", "{a,b}"},
		{",", `\,`},
		{"no commas", "no commas"},
		{"{a,b", `{a\,b`},
	}
	for _, tc := range tests {
		if got := escapeSetValue(tc.in); got != tc.want {
			t.Errorf("escapeSetValue(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSuggestName(t *testing.T) {
	for in, want := range map[string]string{
		"value-files":    ` (did you mean "values-files"?)`,
		"valuesFiles":    ` (did you mean "values-files"?)`,
		"helm-parameter": ` (did you mean "helm-parameters"?)`,
		"releaseName":    ` (did you mean "release-name"?)`,
		"something-else": "",
	} {
		if got := suggestName(in); got != want {
			t.Errorf("suggestName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFlattenMatchesValues: the announcement's flattening writes the keys
// values.Flatten and Path.String write.
func TestFlattenMatchesValues(t *testing.T) {
	tree := map[string]any{
		"":      map[string]any{"a": int64(1), "": "empty key"},
		"a.b":   "dotted",
		"x=y,z": []any{map[string]any{"k[0]": true}, []any{}, map[string]any{}, nil},
		`back\`: 1.5,
		"list":  []any{[]any{"nested"}},
	}
	got := map[string]string{}
	if n := flatten(tree, "", true, got); n != len(got) {
		t.Errorf("flatten counted %d leaves, listed %d", n, len(got))
	}
	want := map[string]string{}
	for _, l := range values.Flatten(tree) {
		want[l.Path.String()], _ = display(l.Value)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("flatten differs from values.Flatten (-values +flatten):\n%s", diff)
	}
}
