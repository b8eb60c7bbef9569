//go:build !unix

package testbin

import "os/exec"

// killGroupOnCancel leaves cmd's default: cancelling kills the shell only.
func killGroupOnCancel(*exec.Cmd) {}
