//go:build !linux

package tarball

import (
	"context"
	"io/fs"
	"os"
)

// copyFiles copies files from the tree under src into the one under dst,
// whose directories exist, by copyWorkers workers.
func copyFiles(ctx context.Context, files []node, src, dst string, preserve bool) error {
	return copyEach(ctx, files, preserve, func(f node, mode fs.FileMode) error {
		return copyFile(src+"/"+f.name, dst+"/"+f.name, f.size, mode)
	})
}

// createFile creates a new file; it never opens an existing file nor
// follows a symbolic link.
func createFile(name string, mode fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
}

// umask is unknown here: every file gets its mode set explicitly.
func umask() uint32 { return 0o777 }
