package cli

import (
	"testing"

	"github.com/strata-dev/strata/internal/helmplugin"
)

func TestHelmFlagsOptions(t *testing.T) {
	tests := []struct {
		name string
		in   helmFlags
		want helmplugin.Options
	}{
		{"unbound: the plugin's defaults", helmFlags{}, helmplugin.Options{}},
		{"serve defaults", helmFlags{chartCacheBytes: 256 << 20, documentCacheBytes: 64 << 20},
			helmplugin.Options{ChartCacheBytes: 256 << 20, DocumentCacheBytes: 64 << 20}},
		{"0 is the default", helmFlags{}, helmplugin.Options{ChartCacheBytes: 0, DocumentCacheBytes: 0}},
		{"negative keeps none", helmFlags{chartCacheBytes: -1, documentCacheBytes: 1}, helmplugin.Options{ChartCacheBytes: -1, DocumentCacheBytes: 1}},
		{"concurrency", helmFlags{chartCacheBytes: 1, documentCacheBytes: 1, maxConcurrent: 3},
			helmplugin.Options{ChartCacheBytes: 1, DocumentCacheBytes: 1, MaxConcurrent: 3}},
		{"negative concurrency is the default", helmFlags{maxConcurrent: -2}, helmplugin.Options{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.options()
			if got.ChartCacheBytes != tc.want.ChartCacheBytes || got.DocumentCacheBytes != tc.want.DocumentCacheBytes || got.MaxConcurrent != tc.want.MaxConcurrent {
				t.Errorf("options() = chart %d, documents %d, concurrent %d; want %d, %d, %d",
					got.ChartCacheBytes, got.DocumentCacheBytes, got.MaxConcurrent,
					tc.want.ChartCacheBytes, tc.want.DocumentCacheBytes, tc.want.MaxConcurrent)
			}
		})
	}
}
