//go:build !linux

package hookexec

import (
	"context"
	"errors"
	"fmt"
	"runtime"
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
