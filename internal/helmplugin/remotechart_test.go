package helmplugin_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/strata-dev/strata/internal/helmplugin"
)

// TestFetchChartDir: a chart named as helm template takes one from a
// registry (oci://HOST/PATH/NAME, with --version or a tag) or from a
// repository of repositories.yaml (REPO/NAME) is written as a chart
// directory; the errors say what to write.
func TestFetchChartDir(t *testing.T) {
	srv, host := ociRegistry(t, "", "")
	push(t, srv, host, "", "", "1.0.0", "1.1.0", "2.0.0")
	cfg := repositoriesYAML(t, &repo.Entry{Name: "reg", URL: "oci://" + host + "/charts", CAFile: caFile(t, srv)})
	tests := []struct {
		ref, version, want, wantErr string
	}{
		{ref: "oci://" + host + "/charts/leaf", version: "^1.0.0", want: "1.1.0"},
		{ref: "oci://" + host + "/charts/leaf", want: "2.0.0"},
		{ref: "oci://" + host + "/charts/leaf:1.0.0", want: "1.0.0"},
		{ref: "reg/leaf", version: "1.0.0", want: "1.0.0"},
		{ref: "oci://" + host + "/charts/leaf:1.0.0", version: "2.0.0", wantErr: "the tag 1.0.0 and --version 2.0.0 differ"},
		{ref: "nope/leaf", wantErr: `no repository named "nope"`},
		{ref: "oci://" + host + "/charts/leaf", version: "^7", wantErr: "could not locate a version matching"},
		{ref: "oci:///leaf", wantErr: "is not an oci://HOST/PATH/CHART reference"},
	}
	for _, tc := range tests {
		t.Run(tc.ref+"@"+tc.version, func(t *testing.T) {
			dir, err := helmplugin.FetchChartDir(context.Background(), depOptions(t, cfg), tc.ref, tc.version, t.TempDir())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), "version: "+tc.want) {
				t.Errorf("Chart.yaml of %s: %s, want version %s", tc.ref, data, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "templates", "configmap.yaml")); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestIsChartReference(t *testing.T) {
	for arg, want := range map[string]bool{
		"oci://r.example.com/charts/x": true,
		"bitnami/nginx":                true,
		"apps/web/chart":               false, // a path: three segments
		"./chart":                      false,
		"../x/y":                       false,
		"chart":                        false,
		"C:/x":                         false,
	} {
		if got := helmplugin.IsChartReference(arg); got != want {
			t.Errorf("IsChartReference(%q) = %v, want %v", arg, got, want)
		}
	}
}
