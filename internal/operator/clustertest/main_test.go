// Package clustertest_test checks the operator on a real control plane
// (internal/kube/kubetest): leader election and failover, and the RBAC of
// deploy/operator. It is an integration package: `make unit` skips it.
package clustertest_test

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/strata-dev/strata/internal/kube/kubetest"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// deadline bounds every wait: generous, since only a broken operator takes
// it, and a loaded machine must not fail a correct one.
const deadline = 90 * time.Second

// namespace creates ns on c (or finds it there).
func namespace(t *testing.T, c *kubetest.Cluster, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// holder is the holder of Lease ns/name; "" when none holds it or there
// is no Lease yet.
func holder(t *testing.T, c *kubetest.Cluster, ns, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	l, err := c.Client.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
