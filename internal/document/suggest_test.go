package document_test

import (
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/document"
)

func TestClosest(t *testing.T) {
	names := []string{"onStartup", "schedule", "kubernetes", "settings"}
	for _, tc := range []struct{ in, want string }{
		{"onstartup", "onStartup"},
		{"shedule", "schedule"},
		{"kubernets", "kubernetes"},
		{"setings", "settings"},
		{"kube", ""},
		{"", ""},
		{strings.Repeat("s", 200), ""},
	} {
		if got := document.Closest(tc.in, names); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := document.ClosestWithin("kubern", names, 4); got != "kubernetes" {
		t.Errorf("ClosestWithin(kubern, 4) = %q", got)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2},
	} {
		if got := document.EditDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
