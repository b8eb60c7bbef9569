//go:build unix

package testbin

import (
	"os/exec"
	"syscall"
)

// killGroupOnCancel makes cancelling cmd's context kill its whole process
// group — build.sh and the go build it runs — not just the shell.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
