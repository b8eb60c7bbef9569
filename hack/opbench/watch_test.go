package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The watch hook prints its binding for --config and, run, logs each
// distinct non-zero ts of its binding context with its start time, which
// readSeen and latencies turn into event-to-hook latencies.
func TestWatchHook(t *testing.T) {
	dir := t.TempDir()
	if err := writeWatchTree(dir, 3); err != nil {
		t.Fatal(err)
	}
	hook := filepath.Join(dir, "watch", "global-hooks", "hooks", "w02.sh")
	out, err := exec.Command(hook, "--config").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"matchNames: [" + objectsNamespace + "]", "matchLabels: {opbench-hook: w02}", "queue: w02", "jqFilter: '{v: .data.v, ts: .data.ts}'"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("--config lacks %q:\n%s", want, out)
		}
	}
	bc := filepath.Join(dir, "context.json")
	// Synchronization objects carry ts "0"; an event's ts is in its object
	// and its filter result.
	if err := os.WriteFile(bc, []byte(`[{"binding":"objects","type":"Synchronization","objects":[{"object":{"data":{"ts":"0"}},"filterResult":{"ts":"0","v":"0"}}]},
{"binding":"objects","type":"Event","object":{"data":{"ts":"1700000000000000000"}},"filterResult":{"ts":"1700000000000000000","v":"1"}},
{"binding":"objects","type":"Event","object":{"data":{"ts":"1700000000500000000"}},"filterResult":{"ts":"1700000000500000000","v":"2"}}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hook)
	cmd.Env = append(os.Environ(), "BINDING_CONTEXT_PATH="+bc)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hook run: %v\n%s", err, out)
	}
	seen, err := readSeen(filepath.Join(dir, "watch", "seen"))
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 {
		t.Fatalf("readSeen = %v, want the two events' ts", seen)
	}
	sent := map[string]time.Time{
		"1700000000000000000": time.Unix(0, 1700000000000000000),
		"1700000000500000000": time.Unix(0, 1700000000500000000),
	}
	lat := latencies(sent, seen)
	if len(lat) != 2 || lat[0] <= 0 || lat[1]-lat[0] != 500*time.Millisecond {
		t.Errorf("latencies = %v, want two, 500ms apart (one run saw both)", lat)
	}
}

func TestPct(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{50, 50}, {99, 99}, {100, 100}, {1, 1}, {0, 1}} {
		if got := pct(d, tc.p); got != tc.want {
			t.Errorf("pct(1..100, %v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := pct(nil, 50); got != 0 {
		t.Errorf("pct(nil) = %v", got)
	}
}
