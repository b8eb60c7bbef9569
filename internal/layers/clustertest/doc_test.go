// Package clustertest_test renders Apps from a real kube-apiserver and etcd
// (internal/kube/kubetest), and checks the CRDs of deploy/crds against the
// API server. It is a package of its own so that the unit tests of layers
// need nothing installed.
package clustertest_test
