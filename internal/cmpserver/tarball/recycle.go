package tarball

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"time"
)

// Recycling keeps the private copies of closed Workspaces for later
// requests of the same repository, instead of removing them: see the
// package documentation ("Recycling workspaces") for why, and for what is
// checked before a copy is handed out again.
type Recycling struct {
	// MaxBytes bounds the repository bytes kept in closed workspaces
	// waiting for a request (0: DefaultRecycleBytes); past it, those
	// waiting longest are removed.
	MaxBytes int64
}

// DefaultRecycleBytes is Recycling.MaxBytes when it is 0.
const DefaultRecycleBytes = 2 << 30

// recycleMargin is how far back from the time a workspace was last known
// to match its tree (the start of its last check, or the end of its copy)
// a change time must lie for the file to be taken as unchanged without
// reading it: file systems date changes with a clock that may lag the
// system clock by a scheduler tick, and some keep whole seconds only.
var recycleMargin = 2 * time.Second // a variable for the tests

// recycleWait bounds how long a Receive waits for a workspace being
// checked, rather than making a copy.
const recycleWait = 30 * time.Second

type poolKey struct {
	sum      string
	preserve bool
}

// A kept workspace: a closed private copy, checked, waiting for a
// request of its repository.
type kept struct {
	key   poolKey
	dir   string
	tree  *tree
	bytes int64
	// checked is when its last check started: every file it holds
	// matched the tree then, or was changed since, with a change time
	// after it.
	checked time.Time
	elem    *list.Element // in pool.order
}

// pool holds the kept workspaces; the Store's mutex guards it.
type pool struct {
	rec     Recycling
	max     int64
	idle    map[poolKey][]*kept
	order   list.List // of *kept; the front was kept last
	bytes   int64
	pending map[poolKey]int // workspaces of the key being checked
	waiting map[poolKey]int // Receives waiting for one of those
	changed chan struct{}   // closed and replaced when the pool changes
}

// SetRecycling turns on recycling of the private workspaces of closed
// Workspaces. It fails, leaving it off, on a platform or a file system
// where the checks cannot be trusted (see the package documentation).
// Call it before the Store is used.
func (s *Store) SetRecycling(r Recycling) error {
	if err := recyclable(s.work); err != nil {
		return err
	}
	max := r.MaxBytes
	if max == 0 {
		max = DefaultRecycleBytes
	}
	s.pool = &pool{
		rec:     r,
		max:     max,
		idle:    map[poolKey][]*kept{},
		pending: map[poolKey]int{},
		waiting: map[poolKey]int{},
		changed: make(chan struct{}),
	}
	return nil
}

func (p *pool) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// takeLocked returns a kept workspace of key, or nil.
func (p *pool) takeLocked(key poolKey) *kept {
	list := p.idle[key]
	if len(list) == 0 {
		return nil
	}
	k := list[len(list)-1]
	list[len(list)-1] = nil
	p.idle[key] = list[:len(list)-1]
	if len(p.idle[key]) == 0 {
		delete(p.idle, key)
	}
	p.order.Remove(k.elem)
	p.bytes -= k.bytes
	return k
}

// dropLocked removes the kept workspaces of the checksum sum (its tree
// left the cache) and returns their directories.
func (p *pool) dropLocked(sum string) []string {
	var dirs []string
	for _, preserve := range []bool{false, true} {
		key := poolKey{sum, preserve}
		for k := p.takeLocked(key); k != nil; k = p.takeLocked(key) {
			dirs = append(dirs, k.dir)
		}
	}
	return dirs
}

// kept takes a workspace of e out of the pool for a request, waiting for
// one being checked when there is one no other request waits for.
// It returns nil when there is none.
func (s *Store) kept(ctx context.Context, e *entry, key poolKey) *kept {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pool
	var timeout <-chan time.Time
	for {
		if k := p.takeLocked(key); k != nil {
			if k.tree == e.tree {
				s.stats.Reused++
				return k
			}
			// Kept from an earlier extraction of the same checksum: the
			// tree this request was checked against is e's.
			s.removeLater(k.dir)
			continue
		}
		if p.pending[key] <= p.waiting[key] {
			return nil
		}
		if timeout == nil {
			t := time.NewTimer(recycleWait)
			defer t.Stop()
			timeout = t.C
		}
		p.waiting[key]++
		changed := p.changed
		s.mu.Unlock()
		var stop bool
		select {
		case <-changed:
		case <-ctx.Done():
			stop = true
		case <-timeout:
			stop = true
		}
		s.mu.Lock()
		p.waiting[key]--
		if p.waiting[key] == 0 {
			delete(p.waiting, key)
		}
		if stop {
			return nil
		}
	}
}

// removeLater removes dir in the background; the caller holds s.mu.
func (s *Store) removeLater(dir string) {
	go removeAll(dir)
}

// recycle checks the private workspace w, closed, and keeps it for a
// later request of its repository; it removes it instead when something
// its commands started still runs, when its repository left the cache, or
// when its commands changed it in a way a check cannot undo.
func (s *Store) recycle(w *Workspace) error {
	p := s.pool
	key := w.key
	s.mu.Lock()
	p.pending[key]++
	s.mu.Unlock()
	var e *entry
	checked := time.Now()
	err := func() error {
		if !w.settled {
			return errUnsettled
		}
		if w.busy != nil {
			return fmt.Errorf("%w: %w", errBusy, w.busy)
		}
		s.mu.Lock()
		if e = s.entries[key.sum]; e == nil || e.tree != w.tree {
			e = nil
			s.mu.Unlock()
			return errGone
		}
		e.users++
		idx := e.tree.idx
		s.mu.Unlock()
		if idx == nil {
			idx = newTreeIndex(e.tree)
			s.mu.Lock()
			e.tree.idx = idx
			s.mu.Unlock()
		}
		return reset(w, e.dir, e.tree, idx, key.preserve, w.handed.Add(-recycleMargin))
	}()
	if e != nil {
		s.release(e)
	}

	var victims []string
	s.mu.Lock()
	p.pending[key]--
	if p.pending[key] == 0 {
		delete(p.pending, key)
	}
	switch {
	case err == nil:
		s.stats.Recycled++
		k := &kept{key: key, dir: w.dir, tree: w.tree, bytes: w.tree.bytes, checked: checked}
		k.elem = p.order.PushFront(k)
		p.idle[key] = append(p.idle[key], k)
		p.bytes += k.bytes
		for p.bytes > p.max {
			old := p.order.Back().Value.(*kept)
			list := p.idle[old.key]
			for i, o := range list {
				if o == old {
					p.idle[old.key] = append(list[:i], list[i+1:]...)
					break
				}
			}
			if len(p.idle[old.key]) == 0 {
				delete(p.idle, old.key)
			}
			p.order.Remove(old.elem)
			p.bytes -= old.bytes
			victims = append(victims, old.dir)
		}
	case errors.Is(err, errBusy):
		s.stats.RecycleBusy++
	case errors.Is(err, errUnsettled):
		s.stats.RecycleUnsettled++
	case errors.Is(err, errGone):
		// Evicted: not worth counting apart.
	default:
		s.stats.RecycleChanged++
	}
	p.notifyLocked()
	s.mu.Unlock()
	if err != nil {
		victims = append(victims, w.dir)
	}
	var rerr error
	for _, d := range victims {
		if e := removeAll(d); e != nil && rerr == nil {
			rerr = e
		}
	}
	return rerr
}

var (
	errBusy      = errors.New("a process its commands started may still run")
	errUnsettled = errors.New("closed without Settle")
	errGone      = errors.New("its repository left the cache")
)

// handOut makes the Workspace for a kept workspace, or for a new copy
// in dir; since is when it last matched its tree (the start of its last
// check; now, for a new copy).
func (s *Store) handOut(dir string, e *entry, key poolKey, since time.Time) *Workspace {
	n := e.tree.bytes
	w := &Workspace{dir: dir, repo: filepath.Join(dir, "repo"), tmp: filepath.Join(dir, "tmp"), removed: func() { s.disk.give(n) }, copyOf: e.tree}
	if s.pool != nil {
		w.store, w.key, w.tree = s, key, e.tree
		w.handed = since
	}
	return w
}

// Settle says, before Close, whether anything that was given w may still
// write it. A caller that recycles workspaces ([Store.SetRecycling]) calls
// it once the commands it ran in w have ended: with nil when it has made
// sure that nothing they started still runs (every task killed and gone),
// or with why it could not. Close keeps w for a later request only after
// Settle(nil); otherwise it removes it, counted in [Stats] as
// RecycleBusy, or RecycleUnsettled when Settle was never called.
func (w *Workspace) Settle(busy error) {
	w.settled, w.busy = true, busy
}

// keepOrRemove ends w: recycled when its Store recycles, else removed.
func (w *Workspace) keepOrRemove() error {
	if w.store == nil {
		return removeAll(w.dir)
	}
	return w.store.recycle(w)
}

// A treeIndex says what each path of a tree is, and how many entries
// each directory holds ("" is the root).
type treeIndex struct {
	kind map[string]kind
	kids map[string]int
}

func newTreeIndex(t *tree) *treeIndex {
	idx := &treeIndex{kind: make(map[string]kind, t.count()), kids: make(map[string]int, len(t.dirs)+1)}
	add := func(nodes []node, k kind) {
		for _, n := range nodes {
			idx.kind[n.name] = k
			parent := path.Dir(n.name)
			if parent == "." {
				parent = ""
			}
			idx.kids[parent]++
		}
	}
	add(t.dirs, kindDir)
	add(t.files, kindFile)
	add(t.links, kindLink)
	return idx
}
