package kubetest

import "syscall"

// setDeathSignal kills the child when the process that started it dies —
// a test binary that panics or is killed by go test's -timeout leaves no
// etcd or kube-apiserver behind.
func setDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGKILL
}
