//go:build !unix

package kubetest

import "os/exec"

func setProcAttr(*exec.Cmd) {}

func terminateGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }

func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() } // it may be gone already
