//go:build linux

package tarball_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/cmpserver/tarball"
)

// recycling returns a Store that recycles workspaces.
func recycling(t *testing.T) (*tarball.Store, string) {
	t.Helper()
	s, root := newStore(t, 1<<30)
	if err := s.SetRecycling(tarball.Recycling{}); err != nil {
		t.Skipf("SetRecycling: %v", err)
	}
	return s, root
}

// settled says of ws that nothing its commands started still runs, as
// the server does once its request's Tracker closed, and returns it.
func settled(ws *tarball.Workspace) *tarball.Workspace {
	ws.Settle(nil)
	return ws
}

func write(t *testing.T, name, body string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRecycle: whatever a command did to its workspace, the next request
// of the repository gets what a new copy would hold, in the same directory
// when the check could repair it.
func TestRecycle(t *testing.T) {
	data := tgz(t, repoEntries...)
	tests := []struct {
		name   string
		tamper func(t *testing.T, repo, tmp string)
		busy   bool // a process the commands started may still run
		// unsettled: closed without Settle
		unsettled bool
		reused    bool
	}{
		{name: "untouched", tamper: func(*testing.T, string, string) {}, reused: true},
		{name: "content rewritten, same size", reused: true, tamper: func(t *testing.T, repo, _ string) {
			write(t, repo+"/app/values.yaml", "replicas: 9\n")
		}},
		{name: "content grown", reused: true, tamper: func(t *testing.T, repo, _ string) {
			write(t, repo+"/app/templates/cm.yaml", "kind: ConfigMap\nmetadata: {name: evil}\n")
		}},
		{name: "content truncated", reused: true, tamper: func(t *testing.T, repo, _ string) {
			must(t, os.Truncate(repo+"/app/copy", 0))
		}},
		{name: "replaced through a rename", reused: true, tamper: func(t *testing.T, repo, _ string) {
			write(t, repo+"/app/new", "replicas: 7\n")
			must(t, os.Rename(repo+"/app/new", repo+"/app/values.yaml"))
		}},
		{name: "file made read-only and unreadable", reused: true, tamper: func(t *testing.T, repo, _ string) {
			write(t, repo+"/app/run.sh", "rm -rf /\n")
			must(t, os.Chmod(repo+"/app/run.sh", 0))
		}},
		{name: "directory closed", reused: true, tamper: func(t *testing.T, repo, _ string) {
			must(t, os.Chmod(repo+"/app/templates", 0))
		}},
		{name: "repository root closed", reused: true, tamper: func(t *testing.T, repo, _ string) {
			must(t, os.Chmod(repo, 0o500))
		}},
		{name: "files left in the temporary directory", reused: true, tamper: func(t *testing.T, _, tmp string) {
			must(t, os.MkdirAll(tmp+"/.cache/helm", 0o700))
			write(t, tmp+"/.cache/helm/index.yaml", "x")
			must(t, os.Chmod(tmp+"/.cache", 0))
			must(t, os.Chmod(tmp, 0o500))
		}},
		{name: "hard link from the temporary directory", reused: true, tamper: func(t *testing.T, repo, tmp string) {
			must(t, os.Link(repo+"/app/values.yaml", tmp+"/keep"))
		}},
		{name: "file added", tamper: func(t *testing.T, repo, _ string) {
			write(t, repo+"/app/templates/crb.yaml", "kind: ClusterRoleBinding\n")
		}},
		{name: "directory added", tamper: func(t *testing.T, repo, _ string) {
			must(t, os.Mkdir(repo+"/charts", 0o755))
		}},
		{name: "file removed", tamper: func(t *testing.T, repo, _ string) {
			must(t, os.Remove(repo+"/app/copy"))
		}},
		{name: "file renamed", tamper: func(t *testing.T, repo, _ string) {
			must(t, os.Rename(repo+"/app/copy", repo+"/app/copy2"))
		}},
		{name: "file replaced by a symbolic link", tamper: func(t *testing.T, repo, _ string) {
			must(t, os.Remove(repo+"/app/copy"))
			must(t, os.Symlink("/etc/passwd", repo+"/app/copy"))
		}},
		{name: "symbolic link pointed elsewhere", tamper: func(t *testing.T, repo, _ string) {
			must(t, os.Remove(repo+"/app/link"))
			must(t, os.Symlink("run.sh", repo+"/app/link"))
		}},
		{name: "directory replaced by a symbolic link", tamper: func(t *testing.T, repo, _ string) {
			must(t, os.RemoveAll(repo+"/app/templates"))
			must(t, os.Symlink("/etc", repo+"/app/templates"))
		}},
		{name: "file hard-linked to another", tamper: func(t *testing.T, repo, _ string) {
			// Same content: only the link count tells.
			must(t, os.Remove(repo+"/app/copy"))
			must(t, os.Link(repo+"/app/values.yaml", repo+"/app/copy"))
		}},
		{name: "extended attribute", tamper: func(t *testing.T, repo, _ string) {
			if err := syscall.Setxattr(repo+"/app/values.yaml", "user.strata-test", []byte("x"), 0); err != nil {
				t.Skipf("setxattr: %v", err)
			}
		}},
		{name: "a process still running", busy: true, tamper: func(t *testing.T, repo, _ string) {
			write(t, repo+"/app/values.yaml", "replicas: 9\n")
		}},
		{name: "not settled", unsettled: true, tamper: func(t *testing.T, repo, _ string) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, root := recycling(t)
			ws := receive(t, s, data, tarball.Options{})
			dir := ws.Dir()
			tt.tamper(t, ws.Dir(), ws.TempDir())
			switch {
			case tt.busy:
				ws.Settle(errors.New("1 process could not be killed"))
			case !tt.unsettled:
				ws.Settle(nil)
			}
			if err := ws.Close(); err != nil {
				t.Fatalf("Close() = %v", err)
			}
			_, err := os.Lstat(dir)
			if kept := err == nil; kept != tt.reused {
				t.Errorf("after Close, workspace kept = %v (Lstat: %v), want %v", kept, err, tt.reused)
			}

			ws2 := receive(t, s, data, tarball.Options{})
			if got := ws2.Dir() == dir; got != tt.reused {
				t.Errorf("next Receive reused the workspace = %v, want %v", got, tt.reused)
			}
			if diff := cmp.Diff(repoTree, listing(t, ws2.Dir())); diff != "" {
				t.Errorf("next workspace (-want +got):\n%s", diff)
			}
			if got := listing(t, ws2.TempDir()); len(got) != 0 {
				t.Errorf("next workspace's temporary directory holds %v", got)
			}
			for _, d := range []string{ws2.Dir(), ws2.TempDir()} {
				if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("Stat(%s) = %v, %v; want mode 0700", d, fi.Mode(), err)
				}
			}
			st := s.Stats()
			want := tarball.Stats{Hits: 1, Misses: 1, Extractions: 1, Entries: 1}
			switch {
			case tt.reused:
				want.Recycled, want.Reused = 1, 1
			case tt.busy:
				want.RecycleBusy = 1
			case tt.unsettled:
				want.RecycleUnsettled = 1
			default:
				want.RecycleChanged = 1
			}
			st.Bytes = 0
			if diff := cmp.Diff(want, st); diff != "" {
				t.Errorf("Stats() (-want +got):\n%s", diff)
			}
			settled(ws2).Close()
			must(t, s.Close())
			if _, err := os.Lstat(root + "/work"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("after the Store's Close, its work directory: %v", err)
			}
		})
	}
}

// TestRecycleUnchangedSinceLongAgo: past the margin, files whose change
// time says they were not touched are not read again, and a change made
// after a later hand-out is still found.
func TestRecycleUnchangedSinceLongAgo(t *testing.T) {
	defer tarball.SetRecycleMargin(50 * time.Millisecond)()
	s, _ := recycling(t)
	data := tgz(t, repoEntries...)
	ws := receive(t, s, data, tarball.Options{})
	dir := ws.Dir()
	must(t, settled(ws).Close())
	time.Sleep(100 * time.Millisecond)
	for i, body := range []string{"replicas: 2\n", "replicas: 3\n"} {
		ws := receive(t, s, data, tarball.Options{})
		if ws.Dir() != dir {
			t.Fatalf("round %d: got a new workspace", i)
		}
		// Right after the hand-out, within the file system's clock tick.
		write(t, ws.Dir()+"/app/values.yaml", body)
		must(t, settled(ws).Close())
	}
	ws = receive(t, s, data, tarball.Options{})
	if ws.Dir() != dir {
		t.Fatalf("got a new workspace")
	}
	if diff := cmp.Diff(repoTree, listing(t, ws.Dir())); diff != "" {
		t.Errorf("workspace (-want +got):\n%s", diff)
	}
}

// TestRecycleWriteAfterCheck: a write that lands after a workspace was
// checked (by a task that outlived the check) is found by the next check,
// however long before the next hand-out it came: untouched means
// unchanged since the last check began, not since the hand-out.
func TestRecycleWriteAfterCheck(t *testing.T) {
	defer tarball.SetRecycleMargin(50 * time.Millisecond)()
	s, _ := recycling(t)
	data := tgz(t, repoEntries...)
	ws := receive(t, s, data, tarball.Options{})
	dir := ws.Dir()
	must(t, settled(ws).Close())
	time.Sleep(100 * time.Millisecond)
	// Checked and kept; now rewritten, same size, well before the next
	// hand-out.
	orig, err := os.ReadFile(dir + "/app/values.yaml")
	must(t, err)
	write(t, dir+"/app/values.yaml", strings.Repeat("x", len(orig)-1)+"\n")
	time.Sleep(200 * time.Millisecond)
	ws = receive(t, s, data, tarball.Options{})
	if ws.Dir() != dir {
		t.Fatalf("got a new workspace")
	}
	must(t, settled(ws).Close())
	ws = receive(t, s, data, tarball.Options{})
	if diff := cmp.Diff(repoTree, listing(t, ws.Dir())); diff != "" {
		t.Errorf("workspace after the next check (-want +got):\n%s", diff)
	}
	must(t, settled(ws).Close())
}

// TestRecycleKeys: a workspace goes only to a request of the same
// repository with the same file modes.
func TestRecycleKeys(t *testing.T) {
	s, _ := recycling(t)
	data := tgz(t, repoEntries...)
	other := tgz(t, reg("other.yaml", "x: 1\n"))
	ws := receive(t, s, data, tarball.Options{})
	dir := ws.Dir()
	must(t, settled(ws).Close())
	for _, r := range []struct {
		data []byte
		opts tarball.Options
	}{{other, tarball.Options{}}, {data, tarball.Options{PreserveFileMode: true}}, {data, tarball.Options{ReadOnly: true}}} {
		ws := receive(t, s, r.data, r.opts)
		if ws.Dir() == dir {
			t.Errorf("Receive(%+v) got the workspace of another kind of request", r.opts)
		}
		settled(ws).Close()
	}
	ws = receive(t, s, data, tarball.Options{})
	if ws.Dir() != dir {
		t.Errorf("the workspace was not kept for its own kind of request")
	}
	settled(ws).Close()
}

// TestRecycleBounds: kept workspaces are bounded in bytes, and leave with
// their repository's tree when the cache evicts it.
func TestRecycleBounds(t *testing.T) {
	s, root := newStore(t, 1<<30)
	data := tgz(t, repoEntries...)
	size := int64(0)
	for _, v := range repoTree {
		if v[0] == 'f' {
			size += int64(len(v) - len("f 0644 "))
		}
	}
	must(t, s.SetRecycling(tarball.Recycling{MaxBytes: 2 * size}))
	var open []*tarball.Workspace
	for range 4 {
		open = append(open, receive(t, s, data, tarball.Options{}))
	}
	for _, ws := range open {
		must(t, settled(ws).Close())
	}
	if st := s.Stats(); st.Kept != 2 || st.KeptBytes != 2*size || st.Recycled != 4 {
		t.Errorf("after closing 4 workspaces with room for 2: Kept %d, KeptBytes %d, Recycled %d; want 2, %d, 4", st.Kept, st.KeptBytes, st.Recycled, 2*size)
	}
	if left := leftovers(t, root); len(left) != 2 {
		t.Errorf("work directories left: %v, want the 2 kept", left)
	}
	// Another repository pushes the first out of a one-entry cache.
	fits := s.Stats().Bytes // the cache's size with data's tree alone
	small, err := tarball.NewStore(filepath.Join(t.TempDir(), "small"), fits)
	must(t, err)
	must(t, small.SetRecycling(tarball.Recycling{}))
	ws := receive(t, small, data, tarball.Options{})
	must(t, settled(ws).Close())
	if st := small.Stats(); st.Kept != 1 {
		t.Fatalf("Kept = %d, want 1", st.Kept)
	}
	ws = receive(t, small, tgz(t, reg("other.yaml", "x: 1\n")), tarball.Options{})
	must(t, settled(ws).Close())
	if st := small.Stats(); st.Kept != 1 || st.Entries != 1 {
		t.Errorf("after the eviction: Kept %d, Entries %d; want 1 and 1 (the other repository's)", st.Kept, st.Entries)
	}
}

// TestRecycleConcurrent: requests of one repository at once, each
// tampering with its workspace, each getting a pristine one.
func TestRecycleConcurrent(t *testing.T) {
	s, _ := recycling(t)
	data := tgz(t, repoEntries...)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 20 {
				ws, err := s.Receive(context.Background(), chunks(data), int64(len(data)), sum(data), tarball.Options{})
				if err != nil {
					t.Error(err)
					return
				}
				if diff := cmp.Diff(repoTree, listing(t, ws.Dir())); diff != "" {
					t.Errorf("workspace (-want +got):\n%s", diff)
				}
				switch r.IntN(3) {
				case 0:
					os.WriteFile(filepath.Join(ws.Dir(), "app/values.yaml"), []byte("replicas: 9\n"), 0o644)
				case 1:
					os.WriteFile(filepath.Join(ws.Dir(), "app/extra"), nil, 0o644)
				}
				settled(ws).Close()
			}
		})
	}
	wg.Wait()
	if st := s.Stats(); st.Reused == 0 {
		t.Errorf("no workspace was reused: %+v", st)
	}
}
