package tarball

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// copyWorkers is how many files copyTree copies at once. Copying is
// mostly system calls (open, copy_file_range, close) that wait on the file
// system, so a few more than the CPUs pay off.
const copyWorkers = 4

// A Workspace is one request's view of a repository. Always Close it.
//
// Usually it is a private copy: a directory (Dir) holding the repository,
// and beside it an empty one (TempDir) for the request's temporary files.
// Nothing else reads or writes them; the caller may let a command change
// them at will.
//
// With Options.ReadOnly, Dir is the verified tree in the Store's cache
// itself, kept from eviction until Close; TempDir is "". The caller must
// only read it. The tree has no write permission, which stops a caller
// running as any user but root; the callers that ask for ReadOnly (the
// built-in plugins) open files only for reading, through os.Root.
type Workspace struct {
	dir     string // the workspace, removed by Close; "" when ReadOnly
	repo    string
	tmp     string
	release func() // ends the use of a cached tree, when ReadOnly
	removed func() // gives the copy's bytes back to the disk budget
	once    sync.Once
	err     error

	// With recycling: the Store to give the copy back to, what it is a
	// copy of, when it last matched its tree, and what Settle said.
	store   *Store
	key     poolKey
	tree    *tree
	handed  time.Time
	settled bool
	busy    error

	// copyOf is the tree w's repository is a copy of, and base what the
	// copy costs as Usage charges it (once measured).
	copyOf      *tree
	baseOnce    sync.Once
	base        int64
	baseLargest int64
}

// Dir returns the directory holding the repository: the root of the
// tarball.
func (w *Workspace) Dir() string { return w.repo }

// TempDir returns an empty private directory for the request's temporary
// files, removed with the workspace, or "" for a ReadOnly workspace.
func (w *Workspace) TempDir() string { return w.tmp }

// Close removes the workspace and everything in it, even directories a
// command left without write permission, or for a ReadOnly workspace lets
// the cache evict the tree again. Closing twice is harmless.
func (w *Workspace) Close() error {
	w.once.Do(func() {
		if w.release != nil {
			w.release()
			return
		}
		if err := w.keepOrRemove(); err != nil {
			w.err = fmt.Errorf("removing the repository workspace: %w", err)
		}
		if w.removed != nil {
			w.removed()
		}
	})
	return w.err
}

// removeAll removes dir like os.RemoveAll, first giving its owner full
// access to every directory under it if that is what stops it.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// copyTree copies the tree t extracted in src into dst, an empty
// directory: directories first, then files by copyWorkers workers, then
// symbolic links, then the directories' modes. It never reads a directory
// nor follows a link; t says what to copy. Files and directories get the
// modes of t when preserve is set, else 0644 and 0755.
func copyTree(ctx context.Context, t *tree, src, dst string, preserve bool) error {
	for _, d := range t.dirs {
		if err := os.Mkdir(dst+"/"+d.name, 0o700); err != nil {
			return err
		}
	}
	if err := copyFiles(ctx, t.files, src, dst, preserve); err != nil {
		return err
	}
	for _, l := range t.links {
		if err := os.Symlink(l.target, dst+"/"+l.name); err != nil {
			return err
		}
	}
	for i := len(t.dirs) - 1; i >= 0; i-- {
		d := t.dirs[i]
		mode := d.mode
		if !preserve {
			mode = 0o755
		}
		if err := os.Chmod(dst+"/"+d.name, mode); err != nil {
			return err
		}
	}
	return nil
}

// copyEach runs copyOne on every file, by copyWorkers workers, with the
// mode the file gets (its own with preserve, else 0644); it stops at the
// first error, or when ctx is done, and returns that error.
func copyEach(ctx context.Context, files []node, preserve bool, copyOne func(f node, mode fs.FileMode) error) error {
	var (
		next   atomic.Int64
		failed atomic.Bool
		wg     sync.WaitGroup
		errMu  sync.Mutex
		first  error
	)
	fail := func(err error) {
		errMu.Lock()
		if first == nil {
			first = err
		}
		errMu.Unlock()
		failed.Store(true)
	}
	for range min(copyWorkers, len(files)) {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(files) {
					return
				}
				if i%64 == 0 {
					if err := ctx.Err(); err != nil {
						fail(err)
						return
					}
				}
				mode := files[i].mode
				if !preserve {
					mode = 0o644
				}
				if err := copyOne(files[i], mode); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
