package tarball

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// A Store receives repository tarballs and keeps what it extracted, keyed
// by checksum, in a cache of bounded size under its root directory. See the
// package documentation for what it guarantees. A Store is safe for
// concurrent use.
type Store struct {
	root  string
	cache string // published trees, one directory per entry
	tmp   string // extractions in progress and spooled streams
	work  string // workspaces

	maxBytes int64
	disk     *diskBudget // nil: no budget
	pool     *pool       // nil: workspaces are removed, never recycled

	mu      sync.Mutex
	entries map[string]*entry  // by checksum
	flights map[string]*flight // extractions in progress, by checksum
	lru     list.List          // of *entry; the front was used last
	bytes   int64              // sum of the entries' disk sizes
	stats   Stats
}

// An entry is a published tree: extracted, verified, never changed again.
type entry struct {
	key   string
	dir   string
	tree  *tree
	disk  int64 // approximate size on disk
	users int   // Receives copying from it, or about to
	elem  *list.Element
}

// A flight is one extraction in progress, which Receives of the same
// checksum wait for instead of extracting again.
type flight struct {
	done    chan struct{} // closed when ent is set
	waiters int           // Receives waiting; each gets a use of ent
	ent     *entry        // the published entry; nil if the extraction failed
}

// Stats counts what a Store did: counters since NewStore, and the cache's
// size now.
type Stats struct {
	// Hits counts the Receives that found the tree in the cache; Misses
	// those that did not, including those that waited for another
	// Receive's extraction of the same tarball.
	Hits, Misses uint64
	// Evictions counts the trees removed from the cache to make room.
	Evictions uint64
	// Extractions counts the tarballs decompressed and extracted; a
	// Receive that waits for another's extraction adds none.
	Extractions uint64
	// Bytes is the approximate disk size of the trees in the cache now
	// (whole 4 KiB blocks), Entries their number, in use or not.
	Bytes   int64
	Entries int

	// With recycling (SetRecycling): Reused counts the Receives that got
	// a recycled workspace instead of a new copy; Recycled the closed
	// workspaces checked and kept; RecycleBusy those removed because a
	// process their commands started may still have run (Workspace.
	// Settle), RecycleUnsettled those closed without Settle; RecycleChanged
	// those removed because their commands had changed them in a way the
	// check does not repair (see the package documentation). Kept and
	// KeptBytes are the workspaces kept now and their repositories'
	// bytes.
	Reused, Recycled, RecycleBusy, RecycleUnsettled, RecycleChanged uint64
	Kept                                                            int
	KeptBytes                                                       int64
}

// DefaultCacheBytes is the size of a Store's cache when NewStore is given 0.
const DefaultCacheBytes = 2 << 30

// NewStore returns a Store keeping at most about maxBytes of extracted
// trees under root, besides the trees in use: 0 is DefaultCacheBytes, a
// negative size keeps none between requests (concurrent requests for one
// checksum still share one extraction). root belongs to the Store:
// NewStore creates it if needed and deletes what an earlier Store left
// there; no two Stores may share it. Workspaces are made under root too,
// so that copying into them stays on one file system.
func NewStore(root string, maxBytes int64) (*Store, error) {
	switch {
	case maxBytes == 0:
		maxBytes = DefaultCacheBytes
	case maxBytes < 0:
		maxBytes = 0 // below: keep nothing that is not in use
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("repository cache: %w", err)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("creating the repository cache: %w", err)
	}
	s := &Store{
		root:     root,
		cache:    filepath.Join(root, "cache"),
		tmp:      filepath.Join(root, "tmp"),
		work:     filepath.Join(root, "work"),
		maxBytes: maxBytes,
		entries:  map[string]*entry{},
		flights:  map[string]*flight{},
	}
	for _, d := range []string{s.cache, s.tmp, s.work} {
		if err := removeAll(d); err != nil {
			return nil, fmt.Errorf("clearing the repository cache: %w", err)
		}
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("creating the repository cache: %w", err)
		}
	}
	return s, nil
}

// SetDiskBudget bounds the repository bytes on disk that requests hold at
// once, besides the cache: trees being extracted and the private copies of
// Workspaces until they are closed. A request whose copy does not fit
// waits for others to close theirs, until its context is done; an
// extraction that does not fit fails, as does a copy larger than the
// whole budget (errors matching ErrLimit, naming cmp serve's
// --max-disk-bytes). 0 means DefaultDiskBudget, a negative max no
// budget. Call it before the Store is used.
func (s *Store) SetDiskBudget(max int64) {
	switch {
	case max == 0:
		s.disk = newDiskBudget(DefaultDiskBudget)
	case max < 0:
		s.disk = nil
	default:
		s.disk = newDiskBudget(max)
	}
}

// DiskInUse returns the bytes the disk budget has given to requests in
// flight.
func (s *Store) DiskInUse() int64 { return s.disk.inUse() }

// Close removes what the Store holds on disk: the cache, the extractions
// in progress and the workspaces, also those of requests that did not
// close theirs (a server that stops gives up on them). The Store must not
// be used after it.
func (s *Store) Close() error {
	var first error
	for _, d := range []string{s.work, s.tmp, s.cache} {
		if err := removeAll(d); err != nil && first == nil {
			first = fmt.Errorf("removing the repository cache: %w", err)
		}
	}
	return first
}

// Root returns the directory holding the Store's cache and workspaces
// (absolute): what a command given a workspace must not reach beyond it.
func (s *Store) Root() string { return s.root }

// Stats returns the Store's counters.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Entries = len(s.entries)
	st.Bytes = s.bytes
	if s.pool != nil {
		st.Kept = s.pool.order.Len()
		st.KeptBytes = s.pool.bytes
	}
	return st
}

// Receive reads a repository stream from r: a gzip-compressed tar of size
// bytes whose SHA-256 is checksum (hex), as Argo CD's repo-server sends it
// to a plugin. It returns a Workspace holding a private copy of the
// repository, extracted according to opts.
//
// Receive always reads the whole stream and checks its size and checksum.
// When the tree for checksum is already in the cache, or another Receive
// is extracting it, Receive only hashes the stream: it neither decompresses
// nor extracts it again. Errors match ErrSize, ErrChecksum, ErrFormat,
// ErrUnsafePath, ErrEntryType or ErrLimit (see Extract), or are those of r
// or ctx. A Receive that fails leaves nothing behind.
func (s *Store) Receive(ctx context.Context, r io.Reader, size int64, checksum string, opts Options) (*Workspace, error) {
	lim := opts.Limits.orDefault()
	want, err := hex.DecodeString(checksum)
	if err != nil || len(want) != sha256.Size {
		return nil, fmt.Errorf("the repository stream's checksum %q is not a hex SHA-256", checksum)
	}
	if size < 0 {
		return nil, fmt.Errorf("the repository stream's size %d is negative", size)
	}
	if size > lim.MaxCompressed {
		return nil, fmt.Errorf("%w: the repository tarball is %d bytes compressed, more than %d (cmp serve --max-repo-compressed-bytes)%s",
			ErrLimit, size, lim.MaxCompressed, limitHint)
	}
	in := &stream{ctx: ctx, r: r, size: size, want: want, h: sha256.New()}
	key := hex.EncodeToString(want)

	s.mu.Lock()
	if e := s.entries[key]; e != nil {
		s.stats.Hits++
		s.useLocked(e)
		s.mu.Unlock()
		if err := in.finish(); err != nil {
			s.release(e)
			return nil, err
		}
		return s.workspace(ctx, e, opts, lim)
	}
	s.stats.Misses++
	if f := s.flights[key]; f != nil {
		f.waiters++
		s.mu.Unlock()
		return s.follow(ctx, key, f, in, opts, lim)
	}
	f := s.startLocked(key)
	s.mu.Unlock()

	e, err := s.fill(key, f, func(dir string) (*tree, error) {
		return s.extractStream(ctx, in, dir, lim)
	})
	if err != nil {
		return nil, err
	}
	return s.workspace(ctx, e, opts, lim)
}

// extractStream extracts in into dir, then makes sure in was what its
// metadata said: only then may the tree be published.
func (s *Store) extractStream(ctx context.Context, in *stream, dir string, lim Limits) (*tree, error) {
	res := &reservation{ctx: ctx, b: s.disk}
	defer res.release()
	t, err := extract(ctx, in, dir, true, true, lim, res)
	if err == nil {
		err = in.finish()
	} else if in.err == nil && errors.Is(err, ErrFormat) {
		// A malformed archive may be a corrupted stream: say so if it is.
		if ferr := in.finish(); ferr != nil {
			err = ferr
		}
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// follow is Receive for a stream whose tree another Receive (f) is
// extracting. It keeps the stream on disk, checked, and waits; if that
// extraction fails, it extracts from its own copy.
func (s *Store) follow(ctx context.Context, key string, f *flight, in *stream, opts Options, lim Limits) (*Workspace, error) {
	spool, err := s.spool(in)
	if err != nil {
		s.leave(f)
		return nil, err
	}
	defer os.Remove(spool)
	for {
		select {
		case <-f.done:
		case <-ctx.Done():
			s.leave(f)
			return nil, ctx.Err()
		}
		if e := f.ent; e != nil {
			return s.workspace(ctx, e, opts, lim)
		}
		// That extraction failed (its client went away, say): try again.
		s.mu.Lock()
		if e := s.entries[key]; e != nil {
			s.useLocked(e)
			s.mu.Unlock()
			return s.workspace(ctx, e, opts, lim)
		}
		if f = s.flights[key]; f != nil {
			f.waiters++
			s.mu.Unlock()
			continue
		}
		f = s.startLocked(key)
		s.mu.Unlock()
		e, err := s.fill(key, f, func(dir string) (*tree, error) {
			r, err := os.Open(spool)
			if err != nil {
				return nil, err
			}
			defer r.Close()
			res := &reservation{ctx: ctx, b: s.disk}
			defer res.release()
			return extract(ctx, r, dir, true, true, lim, res)
		})
		if err != nil {
			return nil, err
		}
		return s.workspace(ctx, e, opts, lim)
	}
}

// spool writes the stream into a file under tmp, checks it, and returns
// the file's name.
func (s *Store) spool(in *stream) (string, error) {
	f, err := os.CreateTemp(s.tmp, "spool-")
	if err != nil {
		return "", fmt.Errorf("receiving the repository: %w", err)
	}
	_, err = io.Copy(f, in)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = in.finish()
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func (s *Store) startLocked(key string) *flight {
	f := &flight{done: make(chan struct{})}
	s.flights[key] = f
	s.stats.Extractions++
	return f
}

// fill runs the extraction of flight f into a temporary directory and
// publishes the result under the cache by renaming it, with a use for the
// caller and one for each waiter.
func (s *Store) fill(key string, f *flight, extract func(dir string) (*tree, error)) (*entry, error) {
	var e *entry
	tmp, err := os.MkdirTemp(s.tmp, "x-")
	if err == nil {
		var t *tree
		if t, err = extract(tmp); err == nil {
			dir := filepath.Join(s.cache, key+"-"+filepath.Base(tmp))
			if err = os.Rename(tmp, dir); err == nil {
				// Sealed like the rest of the tree (see extract); only
				// now: a directory without write permission cannot move
				// to another parent.
				if err = os.Chmod(dir, 0o555); err != nil {
					_ = removeAll(dir)
				}
			}
			if err == nil {
				e = &entry{key: key, dir: dir, tree: t, disk: diskSize(t)}
			}
		}
		if err != nil {
			_ = removeAll(tmp)
		}
	} else {
		err = fmt.Errorf("receiving the repository: %w", err)
	}

	s.mu.Lock()
	delete(s.flights, key)
	if e != nil {
		s.entries[key] = e
		e.elem = s.lru.PushFront(e)
		e.users = 1 + f.waiters
		s.bytes += e.disk
	}
	f.ent = e
	close(f.done)
	victims := s.evictLocked()
	s.mu.Unlock()
	removeVictims(victims)
	return e, err
}

// leave gives up a waiter's place on f.
func (s *Store) leave(f *flight) {
	s.mu.Lock()
	select {
	case <-f.done:
		if f.ent != nil {
			s.mu.Unlock()
			s.release(f.ent)
			return
		}
	default:
		f.waiters--
	}
	s.mu.Unlock()
}

func (s *Store) useLocked(e *entry) {
	e.users++
	s.lru.MoveToFront(e.elem)
}

// release ends a use of e and evicts what the cache no longer has room
// for.
func (s *Store) release(e *entry) {
	s.mu.Lock()
	e.users--
	victims := s.evictLocked()
	s.mu.Unlock()
	removeVictims(victims)
}

// evictLocked drops the least recently used entries not in use until the
// cache fits in maxBytes, and returns their directories to remove.
func (s *Store) evictLocked() []string {
	var victims []string
	for el := s.lru.Back(); el != nil && s.bytes > s.maxBytes; {
		e := el.Value.(*entry)
		el = el.Prev()
		if e.users > 0 {
			continue
		}
		s.lru.Remove(e.elem)
		delete(s.entries, e.key)
		s.bytes -= e.disk
		s.stats.Evictions++
		victims = append(victims, e.dir)
		if s.pool != nil {
			victims = append(victims, s.pool.dropLocked(e.key)...)
		}
	}
	return victims
}

func removeVictims(dirs []string) {
	for _, d := range dirs {
		// Nothing refers to d any more; should removing it fail, the
		// next NewStore on this root clears it.
		_ = removeAll(d)
	}
}

// diskSize estimates the disk space of t: whole 4 KiB blocks.
func diskSize(t *tree) int64 {
	const block = 4096
	n := int64(len(t.dirs)+1) * block
	for _, f := range t.files {
		n += (f.size + block - 1) / block * block
	}
	return n
}

// workspace checks e against the request's limits and gives the request
// its view of e: a private copy, or with opts.ReadOnly, e itself, in use
// until the Workspace is closed. It takes over the caller's use of e.
func (s *Store) workspace(ctx context.Context, e *entry, opts Options, lim Limits) (*Workspace, error) {
	if err := within(e.tree, lim); err != nil {
		s.release(e)
		return nil, err
	}
	if opts.ReadOnly {
		return &Workspace{repo: e.dir, release: func() { s.release(e) }}, nil
	}
	defer s.release(e)
	if err := s.disk.wait(ctx, e.tree.bytes, "the request's copy of the repository"); err != nil {
		return nil, err
	}
	key := poolKey{e.key, opts.PreserveFileMode}
	if s.pool != nil {
		if k := s.kept(ctx, e, key); k != nil {
			return s.handOut(k.dir, e, key, k.checked), nil
		}
	}
	dir, err := os.MkdirTemp(s.work, "ws-")
	if err != nil {
		s.disk.give(e.tree.bytes)
		return nil, fmt.Errorf("creating the repository workspace: %w", err)
	}
	n := e.tree.bytes
	ws := s.handOut(dir, e, key, time.Time{})
	err = os.Mkdir(ws.tmp, 0o700)
	if err == nil {
		err = os.Mkdir(ws.repo, 0o700)
	}
	if err == nil {
		err = copyTree(ctx, e.tree, e.dir, ws.repo, opts.PreserveFileMode)
	}
	if err != nil {
		_ = removeAll(dir)
		s.disk.give(n)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("copying the repository into its workspace: %w", err)
	}
	ws.handed = time.Now() // the copy is complete: it matches the tree
	return ws, nil
}

// within checks a cached tree, extracted under some request's limits,
// against another request's.
func within(t *tree, lim Limits) error {
	switch {
	case t.count() > lim.MaxFiles:
		return fmt.Errorf("%w: the repository has %d files, more than %d (cmp serve --max-repo-files, counting directories and links)%s",
			ErrLimit, t.count(), lim.MaxFiles, limitHint)
	case t.bytes > lim.MaxBytes:
		return fmt.Errorf("%w: the repository has %d bytes of content, more than %d (cmp serve --max-repo-bytes)%s",
			ErrLimit, t.bytes, lim.MaxBytes, limitHint)
	case t.longest > lim.MaxPathLen:
		return fmt.Errorf("%w: the repository has a path of %d bytes, longer than %d (cmp serve --max-repo-path-length)",
			ErrLimit, t.longest, lim.MaxPathLen)
	}
	return nil
}

// stream reads the repository stream, hashing and counting what it reads.
// It fails if the stream is longer or shorter than its metadata said; it
// is the caller's to check the checksum, with finish.
type stream struct {
	ctx  context.Context
	r    io.Reader
	size int64 // announced
	n    int64 // read so far
	want []byte
	h    hash.Hash
	err  error
}

func (s *stream) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if err := s.ctx.Err(); err != nil {
		s.err = err
		return 0, err
	}
	if s.n == s.size {
		// All announced bytes are in; the stream must end here.
		var one [1]byte
		n, err := s.r.Read(one[:])
		switch {
		case n > 0:
			s.err = fmt.Errorf("%w: the repository stream is longer than the %d bytes its metadata announced", ErrSize, s.size)
		case err == io.EOF:
			return 0, io.EOF
		case err != nil:
			s.err = s.readErr(err)
		default:
			return 0, nil
		}
		return 0, s.err
	}
	if room := s.size - s.n; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := s.r.Read(p)
	s.h.Write(p[:n])
	s.n += int64(n)
	switch {
	case err == io.EOF && s.n < s.size:
		s.err = fmt.Errorf("%w: the repository stream ended after %d bytes; its metadata announced %d", ErrSize, s.n, s.size)
		return n, s.err
	case err == io.EOF:
		return n, nil // the next Read checks the end
	case err != nil:
		s.err = s.readErr(err)
		return n, s.err
	}
	return n, nil
}

func (s *stream) readErr(err error) error {
	return fmt.Errorf("receiving the repository stream after %d of %d bytes: %w", s.n, s.size, err)
}

// finish reads the rest of the stream and checks its checksum.
func (s *stream) finish() error {
	if _, err := io.Copy(io.Discard, s); err != nil {
		return err
	}
	if got := s.h.Sum(nil); !bytes.Equal(got, s.want) {
		return fmt.Errorf("%w: got %x want %x; the repository stream was damaged on the way, or its metadata is wrong",
			ErrChecksum, got, s.want)
	}
	return nil
}
