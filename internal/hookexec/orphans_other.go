//go:build !linux

package hookexec

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"time"
)

var processStart = time.Now()

// Now returns the current Mark.
func Now() Mark { return Mark(time.Since(processStart)) }

// AdoptOrphans needs Linux.
func AdoptOrphans(context.Context) error {
	return fmt.Errorf("hookexec: adopting orphans on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// Survivors needs Linux.
func Survivors(Mark) (int, error) {
	return 0, fmt.Errorf("hookexec: looking for surviving processes on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// Namespaces needs Linux.
func Namespaces() error {
	return fmt.Errorf("hookexec: namespaces on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

func setNamespaces(*syscall.SysProcAttr) {}

func nsRefused(error) bool { return false }

// Close needs Linux.
func (t *Tracker) Close() error {
	return fmt.Errorf("%w: tracking processes on %s: %w", ErrSurvivor, runtime.GOOS, errors.ErrUnsupported)
}

func ipcStarted() {}
func ipcEnded()   {}
