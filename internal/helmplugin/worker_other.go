//go:build !linux

package helmplugin

import (
	"errors"
	"os"
	"os/exec"
)

// setWorkerProcess: the process attributes of worker_linux.go are Linux's.
func setWorkerProcess(*exec.Cmd) {}

func killWorker(p *os.Process) { _ = p.Kill() }

// addressSpace is unknown here: a render's memory is bounded by the Go
// memory limit only.
func addressSpace() int64 { return 0 }

func setAddressSpaceLimit(int64) (func(), error) {
	return nil, errors.New("RLIMIT_AS is not used on this platform")
}
