package clustertest_test

import (
	"fmt"
	"time"

	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/layers"
	"github.com/strata-dev/strata/internal/layers/controller"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

// TestLeaderElection runs two Managers for all namespaces with leader
// election: only the Lease holder reconciles; when it stops, the other
// takes over.
func TestLeaderElection(t *testing.T) {
	const ns, shared, leaseNS = "election", "election-shared", "election-lease"
	e := setup(t, ns)
	e.namespace(shared)
	e.namespace(leaseNS)
	elect := func(id string) controller.Manager {
		return controller.Manager{
			LeaderElection: true, LeaderElectionNamespace: leaseNS, LeaderElectionID: "layers-test",
			Identity:      id,
			Namespaces:    layers.Namespaces{Allowed: []string{shared}},
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: time.Second,
		}
	}
	runs := map[string]*running{"replica-a": e.start(elect("replica-a")), "replica-b": e.start(elect("replica-b"))}

	holder := func() string {
		var l coordinationv1.Lease
		err := e.cl.Get(t.Context(), client.ObjectKey{Namespace: leaseNS, Name: "layers-test"}, &l)
		if err != nil || l.Spec.HolderIdentity == nil {
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	var leader string
	eventually.Within(t, deadline, "one replica holds the Lease", func() (bool, string) {
		leader = holder()
		return runs[leader] != nil, fmt.Sprintf("holder %q", leader)
	})
	follower := "replica-a"
	if leader == follower {
		follower = "replica-b"
	}

	// In all-namespaces mode a layer may live in a namespace allowed.
	e.create(configMap(shared, "region", "region: east\n"), configMap(ns, "catalog-values", "a: 1\n"), catalog(ns, "giantswarm", "catalog-values"))
	a := app(ns, "elected", "giantswarm")
	a.Spec.ExtraConfigs = []v1alpha1.ExtraConfig{{Name: "region", Namespace: shared}}
	e.create(a)
	e.waitValues("elected", "a: 1\nregion: east\n", "{}")
	// The outputs are written inside a reconcile, the counter after it.
	eventually.Within(t, deadline, "the leader "+leader+" has reconciled", func() (bool, string) {
		n := counter(t, runs[leader].reg, "strata_layers_reconciles_total", nil)
		return n > 0, fmt.Sprintf("%v reconciles", n)
	})
	if n := counter(t, runs[follower].reg, "strata_layers_reconciles_total", nil); n != 0 {
		t.Errorf("the follower %s reconciled %v times, want 0", follower, n)
	}
	if h := holder(); h != leader {
		t.Errorf("Lease holder %q, want %q", h, leader)
	}

	// The leader stops (releasing the Lease): the follower takes over.
	runs[leader].stop(t)
	eventually.Within(t, deadline, "the follower holds the Lease", func() (bool, string) {
		h := holder()
		return h == follower, fmt.Sprintf("holder %q", h)
	})
	region := &corev1.ConfigMap{}
	region.Namespace, region.Name = shared, "region"
	e.update(region, func() { region.Data["values"] = "region: west\n" })
	e.waitValues("elected", "a: 1\nregion: west\n", "{}")
	eventually.Within(t, deadline, "the new leader "+follower+" has reconciled", func() (bool, string) {
		n := counter(t, runs[follower].reg, "strata_layers_reconciles_total", nil)
		return n > 0, fmt.Sprintf("%v reconciles", n)
	})
}
