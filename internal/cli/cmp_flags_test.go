package cli

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/strata-dev/strata/internal/document"
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

// TestPluginFlagsCodecs: --fast-codecs=false, or --helm-fast-yaml=false
// (its older name), is the reference switch, the last given winning; by
// default the fast codecs run.
func TestPluginFlagsCodecs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want document.Codecs
	}{
		{nil, document.FastCodecs},
		{[]string{"--fast-codecs"}, document.FastCodecs},
		{[]string{"--fast-codecs=false", "--fast-codecs"}, document.FastCodecs},
		{[]string{"--fast-codecs=0"}, document.ReferenceCodecs},
		{[]string{"--fast-codecs=false"}, document.ReferenceCodecs},
		{[]string{"--helm-fast-yaml=false"}, document.ReferenceCodecs},
		{[]string{"--helm-fast-yaml=false", "--fast-codecs=true"}, document.FastCodecs},
		{[]string{"--fast-codecs=true", "--helm-fast-yaml=false"}, document.ReferenceCodecs},
		{[]string{"--helm-fast-yaml=true"}, document.FastCodecs},
	} {
		var f pluginFlags
		fs := pflag.NewFlagSet("cmp", pflag.ContinueOnError)
		f.bind(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("Parse(%q): %v", tc.args, err)
		}
		if got := f.codecs; got != tc.want {
			t.Errorf("codecs after %q = %v, want %v", tc.args, got, tc.want)
		}
	}
	var f pluginFlags
	fs := pflag.NewFlagSet("cmp", pflag.ContinueOnError)
	f.bind(fs)
	if err := fs.Parse([]string{"--fast-codecs=maybe"}); err == nil {
		t.Errorf("Parse(--fast-codecs=maybe) = nil, want an error")
	}
	if def := fs.Lookup("fast-codecs").DefValue; def != "true" {
		t.Errorf("--fast-codecs default %q, want true", def)
	}
}

// TestCommandSetsDecodeCodecs: a command's --fast-codecs (or its older
// name) sets document.Decode's process-wide switch before the command
// runs; a command without the flag runs with the fast codecs.
func TestCommandSetsDecodeCodecs(t *testing.T) {
	t.Cleanup(func() { document.SetDecodeCodecs(document.FastCodecs) })
	for _, tc := range []struct {
		args []string
		want document.Codecs
	}{
		{[]string{"cmp", "generate", "--fast-codecs=false"}, document.ReferenceCodecs},
		{[]string{"version"}, document.FastCodecs},
		{[]string{"cmp", "parameters", "--helm-fast-yaml=false"}, document.ReferenceCodecs},
		{[]string{"cmp", "generate"}, document.FastCodecs},
		{[]string{"operator", "render", "--fast-codecs=false"}, document.ReferenceCodecs},
		{[]string{"operator", "render", "--fast-codecs"}, document.FastCodecs},
	} {
		root := NewRoot(strings.NewReader(""), io.Discard, io.Discard)
		cmd, rest, err := root.Find(tc.args)
		if err != nil {
			t.Fatalf("Find(%q): %v", tc.args, err)
		}
		if err := cmd.ParseFlags(rest); err != nil {
			t.Fatalf("ParseFlags(%q): %v", rest, err)
		}
		if err := root.PersistentPreRunE(cmd, nil); err != nil {
			t.Fatalf("%q: PersistentPreRunE: %v", tc.args, err)
		}
		if got := document.DecodeCodecs(); got != tc.want {
			t.Errorf("%q: Decode's codecs %v, want %v", tc.args, got, tc.want)
		}
	}
}
