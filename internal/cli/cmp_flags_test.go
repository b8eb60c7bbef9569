package cli

import (
	"testing"
	"time"

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

func TestHelmRenderBudgets(t *testing.T) {
	tests := []struct {
		name    string
		in      helmFlags
		timeout time.Duration // --timeout
		want    time.Duration
		workers bool
		memory  int64
	}{
		{"one-shot: --timeout only, in-process", helmFlags{}, 0, 0, false, 0},
		{"one-shot with --timeout", helmFlags{}, 5 * time.Second, 5 * time.Second, false, 0},
		{"serve: 0 is the default", helmFlags{serve: true}, 0, defaultRenderTimeout, true, 0},
		{"serve: the flag", helmFlags{serve: true, renderTimeout: time.Minute, renderMemory: 1 << 20}, 0, time.Minute, true, 1 << 20},
		{"serve: --timeout when shorter", helmFlags{serve: true, renderTimeout: time.Minute}, 10 * time.Second, 10 * time.Second, true, 0},
		{"serve: the flag when shorter", helmFlags{serve: true, renderTimeout: time.Second}, 10 * time.Second, time.Second, true, 0},
		{"serve: negative is none", helmFlags{serve: true, renderTimeout: -1, renderMemory: -1}, 0, 0, true, -1},
		{"serve: negative leaves --timeout", helmFlags{serve: true, renderTimeout: -1}, 7 * time.Second, 7 * time.Second, true, 0},
		{"serve in-process", helmFlags{serve: true, inProcess: true}, 0, defaultRenderTimeout, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.renderTimeoutWith(tc.timeout); got != tc.want {
				t.Errorf("renderTimeoutWith(%s) = %s, want %s", tc.timeout, got, tc.want)
			}
			if w := tc.in.workers(); w.Enabled != tc.workers || w.Memory != tc.memory {
				t.Errorf("workers() = %+v; want workers %v, memory %d", w, tc.workers, tc.memory)
			}
		})
	}
}
