//go:build !linux

package hookexec

import (
	"fmt"
	"os/exec"
)

// LandlockABI returns an error matching ErrNoSandbox: Landlock is Linux's.
func LandlockABI() (int, error) {
	return 0, fmt.Errorf("%w: Landlock exists only on Linux", ErrNoSandbox)
}

func (s *Sandbox) start(*exec.Cmd, int64) error {
	_, err := LandlockABI()
	return err
}
