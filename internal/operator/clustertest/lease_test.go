package clustertest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/operator/lease"
)

// replica is one Elector running in this process.
type replica struct {
	el      *lease.Elector
	cancel  context.CancelFunc
	leading chan context.Context // lead's context, once leading
	finish  chan struct{}        // closed to let lead return after its context ends
	done    chan struct{}        // closed when Run returned, with err
	err     error
}

// wait waits for Run to return and returns its error.
func (r *replica) wait(t *testing.T, what string) error {
	t.Helper()
	select {
	case <-r.done:
		return r.err
	case <-time.After(deadline):
		t.Fatalf("%s: Run did not return", what)
		return nil
	}
}

func startReplica(t *testing.T, c *kubetest.Cluster, ns, id string, leaseFor, renew, retry time.Duration) *replica {
	t.Helper()
	el, err := newElector(c, ns, id, leaseFor, renew, retry)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{el: el, cancel: cancel, leading: make(chan context.Context, 1), finish: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = el.Run(ctx, func(lctx context.Context) {
			r.leading <- lctx
			<-lctx.Done()
			<-r.finish // the task in hand
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.finish:
		default:
			close(r.finish)
		}
		select {
		case <-r.done:
		case <-time.After(deadline):
			t.Errorf("replica %s did not stop", id)
		}
	})
	return r
}

func newElector(c *kubetest.Cluster, ns, id string, leaseFor, renew, retry time.Duration) (*lease.Elector, error) {
	return lease.New(lease.Config{
		Client: c.Client.CoordinationV1(), Namespace: ns, Name: "ha-test", Identity: id,
		LeaseDuration: leaseFor, RenewDeadline: renew, RetryPeriod: retry,
	})
}

// Long timing: a takeover before the Lease expires shows it was given up,
// not left to expire; renewals every second.
const longLease, longRenew, retry = 4 * deadline, 3 * deadline, time.Second

// TestElection: of two replicas only one leads; stopped, it keeps the
// Lease until its task in hand is done, then gives it up and the other
// takes over.
func TestElection(t *testing.T) {
	c := kubetest.Shared(t)
	const ns = "lease-election"
	namespace(t, c, ns)
	a := startReplica(t, c, ns, "replica-a", longLease, longRenew, retry)
	b := startReplica(t, c, ns, "replica-b", longLease, longRenew, retry)

	var leader, standby *replica
	var leaderID, standbyID string
	var lctx context.Context
	select {
	case lctx = <-a.leading:
		leader, standby, leaderID, standbyID = a, b, "replica-a", "replica-b"
	case lctx = <-b.leading:
		leader, standby, leaderID, standbyID = b, a, "replica-b", "replica-a"
	case <-time.After(deadline):
		t.Fatal("no replica leads")
	}
	if h := holder(t, c, ns, "ha-test"); h != leaderID {
		t.Fatalf("Lease holder %q, want the leader %s", h, leaderID)
	}
	if !leader.el.IsLeader() || standby.el.IsLeader() {
		t.Errorf("IsLeader: leader %v, standby %v; want true, false", leader.el.IsLeader(), standby.el.IsLeader())
	}
	eventually.Within(t, deadline, "the standby sees the leader", func() (bool, string) {
		return standby.el.Leader() == leaderID, standby.el.Leader()
	})
	select {
	case <-standby.leading:
		t.Fatal("both replicas lead")
	default:
	}

	// Stopped, the leader's context ends; while its task in hand runs it
	// still holds the Lease.
	leader.cancel()
	<-lctx.Done()
	if err := context.Cause(lctx); !errors.Is(err, context.Canceled) {
		t.Errorf("the stopped leader's context ended with %v, want context.Canceled", err)
	}
	if h := holder(t, c, ns, "ha-test"); h != leaderID {
		t.Errorf("Lease holder %q while the leader finishes its task, want %s", h, leaderID)
	}
	close(leader.finish)
	if err := leader.wait(t, "the stopped leader"); err != nil {
		t.Errorf("the stopped leader's Run: %v, want nil", err)
	}
	select {
	case <-standby.leading:
	case <-time.After(deadline):
		t.Fatalf("the standby did not take over the given up Lease (holder %q)", holder(t, c, ns, "ha-test"))
	}
	if h := holder(t, c, ns, "ha-test"); h != standbyID {
		t.Errorf("Lease holder %q, want %s", h, standbyID)
	}
}

// TestElectionLost: a leader whose Lease is taken notices when it fails
// to renew: its context ends with ErrLost and Run returns ErrLost.
func TestElectionLost(t *testing.T) {
	c := kubetest.Shared(t)
	const ns = "lease-lost"
	namespace(t, c, ns)
	r := startReplica(t, c, ns, "only", 8*time.Second, 6*time.Second, retry)
	var sctx context.Context
	select {
	case sctx = <-r.leading:
	case <-time.After(deadline):
		t.Fatal("the only replica does not lead")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	leases := c.Client.CoordinationV1().Leases(ns)
	eventually.Within(t, deadline, "the Lease is taken", func() (bool, string) {
		l, err := leases.Get(ctx, "ha-test", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		thief, secs := "thief", int32(3600)
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &thief, &secs, &now
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	<-sctx.Done()
	if err := context.Cause(sctx); !errors.Is(err, lease.ErrLost) {
		t.Errorf("the leader's context ended with %v, want ErrLost", err)
	}
	close(r.finish)
	if err := r.wait(t, "the leader whose Lease was taken"); !errors.Is(err, lease.ErrLost) {
		t.Errorf("Run of the leader whose Lease was taken: %v, want ErrLost", err)
	}
	if r.el.IsLeader() {
		t.Error("IsLeader after the Lease was lost")
	}
	if h := holder(t, c, ns, "ha-test"); h != "thief" {
		t.Errorf("Lease holder %q, want thief", h)
	}
}

// TestElectionStoppedBeforeLeading: a replica stopped while it campaigns
// returns without leading.
func TestElectionStoppedBeforeLeading(t *testing.T) {
	c := kubetest.Shared(t)
	const ns = "lease-standby"
	namespace(t, c, ns)
	a := startReplica(t, c, ns, "first", longLease, longRenew, retry)
	select {
	case <-a.leading:
	case <-time.After(deadline):
		t.Fatal("the only replica does not lead")
	}
	el, err := newElector(c, ns, "second", longLease, longRenew, retry)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	led := false
	go func() { done <- el.Run(ctx, func(context.Context) { led = true }) }()
	eventually.Within(t, deadline, "the second replica sees the first lead", func() (bool, string) {
		return el.Leader() == "first", el.Leader()
	})
	cancel()
	select {
	case err := <-done:
		if err != nil || led {
			t.Errorf("Run of a stopped standby: %v, led %v; want nil, false", err, led)
		}
	case <-time.After(deadline):
		t.Fatal("a stopped standby's Run did not return")
	}
	if h := holder(t, c, ns, "ha-test"); h != "first" {
		t.Errorf("Lease holder %q, want first", h)
	}
	if err := el.Run(context.Background(), func(context.Context) {}); err == nil {
		t.Error("a second Run: no error")
	}
}

func TestElectorConfig(t *testing.T) {
	c := kubetest.Shared(t)
	for _, tc := range []struct {
		name string
		cfg  lease.Config
	}{
		{"no client", lease.Config{Namespace: "n", Name: "l", Identity: "i", LeaseDuration: 3, RenewDeadline: 2, RetryPeriod: 1}},
		{"no namespace", lease.Config{Client: c.Client.CoordinationV1(), Name: "l", Identity: "i", LeaseDuration: 3, RenewDeadline: 2, RetryPeriod: 1}},
		{"no identity", lease.Config{Client: c.Client.CoordinationV1(), Namespace: "n", Name: "l", LeaseDuration: 3, RenewDeadline: 2, RetryPeriod: 1}},
		{"timing", lease.Config{Client: c.Client.CoordinationV1(), Namespace: "n", Name: "l", Identity: "i", LeaseDuration: 2, RenewDeadline: 2, RetryPeriod: 1}},
	} {
		if _, err := lease.New(tc.cfg); err == nil {
			t.Errorf("%s: New accepted %+v", tc.name, tc.cfg)
		}
	}
}
