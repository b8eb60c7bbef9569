package document_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		in   string
		want document.Path
	}{
		{"a", document.Path{document.Key("a")}},
		{"", document.Path{document.Key("")}},
		{"a.b", document.Path{document.Key("a"), document.Key("b")}},
		{`a\.b`, document.Path{document.Key("a.b")}},
		{"a[0].b[1][2]", document.Path{document.Key("a"), document.Index(0), document.Key("b"), document.Index(1), document.Index(2)}},
		{"a..b", document.Path{document.Key("a"), document.Key(""), document.Key("b")}},
		{`a\\`, document.Path{document.Key(`a\`)}},
		{`\[0]`, document.Path{document.Key("[0]")}},
	}
	for _, tc := range tests {
		got, err := document.ParsePath(tc.in)
		if err != nil {
			t.Errorf("ParsePath(%q) error: %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParsePath(%q) mismatch (-want +got):\n%s", tc.in, diff)
		}
		if s := got.String(); s != tc.in {
			t.Errorf("ParsePath(%q).String() = %q", tc.in, s)
		}
	}
	for _, bad := range []string{"a[", "a[x]", "a[-1]", "a[+1]", "a[99999999]", `a\`, "a=b", "a,b", "a[0]b"} {
		if p, err := document.ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q) = %v, want an error", bad, p)
		}
	}
}
