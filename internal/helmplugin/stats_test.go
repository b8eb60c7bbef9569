package helmplugin_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/params"
)

// TestStats: the caches count what the renders and announcements did.
func TestStats(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"one", "two"} {
		app := filepath.Join(root, name)
		write(t, filepath.Join(app, "Chart.yaml"), "apiVersion: v2\nname: "+name+"\nversion: 1.0.0\n")
		write(t, filepath.Join(app, "values.yaml"), "color: "+name+"\n")
		write(t, filepath.Join(app, "templates", "cm.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Chart.Name }}\ndata:\n  color: {{ .Values.color }}\n")
		write(t, filepath.Join(app, "templates", "cm2.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Chart.Name }}-2\n")
	}
	req := func(name string) *params.Request {
		return &params.Request{AppName: name, RepoRoot: root, AppPath: filepath.Join(root, name)}
	}
	// One chart kept: rendering two in turn evicts.
	p := helmplugin.New(helmplugin.Options{ChartCacheEntries: 1})
	ctx := context.Background()
	for _, name := range []string{"one", "one", "two", "one"} {
		if _, err := p.Generate(ctx, req(name)); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := p.Announce(ctx, req("one")); err != nil {
			t.Fatal(err)
		}
	}
	got := p.Stats()
	// Charts: one (miss), one (hit), two (miss, evicts one), one (miss,
	// evicts two). Documents: 2 per render; "one" renders the same two
	// documents each time, "two" two others. Values: the first
	// announcement parses values.yaml; Announcements: the second finds
	// the list the first made.
	want := helmplugin.Stats{
		Charts:        helmplugin.CacheStats{Hits: 1, Misses: 3, Evictions: 2, Entries: 1},
		Documents:     helmplugin.CacheStats{Hits: 4, Misses: 4, Entries: 4},
		Values:        helmplugin.CacheStats{Misses: 1, Entries: 1},
		Announcements: helmplugin.CacheStats{Hits: 1, Misses: 1, Entries: 1},
	}
	for _, c := range []*helmplugin.CacheStats{&got.Charts, &got.Documents, &got.Values, &got.Announcements} {
		if c.Entries > 0 && c.Bytes <= 0 {
			t.Errorf("a cache of %d entries has %d bytes", c.Entries, c.Bytes)
		}
		c.Bytes = 0
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Stats() (-want +got):\n%s", diff)
	}
}
