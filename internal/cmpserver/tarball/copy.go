package tarball

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// copyWorkers is how many files copyTree copies at once. Copying is
// mostly system calls (open, copy_file_range, close) that wait on the file
// system, so a few more than the CPUs pay off.
const copyWorkers = 8

// A Workspace is a private directory holding one request's copy of a
// repository. Nothing else reads or writes it; the caller may let a
// command change it at will. Always Close it.
type Workspace struct {
	dir  string
	once sync.Once
	err  error
}

// Dir returns the directory holding the repository: the root of the
// tarball.
func (w *Workspace) Dir() string { return w.dir }

// Close removes the workspace and everything in it, even directories a
// command left without write permission. Closing twice is harmless.
func (w *Workspace) Close() error {
	w.once.Do(func() {
		if err := removeAll(w.dir); err != nil {
			w.err = fmt.Errorf("removing the repository workspace: %w", err)
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

func copyFiles(ctx context.Context, files []node, src, dst string, preserve bool) error {
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
				if err := ctx.Err(); err != nil {
					fail(err)
					return
				}
				f := files[i]
				mode := f.mode
				if !preserve {
					mode = 0o644
				}
				if err := copyFile(src+"/"+f.name, dst+"/"+f.name, f.size, mode); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
