//go:build !linux

package tarball

import (
	"context"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
)

// copyFiles copies files from the tree under src into the one under dst,
// whose directories exist, by copyWorkers workers.
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

// createFile creates a new file; it never opens an existing file nor
// follows a symbolic link.
func createFile(name string, mode fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
}

// umask is unknown here: every file gets its mode set explicitly.
func umask() uint32 { return 0o777 }
