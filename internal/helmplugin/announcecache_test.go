package helmplugin_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/params"
)

// TestAnnounceCache: an announcement of a chart without user values comes
// from the cache the second time, the same as the first and as an
// announcement without the cache; another values.yaml, or parameters
// giving user values, miss; the cache holds at most CacheEntries lists.
func TestAnnounceCache(t *testing.T) {
	root := t.TempDir()
	for name, values := range map[string]string{
		"one":   "color: blue\nlist: [1, {a: b}]\nempty: {}\n",
		"two":   "color: red\nsize: 3\n",
		"three": "color: blue\nlist: [1, {a: c}]\n",
		"none":  "",
	} {
		app := filepath.Join(root, name)
		write(t, filepath.Join(app, "Chart.yaml"), "apiVersion: v2\nname: "+name+"\nversion: 1.0.0\n")
		if name != "none" {
			write(t, filepath.Join(app, "values.yaml"), values)
		}
		write(t, filepath.Join(app, "extra.yaml"), "color: green\n")
	}
	req := func(name string, ps ...params.Parameter) *params.Request {
		return &params.Request{AppName: name, RepoRoot: root, AppPath: filepath.Join(root, name), Parameters: ps}
	}
	ctx := context.Background()
	announce := func(p *helmplugin.Plugin, r *params.Request) []params.Announcement {
		t.Helper()
		anns, err := p.Announce(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return anns
	}
	uncached := helmplugin.New(helmplugin.Options{CacheEntries: -1})
	withFile := []params.Parameter{{Name: helmplugin.ParamValuesFiles, Array: []string{"extra.yaml"}}}
	withSet := []params.Parameter{{Name: helmplugin.ParamHelmParameters, Map: map[string]string{"color": "black"}}}

	p := helmplugin.New(helmplugin.Options{CacheEntries: 2})
	steps := []struct {
		req  *params.Request
		want helmplugin.CacheStats // Announcements after the step, less Bytes
	}{
		{req("one"), helmplugin.CacheStats{Misses: 1, Entries: 1}},
		{req("one"), helmplugin.CacheStats{Hits: 1, Misses: 1, Entries: 1}},
		{req("two"), helmplugin.CacheStats{Hits: 1, Misses: 2, Entries: 2}},
		// User values: not looked up.
		{req("one", withFile...), helmplugin.CacheStats{Hits: 1, Misses: 2, Entries: 2}},
		{req("one", withSet...), helmplugin.CacheStats{Hits: 1, Misses: 2, Entries: 2}},
		// A third list evicts the least recently used ("one").
		{req("three"), helmplugin.CacheStats{Hits: 1, Misses: 3, Evictions: 1, Entries: 2}},
		{req("one"), helmplugin.CacheStats{Hits: 1, Misses: 4, Evictions: 2, Entries: 2}},
		{req("three"), helmplugin.CacheStats{Hits: 2, Misses: 4, Evictions: 2, Entries: 2}},
		{req("none"), helmplugin.CacheStats{Hits: 2, Misses: 5, Evictions: 3, Entries: 2}},
		{req("none"), helmplugin.CacheStats{Hits: 3, Misses: 5, Evictions: 3, Entries: 2}},
	}
	for i, st := range steps {
		got := announce(p, st.req)
		if diff := cmp.Diff(announce(uncached, st.req), got); diff != "" {
			t.Errorf("step %d (%s): the announcement differs from one without the cache (-want +got):\n%s", i, st.req.AppName, diff)
		}
		// The caller owns what it gets: changing it changes nothing
		// announced later.
		for _, a := range got {
			for k := range a.Map {
				a.Map[k] = "changed"
			}
		}
		stats := p.Stats().Announcements
		if stats.Entries > 0 && stats.Bytes <= 0 {
			t.Errorf("step %d: %d entries of %d bytes", i, stats.Entries, stats.Bytes)
		}
		stats.Bytes = 0
		if diff := cmp.Diff(st.want, stats); diff != "" {
			t.Errorf("step %d (%s): Stats().Announcements (-want +got):\n%s", i, st.req.AppName, diff)
		}
	}
}
