package tarball_test

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/strata-dev/strata/internal/cmpserver/tarball"
)

// TestUsage: what the commands add to a workspace is measured in blocks
// beyond the copy, wherever and however they add it.
func TestUsage(t *testing.T) {
	data := tgz(t, repoEntries...)
	tests := []struct {
		name   string
		tamper func(t *testing.T, repo, tmp string)
		want   tarball.Usage
	}{
		{name: "untouched", tamper: func(*testing.T, string, string) {}},
		{name: "a file in the temporary directory", tamper: func(t *testing.T, _, tmp string) {
			write(t, tmp+"/out", string(make([]byte, 10000)))
		}, want: tarball.Usage{Bytes: 12288, Entries: 1, Largest: "tmp/out", LargestSize: 10000}},
		{name: "a file of the copy grown", tamper: func(t *testing.T, repo, _ string) {
			write(t, repo+"/app/values.yaml", string(make([]byte, 5000)))
		}, want: tarball.Usage{Bytes: 4096, Largest: "repo/app/values.yaml", LargestSize: 5000}},
		{name: "empty files cost a block each", tamper: func(t *testing.T, _, tmp string) {
			for i := range 100 {
				write(t, tmp+"/f"+strconv.Itoa(i), "")
			}
		}, want: tarball.Usage{Bytes: 100 * 4096, Entries: 100}},
		{name: "a sparse file counts in full", tamper: func(t *testing.T, _, tmp string) {
			write(t, tmp+"/sparse", "")
			must(t, os.Truncate(tmp+"/sparse", 1<<30))
		}, want: tarball.Usage{Bytes: 1 << 30, Entries: 1, Largest: "tmp/sparse", LargestSize: 1 << 30}},
		{name: "a hard link costs its entry only", tamper: func(t *testing.T, repo, tmp string) {
			must(t, os.Link(repo+"/app/run.sh", tmp+"/run.sh"))
		}, want: tarball.Usage{Entries: 1}},
		{name: "inside a directory made unreadable", tamper: func(t *testing.T, _, tmp string) {
			must(t, os.Mkdir(tmp+"/hidden", 0o700))
			write(t, tmp+"/hidden/big", string(make([]byte, 8192)))
			must(t, os.Chmod(tmp+"/hidden", 0))
		}, want: tarball.Usage{Bytes: 4096 + 8192, Entries: 2, Largest: "tmp/hidden/big", LargestSize: 8192}},
		{name: "removing files frees nothing below the copy", tamper: func(t *testing.T, repo, _ string) {
			must(t, os.RemoveAll(repo+"/app"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newStore(t, 1<<30)
			ws := receive(t, s, data, tarball.Options{})
			tt.tamper(t, ws.Dir(), ws.TempDir())
			got, err := ws.Usage()
			if err != nil {
				t.Fatalf("Usage() = %v", err)
			}
			if got != tt.want {
				t.Errorf("Usage() = %+v, want %+v", got, tt.want)
			}
		})
	}
	t.Run("nested past what is measured", func(t *testing.T) {
		s, _ := newStore(t, 1<<30)
		ws := receive(t, s, data, tarball.Options{})
		// Deeper than PATH_MAX too: built one directory at a time.
		d, err := os.Open(ws.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		for range 300 {
			if err := syscall.Mkdirat(int(d.Fd()), "dddddddddddddddddddd", 0o700); err != nil {
				t.Fatal(err)
			}
			fd, err := syscall.Openat(int(d.Fd()), "dddddddddddddddddddd", syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			d.Close()
			d = os.NewFile(uintptr(fd), "d")
		}
		d.Close()
		if _, err := ws.Usage(); !errors.Is(err, tarball.ErrTooDeep) {
			t.Errorf("Usage() = %v, want ErrTooDeep", err)
		}
	})
	t.Run("read-only", func(t *testing.T) {
		s, _ := newStore(t, 1<<30)
		ws := receive(t, s, data, tarball.Options{ReadOnly: true})
		if got, err := ws.Usage(); err != nil || got != (tarball.Usage{}) {
			t.Errorf("Usage() = %+v, %v; want nothing", got, err)
		}
	})
}
