//go:build !linux

package tarball

import (
	"errors"
	"fmt"
	"runtime"
	"time"
)

func recyclable(string) error {
	return fmt.Errorf("recycling workspaces on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

func reset(*Workspace, string, *tree, *treeIndex, bool, time.Time) error {
	return errors.ErrUnsupported
}
