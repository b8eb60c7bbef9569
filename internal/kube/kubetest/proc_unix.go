//go:build unix

package kubetest

import (
	"errors"
	"os/exec"
	"syscall"
)

func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setDeathSignal(cmd.SysProcAttr)
}

// terminateGroup sends SIGTERM to the process group cmd leads.
func terminateGroup(cmd *exec.Cmd) error {
	return signalGroup(cmd, syscall.SIGTERM)
}

// killGroup sends SIGKILL to the process group cmd leads.
func killGroup(cmd *exec.Cmd) {
	_ = signalGroup(cmd, syscall.SIGKILL) // the group may be gone: nothing to do
}

func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	err := syscall.Kill(-cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}
