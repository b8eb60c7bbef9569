//go:build !linux

package hookexec

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

const openOutputFlags = 0

func setProcessGroup(*exec.Cmd) error {
	return fmt.Errorf("hookexec: running commands on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

func signalGroup(int, syscall.Signal) {}

func waitExited(int) error { return errors.ErrUnsupported }

// maxRSS is not reported on this platform.
func maxRSS(*os.ProcessState) int64 { return 0 }

func setFileSizeLimit(int, int64) error { return errors.ErrUnsupported }

func startLimited(cmd *exec.Cmd, _ int64) error { return cmd.Start() }

// FileSizeLimitMode says how Command.MaxFileSize is applied: not here.
func FileSizeLimitMode() string { return "not applied on " + runtime.GOOS }
