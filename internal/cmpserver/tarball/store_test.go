package tarball_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/strata-dev/strata/internal/cmpserver/tarball"
)

var repoEntries = []ent{
	dir("app"),
	reg("app/values.yaml", "replicas: 1\n"),
	{name: "app/run.sh", body: "#!/bin/sh\n", mode: 0o755},
	reg("app/templates/cm.yaml", "kind: ConfigMap\n"),
	symlink("app/link", "values.yaml"),
	hardlink("app/copy", "app/values.yaml"),
}

var repoTree = map[string]string{
	"app":                   "d 0755",
	"app/values.yaml":       "f 0644 replicas: 1\n",
	"app/run.sh":            "f 0644 #!/bin/sh\n",
	"app/templates":         "d 0755",
	"app/templates/cm.yaml": "f 0644 kind: ConfigMap\n",
	"app/link":              "l values.yaml",
	"app/copy":              "f 0644 replicas: 1\n",
}

func newStore(t *testing.T, maxBytes int64) (*tarball.Store, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "store")
	s, err := tarball.NewStore(root, maxBytes)
	if err != nil {
		t.Fatalf("NewStore() = %v", err)
	}
	return s, root
}

// receive calls Receive with the stream in 1 KiB chunks and registers the
// workspace's Close.
func receive(t *testing.T, s *tarball.Store, data []byte, opts tarball.Options) *tarball.Workspace {
	t.Helper()
	ws, err := s.Receive(context.Background(), chunks(data), int64(len(data)), sum(data), opts)
	if err != nil {
		t.Fatalf("Receive() = %v", err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

func wantStats(t *testing.T, s *tarball.Store, want tarball.Stats) {
	t.Helper()
	if diff := cmp.Diff(want, s.Stats(), cmpopts.IgnoreFields(tarball.Stats{}, "Bytes")); diff != "" {
		t.Errorf("Stats() (-want +got):\n%s", diff)
	}
}

func TestReceive(t *testing.T) {
	s, root := newStore(t, 1<<30)
	data := tgz(t, repoEntries...)

	ws := receive(t, s, data, tarball.Options{})
	if diff := cmp.Diff(repoTree, listing(t, ws.Dir())); diff != "" {
		t.Errorf("first workspace (-want +got):\n%s", diff)
	}
	wantStats(t, s, tarball.Stats{Misses: 1, Extractions: 1, Entries: 1})

	ws2 := receive(t, s, data, tarball.Options{PreserveFileMode: true})
	want := maps(repoTree, map[string]string{"app/run.sh": "f 0755 #!/bin/sh\n"})
	if diff := cmp.Diff(want, listing(t, ws2.Dir())); diff != "" {
		t.Errorf("workspace from the cache, modes preserved (-want +got):\n%s", diff)
	}
	// The cache hit did not extract again.
	wantStats(t, s, tarball.Stats{Hits: 1, Misses: 1, Extractions: 1, Entries: 1})

	if ws.Dir() == ws2.Dir() {
		t.Fatalf("two Receives got the same directory %s", ws.Dir())
	}
	for _, w := range []*tarball.Workspace{ws, ws2} {
		if err := w.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
		if _, err := os.Lstat(w.Dir()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Close, Lstat(%s) = %v, want not exist", w.Dir(), err)
		}
		if err := w.Close(); err != nil {
			t.Errorf("second Close() = %v", err)
		}
	}
	if left := leftovers(t, root); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// maps returns a copy of base with over applied.
func maps(base, over map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for k, v := range over {
		m[k] = v
	}
	return m
}

var errDisconnect = errors.New("rpc error: code = Canceled desc = client disconnected")

func TestReceiveRejects(t *testing.T) {
	data := tgz(t, repoEntries...)
	damaged := append([]byte(nil), data...)
	damaged[len(damaged)/2] ^= 0xff
	big := tgz(t, reg("big", randomish(256<<10)), reg("small", "x"))
	tests := []struct {
		name     string
		r        io.Reader
		size     int64
		checksum string
		opts     tarball.Options
		want     error
		msg      string
	}{
		{
			name: "damaged stream", r: chunks(damaged), size: int64(len(data)), checksum: sum(data),
			want: tarball.ErrChecksum,
		},
		{
			name: "wrong checksum", r: chunks(data), size: int64(len(data)), checksum: sum([]byte("other")),
			want: tarball.ErrChecksum,
			msg:  "checksum mismatch: got " + sum(data) + " want " + sum([]byte("other")) + "; the repository stream was damaged on the way, or its metadata is wrong",
		},
		{
			name: "stream longer than announced", r: chunks(data), size: int64(len(data)) - 1, checksum: sum(data),
			want: tarball.ErrSize,
		},
		{
			name: "stream shorter than announced", r: chunks(data), size: int64(len(data)) + 1, checksum: sum(data),
			want: tarball.ErrSize,
		},
		{
			name: "client disconnects", r: &failingReader{data: big[:len(big)/2], err: errDisconnect}, size: int64(len(big)), checksum: sum(big),
			want: errDisconnect,
		},
		{
			name: "announced size over limit", r: chunks(data), size: int64(len(data)), checksum: sum(data),
			opts: tarball.Options{Limits: tarball.Limits{MaxCompressed: 10}},
			want: tarball.ErrLimit,
		},
		{
			name: "unsafe archive", r: chunks(tgz(t, reg("../x", "y"))), size: int64(len(tgz(t, reg("../x", "y")))), checksum: sum(tgz(t, reg("../x", "y"))),
			want: tarball.ErrUnsafePath,
		},
		{
			name: "bad checksum metadata", r: chunks(data), size: int64(len(data)), checksum: "abc",
			msg: `the repository stream's checksum "abc" is not a hex SHA-256`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, root := newStore(t, 1<<30)
			ws, err := s.Receive(context.Background(), tc.r, tc.size, tc.checksum, tc.opts)
			if err == nil {
				ws.Close()
				t.Fatalf("Receive() succeeded, want an error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Receive() = %v, want an error matching %v", err, tc.want)
			}
			if tc.msg != "" && err.Error() != tc.msg {
				t.Errorf("Receive() error:\n got %s\nwant %s", err, tc.msg)
			}
			if st := s.Stats(); st.Entries != 0 || st.Bytes != 0 {
				t.Errorf("after a failed Receive, Stats() = %+v, want an empty cache", st)
			}
			if left := append(leftovers(t, root), cached(t, root)...); len(left) != 0 {
				t.Errorf("a failed Receive left %v", left)
			}
		})
	}
}

// TestReceiveRejectsOnHit: a stream for a cached tree is still checked.
func TestReceiveRejectsOnHit(t *testing.T) {
	s, root := newStore(t, 1<<30)
	data := tgz(t, repoEntries...)
	receive(t, s, data, tarball.Options{}).Close()

	damaged := append([]byte(nil), data...)
	damaged[10] ^= 1
	_, err := s.Receive(context.Background(), chunks(damaged), int64(len(data)), sum(data), tarball.Options{})
	if !errors.Is(err, tarball.ErrChecksum) {
		t.Errorf("Receive(damaged stream of a cached tree) = %v, want ErrChecksum", err)
	}
	_, err = s.Receive(context.Background(), &failingReader{data: data[:100], err: errDisconnect}, int64(len(data)), sum(data), tarball.Options{})
	if !errors.Is(err, errDisconnect) {
		t.Errorf("Receive(disconnecting client) = %v, want %v", err, errDisconnect)
	}
	_, err = s.Receive(context.Background(), chunks(data), int64(len(data)), sum(data), tarball.Options{Limits: tarball.Limits{MaxFiles: 3}})
	if !errors.Is(err, tarball.ErrLimit) {
		t.Errorf("Receive(cached tree, MaxFiles 3) = %v, want ErrLimit", err)
	}
	wantStats(t, s, tarball.Stats{Hits: 3, Misses: 1, Extractions: 1, Entries: 1})
	if left := leftovers(t, root); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestReceiveCanceled(t *testing.T) {
	s, root := newStore(t, 1<<30)
	data := tgz(t, reg("big", randomish(256<<10)))
	ctx, cancel := context.WithCancel(context.Background())
	r := &hookReader{r: chunks(data), at: 10, hook: cancel}
	_, err := s.Receive(ctx, r, int64(len(data)), sum(data), tarball.Options{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Receive() = %v, want context.Canceled", err)
	}
	if left := append(leftovers(t, root), cached(t, root)...); len(left) != 0 {
		t.Errorf("a canceled Receive left %v", left)
	}
}

// hookReader calls hook before its at-th Read (counting from 1), once.
type hookReader struct {
	r    io.Reader
	n    int
	at   int
	hook func()
}

func (r *hookReader) Read(p []byte) (int, error) {
	if r.n++; r.n == r.at {
		r.hook()
	}
	return r.r.Read(p)
}

// gate blocks a stream at its first Read until released, after telling
// that it got there.
type gate struct {
	r       io.Reader
	reached chan struct{}
	release chan struct{}
	err     error // returned instead of the data, once released
	once    sync.Once
}

func newGate(r io.Reader) *gate {
	return &gate{r: r, reached: make(chan struct{}), release: make(chan struct{})}
}

func (g *gate) Read(p []byte) (int, error) {
	g.once.Do(func() {
		close(g.reached)
		<-g.release
	})
	if g.err != nil {
		return 0, g.err
	}
	return g.r.Read(p)
}

// TestReceiveConcurrent: two Receives of one tarball extract it once,
// and each gets its own copy.
func TestReceiveConcurrent(t *testing.T) {
	// The cache holds nothing once unused: the tree must survive until
	// the second Receive has copied it all the same.
	s, root := newStore(t, -1)
	data := tgz(t, repoEntries...)

	first := newGate(chunks(data))
	var (
		wg  sync.WaitGroup
		ws  [2]*tarball.Workspace
		err [2]error
	)
	wg.Go(func() {
		ws[0], err[0] = s.Receive(context.Background(), first, int64(len(data)), sum(data), tarball.Options{})
	})
	<-first.reached // the first Receive is extracting
	second := newGate(chunks(data))
	wg.Go(func() {
		ws[1], err[1] = s.Receive(context.Background(), second, int64(len(data)), sum(data), tarball.Options{})
	})
	<-second.reached // the second Receive is waiting for it
	close(second.release)
	close(first.release)
	wg.Wait()

	for i := range ws {
		if err[i] != nil {
			t.Fatalf("Receive #%d = %v", i+1, err[i])
		}
		t.Cleanup(func() { ws[i].Close() })
		if diff := cmp.Diff(repoTree, listing(t, ws[i].Dir())); diff != "" {
			t.Errorf("workspace #%d (-want +got):\n%s", i+1, diff)
		}
	}
	if ws[0].Dir() == ws[1].Dir() {
		t.Errorf("both Receives got %s", ws[0].Dir())
	}
	wantStats(t, s, tarball.Stats{Misses: 2, Extractions: 1, Evictions: 1})
	for _, w := range ws {
		w.Close()
	}
	if left := append(leftovers(t, root), cached(t, root)...); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestReceiveConcurrentFirstFails: when the Receive extracting a tarball
// loses its client, one waiting for it extracts from its own stream.
func TestReceiveConcurrentFirstFails(t *testing.T) {
	s, root := newStore(t, 1<<30)
	data := tgz(t, repoEntries...)

	first := newGate(chunks(data))
	first.err = errDisconnect
	var (
		wg   sync.WaitGroup
		err1 error
	)
	wg.Go(func() {
		_, err1 = s.Receive(context.Background(), first, int64(len(data)), sum(data), tarball.Options{})
	})
	<-first.reached
	second := &hookReader{r: chunks(data), at: 1, hook: func() { close(first.release) }}
	ws, err := s.Receive(context.Background(), second, int64(len(data)), sum(data), tarball.Options{})
	wg.Wait()
	if !errors.Is(err1, errDisconnect) {
		t.Errorf("first Receive = %v, want %v", err1, errDisconnect)
	}
	if err != nil {
		t.Fatalf("second Receive = %v", err)
	}
	defer ws.Close()
	if diff := cmp.Diff(repoTree, listing(t, ws.Dir())); diff != "" {
		t.Errorf("workspace (-want +got):\n%s", diff)
	}
	wantStats(t, s, tarball.Stats{Misses: 2, Extractions: 2, Entries: 1})
	ws.Close()
	if left := leftovers(t, root); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestReceiveMany runs many Receives of a few tarballs at once, under a
// cache that cannot hold them all (for the race detector).
func TestReceiveMany(t *testing.T) {
	s, root := newStore(t, 40<<10)
	var tarballs [][]byte
	for i := range 4 {
		tarballs = append(tarballs, tgz(t, reg("n", strings.Repeat("x", i)), reg("f", randomish(8<<10))))
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			data := tarballs[i%len(tarballs)]
			ws, err := s.Receive(context.Background(), chunks(data), int64(len(data)), sum(data), tarball.Options{})
			if err != nil {
				t.Errorf("Receive() = %v", err)
				return
			}
			defer ws.Close()
			b, err := os.ReadFile(filepath.Join(ws.Dir(), "n"))
			if err != nil || len(b) != i%len(tarballs) {
				t.Errorf("workspace of tarball %d holds n = %q, %v", i%len(tarballs), b, err)
			}
		})
	}
	wg.Wait()
	st := s.Stats()
	if st.Hits+st.Misses != 40 || st.Extractions > st.Misses || st.Extractions < 4 {
		t.Errorf("Stats() = %+v, want 40 Receives, at least 4 extractions, no more than misses", st)
	}
	if st.Bytes > 40<<10 {
		t.Errorf("cache holds %d bytes, over its size", st.Bytes)
	}
	if left := leftovers(t, root); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestWorkspaceIsolation: what a command does in one workspace is seen
// neither in another, nor in a later one.
func TestWorkspaceIsolation(t *testing.T) {
	s, _ := newStore(t, 1<<30)
	data := tgz(t, repoEntries...)
	ws1 := receive(t, s, data, tarball.Options{})
	ws2 := receive(t, s, data, tarball.Options{})

	d := ws1.Dir()
	f, err := os.OpenFile(filepath.Join(d, "app/values.yaml"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("evil: true\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// In place, without changing size: a hard-linked copy would show it.
	f, err = os.OpenFile(filepath.Join(d, "app/copy"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("R"), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for name, body := range map[string]string{"new.yaml": "x", "app/templates/new.yaml": "y"} {
		if err := os.WriteFile(filepath.Join(d, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(d, "app/templates/cm.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(d, "app/run.sh"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(d, "app/link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(d, "app/link")); err != nil {
		t.Fatal(err)
	}

	ws3 := receive(t, s, data, tarball.Options{})
	for name, ws := range map[string]*tarball.Workspace{"other": ws2, "later": ws3} {
		if diff := cmp.Diff(repoTree, listing(t, ws.Dir())); diff != "" {
			t.Errorf("%s workspace changed (-want +got):\n%s", name, diff)
		}
	}
	wantStats(t, s, tarball.Stats{Hits: 2, Misses: 1, Extractions: 1, Entries: 1})
}

func TestEviction(t *testing.T) {
	a := tgz(t, reg("a", randomish(20<<10)))
	b := tgz(t, reg("b", randomish(20<<10)))
	// Room for one of them: 20 KiB of content and the root directory.
	s, root := newStore(t, 30<<10)

	receive(t, s, a, tarball.Options{})
	receive(t, s, a, tarball.Options{})
	wantStats(t, s, tarball.Stats{Hits: 1, Misses: 1, Extractions: 1, Entries: 1})
	if st := s.Stats(); st.Bytes != 24<<10 {
		t.Errorf("Stats().Bytes = %d, want %d", st.Bytes, 24<<10)
	}

	wsB := receive(t, s, b, tarball.Options{})
	wantStats(t, s, tarball.Stats{Hits: 1, Misses: 2, Extractions: 2, Evictions: 1, Entries: 1})
	if c := cached(t, root); len(c) != 1 || !strings.HasPrefix(c[0], sum(b)) {
		t.Errorf("cache holds %v, want only %s", c, sum(b))
	}

	// a is gone: extracted again; b is evicted in turn, yet the
	// workspace made from it stays.
	receive(t, s, a, tarball.Options{})
	wantStats(t, s, tarball.Stats{Hits: 1, Misses: 3, Extractions: 3, Evictions: 2, Entries: 1})
	if diff := cmp.Diff(map[string]string{"b": "f 0644 " + randomish(20<<10)}, listing(t, wsB.Dir())); diff != "" {
		t.Errorf("workspace of an evicted tree (-want +got):\n%s", diff)
	}

	// A tree larger than the whole cache pushes a out, is served, then
	// dropped.
	huge := tgz(t, reg("h", randomish(64<<10)))
	ws := receive(t, s, huge, tarball.Options{})
	if _, err := os.Stat(filepath.Join(ws.Dir(), "h")); err != nil {
		t.Errorf("workspace of a tree larger than the cache: %v", err)
	}
	wantStats(t, s, tarball.Stats{Hits: 1, Misses: 4, Extractions: 4, Evictions: 4})
}

func TestWorkspaceCloseReadOnly(t *testing.T) {
	s, root := newStore(t, 1<<30)
	ws := receive(t, s, tgz(t, repoEntries...), tarball.Options{})
	for _, d := range []string{"app/templates", "app", "."} {
		if err := os.Chmod(filepath.Join(ws.Dir(), d), 0o500); err != nil {
			t.Fatal(err)
		}
	}
	if err := ws.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if left := leftovers(t, root); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestNewStoreClears(t *testing.T) {
	s, root := newStore(t, 1<<30)
	data := tgz(t, repoEntries...)
	receive(t, s, data, tarball.Options{}) // left open: a crash
	if err := os.WriteFile(filepath.Join(root, "tmp", "spool-1"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := tarball.NewStore(root, 1<<30)
	if err != nil {
		t.Fatalf("NewStore() = %v", err)
	}
	if left := append(leftovers(t, root), cached(t, root)...); len(left) != 0 {
		t.Errorf("NewStore() kept %v", left)
	}
	receive(t, s2, data, tarball.Options{})
	wantStats(t, s2, tarball.Stats{Misses: 1, Extractions: 1, Entries: 1})
}

// TestReceiveReadOnly: a ReadOnly Receive hands out the cached tree
// itself, without write permission, kept from eviction until Close.
func TestReceiveReadOnly(t *testing.T) {
	a := tgz(t, repoEntries...)
	b := tgz(t, reg("b", randomish(20<<10)))
	// Room for one of them.
	s, root := newStore(t, 30<<10)

	ws := receive(t, s, a, tarball.Options{ReadOnly: true})
	if ws.TempDir() != "" {
		t.Errorf("TempDir() = %q, want none", ws.TempDir())
	}
	if c := cached(t, root); len(c) != 1 || ws.Dir() != filepath.Join(root, "cache", c[0]) {
		t.Errorf("Dir() = %s, want the cached tree (cache holds %v)", ws.Dir(), c)
	}
	sealed := map[string]string{
		".":                     "d 0555",
		"app":                   "d 0555",
		"app/values.yaml":       "f 0444 replicas: 1\n",
		"app/run.sh":            "f 0555 #!/bin/sh\n",
		"app/templates":         "d 0555",
		"app/templates/cm.yaml": "f 0444 kind: ConfigMap\n",
		"app/link":              "l values.yaml",
		"app/copy":              "f 0444 replicas: 1\n",
	}
	got := listing(t, ws.Dir())
	fi, err := os.Stat(ws.Dir())
	if err != nil {
		t.Fatal(err)
	}
	got["."] = fmt.Sprintf("d %04o", fi.Mode().Perm())
	if diff := cmp.Diff(sealed, got); diff != "" {
		t.Errorf("read-only view (-want +got):\n%s", diff)
	}
	if os.Geteuid() != 0 {
		// Root ignores permission bits; the modes above are what stops
		// everyone else.
		if err := os.WriteFile(filepath.Join(ws.Dir(), "app/values.yaml"), []byte("x"), 0o644); !errors.Is(err, os.ErrPermission) {
			t.Errorf("writing through the view: %v, want permission denied", err)
		}
	}
	wantStats(t, s, tarball.Stats{Misses: 1, Extractions: 1, Entries: 1})

	// A copy of the same tree is writable, as always, and a hit.
	wsCopy := receive(t, s, a, tarball.Options{})
	if diff := cmp.Diff(repoTree, listing(t, wsCopy.Dir())); diff != "" {
		t.Errorf("copy (-want +got):\n%s", diff)
	}
	wsCopy.Close()
	wantStats(t, s, tarball.Stats{Hits: 1, Misses: 1, Extractions: 1, Entries: 1})

	// b does not fit beside a, and a is in use: b goes as soon as it is
	// released, a stays.
	receive(t, s, b, tarball.Options{ReadOnly: true}).Close()
	wantStats(t, s, tarball.Stats{Hits: 1, Misses: 2, Extractions: 2, Entries: 1, Evictions: 1})
	if _, err := os.Stat(filepath.Join(ws.Dir(), "app/values.yaml")); err != nil {
		t.Errorf("the tree in use was removed: %v", err)
	}
	// Closed, a may go: b, received again, pushes it out.
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	receive(t, s, b, tarball.Options{ReadOnly: true}).Close()
	wantStats(t, s, tarball.Stats{Hits: 1, Misses: 3, Extractions: 3, Entries: 1, Evictions: 2})
	if _, err := os.Stat(ws.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a closed, evicted tree is still there: %v", err)
	}
	if st := s.Stats(); st.Bytes != 24<<10 {
		t.Errorf("Stats().Bytes = %d, want %d (b's 20 KiB file and its root)", st.Bytes, 24<<10)
	}
	if left := leftovers(t, root); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestStats follows the counters through hits, misses, a failed Receive,
// evictions, and concurrent Receives sharing one extraction.
func TestStats(t *testing.T) {
	a := tgz(t, reg("a", randomish(20<<10)))
	b := tgz(t, reg("b", randomish(20<<10)))
	s, _ := newStore(t, 30<<10)
	wantStats(t, s, tarball.Stats{})
	if st := s.Stats(); st.Bytes != 0 {
		t.Errorf("empty Store: Bytes = %d", st.Bytes)
	}

	receive(t, s, a, tarball.Options{}).Close()
	receive(t, s, a, tarball.Options{ReadOnly: true}).Close()
	wantStats(t, s, tarball.Stats{Hits: 1, Misses: 1, Extractions: 1, Entries: 1})

	// A damaged stream: a miss, an extraction that publishes nothing.
	bad := append([]byte(nil), b...)
	bad[len(bad)/2] ^= 0xff
	if _, err := s.Receive(context.Background(), chunks(bad), int64(len(bad)), sum(b), tarball.Options{}); err == nil {
		t.Fatal("Receive of a damaged stream succeeded")
	}
	wantStats(t, s, tarball.Stats{Hits: 1, Misses: 2, Extractions: 2, Entries: 1})

	// b pushes a out.
	receive(t, s, b, tarball.Options{}).Close()
	wantStats(t, s, tarball.Stats{Hits: 1, Misses: 3, Extractions: 3, Evictions: 1, Entries: 1})
	if st := s.Stats(); st.Bytes != 24<<10 {
		t.Errorf("Bytes = %d, want %d", st.Bytes, 24<<10)
	}

	// 8 concurrent Receives of a: one extraction; every one a miss or a hit.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ws, err := s.Receive(context.Background(), chunks(a), int64(len(a)), sum(a), tarball.Options{})
			if err != nil {
				t.Errorf("Receive() = %v", err)
				return
			}
			ws.Close()
		})
	}
	wg.Wait()
	st := s.Stats()
	if st.Hits+st.Misses != 12 || st.Extractions != 4 || st.Evictions != 2 || st.Entries != 1 || st.Bytes != 24<<10 {
		t.Errorf("after 8 concurrent Receives: %+v; want 12 Receives counted, 4 extractions, 2 evictions, 1 entry of 24 KiB", st)
	}
}
