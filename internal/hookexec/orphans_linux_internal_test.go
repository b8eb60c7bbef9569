//go:build linux

package hookexec

import (
	"os"
	"os/exec"
	"testing"
)

func TestParseStat(t *testing.T) {
	tail := " 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 123456 0 0"
	tests := []struct {
		line    string
		want    proc
		wantErr bool
	}{
		{line: "42 (sleep) S 7 42 42" + tail, want: proc{state: 'S', ppid: 7, pgrp: 42, sid: 42, start: 123456}},
		{line: "42 (a) (b) Z 1 42 42" + tail, want: proc{state: 'Z', ppid: 1, pgrp: 42, sid: 42, start: 123456}},
		{line: "42 (x y)) R 9 42 42" + tail + "\n", want: proc{state: 'R', ppid: 9, pgrp: 42, sid: 42, start: 123456}},
		{line: "42 sleep S 7", wantErr: true},
		{line: "42 (sleep) S 7 42", wantErr: true},
		{line: "42 (sleep) S x 42 42" + tail, wantErr: true},
		{line: "", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseStat([]byte(tt.line))
		if (err != nil) != tt.wantErr {
			t.Errorf("parseStat(%q) error = %v, want error %v", tt.line, err, tt.wantErr)
			continue
		}
		if err == nil && got != tt.want {
			t.Errorf("parseStat(%q) = %+v, want %+v", tt.line, got, tt.want)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("42 (sleep) S 7 42 42 0 0 0 0 0 0 0 0 0 0 20 0 1 0 123456 0 0"))
	f.Add([]byte("1 ()) Z 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseStat(b) // must not panic
	})
}

// TestReadChildren holds the children files' reading to the reading of
// every process.
func TestReadChildren(t *testing.T) {
	var cmds []*exec.Cmd
	for range 3 {
		c := exec.Command("sleep", "60")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	t.Cleanup(func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	})
	skip := map[int]struct{}{cmds[0].Process.Pid: {}}
	got, err := readChildren(skip)
	if err != nil {
		t.Fatal(err)
	}
	all, err := readProcs(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Tests running in parallel have children of their own: compare the
	// sleeps only.
	mine := map[int]bool{}
	for _, c := range cmds {
		mine[c.Process.Pid] = true
	}
	want := map[int]proc{}
	for _, p := range all {
		if !mine[p.pid] {
			continue
		}
		if _, ok := skip[p.pid]; ok {
			p = proc{pid: p.pid, ppid: p.ppid, state: 'R'}
		}
		want[p.pid] = p
	}
	gotm := map[int]proc{}
	for _, p := range got {
		if mine[p.pid] {
			gotm[p.pid] = p
		}
	}
	if len(gotm) != 3 || len(want) != 3 {
		t.Fatalf("readChildren found %v, readProcs %v; want the 3 sleeps", got, all)
	}
	for pid, w := range want {
		g := gotm[pid]
		// The state may change between the two readings.
		g.state, w.state = 0, 0
		if g != w {
			t.Errorf("child %d: readChildren %+v, readProcs %+v", pid, g, w)
		}
	}
}
