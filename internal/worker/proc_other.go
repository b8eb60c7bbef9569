//go:build !linux

package worker

import (
	"errors"
	"os"
	"os/exec"
)

// setProcess: the process attributes of proc_linux.go are Linux's.
func setProcess(*exec.Cmd) {}

func kill(p *os.Process) { _ = p.Kill() }

// addressSpace is unknown here: a request's memory is bounded by the Go
// memory limit only.
func addressSpace() int64 { return 0 }

func setAddressSpaceLimit(int64) (func(), error) {
	return nil, errors.New("RLIMIT_AS is not used on this platform")
}
