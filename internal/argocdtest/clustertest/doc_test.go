//go:build linux

// Package clustertest runs strata under the real Argo CD, end to end: Argo
// CD's repo-server, application controller and ApplicationSet controller
// (hack/testbin/argocd, the release pinned there), an in-memory Redis, a
// real kube-apiserver and etcd (internal/kube/kubetest) holding Argo CD's
// CRDs and ConfigMaps from its install manifests, a git repository served
// on loopback by git's http-backend, and strata's processes beside them:
// `strata cmp serve` sidecars whose sockets the repo-server discovers, and
// `strata generator serve` for the ApplicationSet controller's plugin
// generator. Every check reads the objects the API server holds.
//
// One control plane and one Argo CD serve every test of the package
// (setup); each test keeps to its own Applications and namespaces. The
// package is an integration package: it runs the binaries testbin builds
// (make testbin), never in `make unit`. Linux only (the processes die
// with the test binary by their parent-death signal).
package clustertest
