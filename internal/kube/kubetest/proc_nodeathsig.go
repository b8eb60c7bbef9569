//go:build unix && !linux

package kubetest

import "syscall"

// setDeathSignal does nothing: only Linux has a parent-death signal. Stop
// (or, for Shared, Main) ends the processes.
func setDeathSignal(*syscall.SysProcAttr) {}
