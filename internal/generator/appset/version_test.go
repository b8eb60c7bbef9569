package appset_test

import (
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/generator/appset"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    appset.Version
		newer   bool
		wantErr string
	}{
		{in: "3.5", want: appset.Version{Major: 3, Minor: 5, Patch: 1}},
		{in: "v3.4", want: appset.Version{Major: 3, Minor: 4, Patch: 7}},
		{in: "3.4.3", want: appset.Version{Major: 3, Minor: 4, Patch: 3}},
		{in: " v2.14.5 ", want: appset.Version{Major: 2, Minor: 14, Patch: 5}},
		{in: "2.14", want: appset.Version{Major: 2, Minor: 14, Patch: 21}},
		{in: "3.0", want: appset.Version{Major: 3, Minor: 0, Patch: 23}},
		{in: "3.6", want: appset.Latest, newer: true},
		{in: "4.0.0", want: appset.Latest, newer: true},
		{in: "2.13", wantErr: "2.14 and later"},
		{in: "1.8", wantErr: "2.14 and later"},
		{in: "2.15", wantErr: "there is no Argo CD 2.15 release"},
		{in: "3", wantErr: "write MAJOR.MINOR"},
		{in: "3.x", wantErr: `"x" is not a version number`},
		{in: "3.5.1.2", wantErr: "write MAJOR.MINOR"},
		{in: "", wantErr: "write MAJOR.MINOR"},
	}
	for _, tc := range tests {
		got, newer, err := appset.ParseVersion(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseVersion(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want || newer != tc.newer {
			t.Errorf("ParseVersion(%q) = %v, %v, %v; want %v, %v", tc.in, got, newer, err, tc.want, tc.newer)
		}
	}
}
