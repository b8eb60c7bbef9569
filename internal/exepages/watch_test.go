package exepages

import (
	"os"
	"testing"
	"time"
)

func TestLongRunning(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"operator", "run"}, true},
		{[]string{"operator", "run", "--local", "--config", "c.yaml"}, true},
		{[]string{"--log-level", "debug", "operator", "run"}, true},
		{[]string{"operator", "--log-level", "debug", "run"}, false}, // flags between: not recognised, the release at start-up still runs
		{[]string{"operator", "render"}, false},
		{[]string{"operator"}, false},
		{[]string{"version"}, false},
		{[]string{"cmp", "serve"}, false},
		{[]string{"values", "--", "operator", "run"}, false},
		{nil, false},
	} {
		if got := longRunning(tc.args); got != tc.want {
			t.Errorf("longRunning(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		value   string
		set     bool
		want    bool
		wantErr bool
	}{
		{"", false, true, false},
		{"", true, true, false},
		{"true", true, true, false},
		{"1", true, true, false},
		{"false", true, false, false},
		{"0", true, false, false},
		{"off", true, false, true},
	} {
		if tc.set {
			t.Setenv(Env, tc.value)
		} else {
			t.Setenv(Env, "")
			os.Unsetenv(Env)
		}
		got, err := Enabled()
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("Enabled() with %s=%q (set %v) = %v, %v; want %v, error %v", Env, tc.value, tc.set, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestFileResident: the third field of /proc/self/statm, in bytes, as
// /proc/self/status's RssFile + RssShmem give it (within what the process
// touches between the two reads).
func TestFileResident(t *testing.T) {
	statm, err := os.Open("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm:", err)
	}
	defer statm.Close()
	var buf [128]byte
	got := fileResident(statm, buf[:], int64(os.Getpagesize()))
	if got <= 0 {
		t.Fatalf("fileResident() = %d", got)
	}
	if again := fileResident(statm, buf[:], int64(os.Getpagesize())); again <= 0 {
		t.Fatalf("a second fileResident() = %d", again)
	}
}

// TestWatch: a watch with a step of one page releases as soon as the
// resident file pages grow, and stop returns what it released.
func TestWatch(t *testing.T) {
	if _, err := os.Stat("/proc/self/statm"); err != nil {
		t.Skip("no /proc/self/statm:", err)
	}
	// Released first, the pages the test runs on fault back in: growth.
	if _, err := Release(); err != nil {
		t.Fatal(err)
	}
	w := startWatch(int64(os.Getpagesize()), time.Millisecond, time.Minute)
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Fault pages of the binary back in: code run for the first time
		// since the last release.
		if _, err := os.ReadFile("/proc/self/status"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		w.mu.Lock()
		n := w.watched.Releases
		w.mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
	}
	got := w.stop()
	if got.Releases < 2 || got.Err != nil || got.Bytes <= 0 {
		t.Errorf("stop() = %+v, want at least 2 releases with bytes and no error", got)
	}
	if again := w.stop(); again != (Watched{}) {
		t.Errorf("a second stop() = %+v, want zero", again)
	}
}
