//go:build !linux

package hookexec

import (
	"fmt"
	"os"
)

// LandlockABI returns an error matching ErrNoSandbox: Landlock is Linux's.
func LandlockABI() (int, error) {
	return 0, fmt.Errorf("%w: Landlock exists only on Linux", ErrNoSandbox)
}

func (s *Sandbox) command(path string, argv []string) (string, []string, error) {
	_, err := LandlockABI()
	return "", nil, err
}

func runHelper([]string) int {
	_, err := LandlockABI()
	fmt.Fprintf(os.Stderr, "sandbox helper: %v\n", err)
	return 126
}
