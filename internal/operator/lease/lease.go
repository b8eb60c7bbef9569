// Package lease elects one leader among an operator's replicas through a
// coordination.k8s.io Lease (client-go's leaderelection), the way
// addon-operator's HA mode does: only the leader works; a leader stopped
// by its context finishes what it does, then gives the Lease up so that a
// standby takes over at once; a leader that loses the Lease stops at once
// and reports it, so that its process exits and restarts clean.
package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLost is the cause of the leader's context when the Lease was lost
// (not renewed in time, or taken), and what Run returns then.
var ErrLost = errors.New("lost the Lease")

// Config is what an Elector needs.
type Config struct {
	// Client reaches the Leases (a clientset's CoordinationV1()).
	Client coordinationv1.LeasesGetter
	// Namespace and Name locate the Lease.
	Namespace, Name string
	// Identity is this replica's name in the Lease; unique per replica.
	Identity string
	// LeaseDuration is how long a standby waits before it takes over a
	// Lease its holder stopped renewing; RenewDeadline how long the leader
	// keeps trying to renew before it gives up; RetryPeriod the pace of
	// both. LeaseDuration > RenewDeadline > RetryPeriod > 0.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Log gets the transitions; nil is slog.Default().
	Log *slog.Logger
	// OnLeading, if set, is told when this replica starts (true) and stops
	// (false) leading.
	OnLeading func(bool)
}

// An Elector campaigns for the Lease and runs the leader's work. Run it
// once.
type Elector struct {
	c      Config
	le     atomic.Pointer[leaderelection.LeaderElector]
	leader atomic.Bool
	once   sync.Once
}

// New checks c and returns an Elector; nothing happens until Run.
func New(c Config) (*Elector, error) {
	switch {
	case c.Client == nil:
		return nil, errors.New("lease: no client")
	case c.Namespace == "" || c.Name == "":
		return nil, fmt.Errorf("lease: namespace %q and name %q must both be set", c.Namespace, c.Name)
	case c.Identity == "":
		return nil, errors.New("lease: empty identity")
	case c.RetryPeriod <= 0 || c.RenewDeadline <= c.RetryPeriod || c.LeaseDuration <= c.RenewDeadline:
		return nil, fmt.Errorf("lease: timing must be lease duration (%s) > renew deadline (%s) > retry period (%s) > 0",
			c.LeaseDuration, c.RenewDeadline, c.RetryPeriod)
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return &Elector{c: c}, nil
}

// Run campaigns until this replica holds the Lease or ctx is done. Once
// leading it calls lead with a context that is cancelled when ctx is done
// (context.Cause: ctx's cause) or when the Lease is lost (cause ErrLost);
// when lead returns, the Lease is given up (its holder cleared, so a
// standby takes over without waiting for it to expire) and Run returns:
// ErrLost if the Lease was lost, else nil. Run never calls lead twice.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context)) error {
	ran := false
	e.once.Do(func() { ran = true })
	if !ran {
		return errors.New("lease: Run called twice")
	}
	// The elector gets its own context, cancelled once lead has returned
	// (or ctx is done before this replica leads): ctx alone would give the
	// Lease up while the leader still finishes its task in hand.
	electCtx, stopElect := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElect()
	var (
		started  = make(chan struct{})
		leadDone = make(chan struct{})
		lost     atomic.Bool
		// client-go starts OnStartedLeading in a goroutine: mu orders it
		// with the end of Run, so that lead either runs before Run
		// returns or not at all.
		mu                  sync.Mutex
		leading, runReturns bool
	)
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.c.Namespace, Name: e.c.Name},
		Client:     e.c.Client,
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.c.Identity},
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		Name:            e.c.Name,
		LeaseDuration:   e.c.LeaseDuration,
		RenewDeadline:   e.c.RenewDeadline,
		RetryPeriod:     e.c.RetryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				mu.Lock()
				if runReturns || lctx.Err() != nil {
					mu.Unlock()
					return
				}
				leading = true
				close(started)
				mu.Unlock()
				defer stopElect()
				defer close(leadDone)
				e.setLeader(true)
				e.c.Log.Info("leading: this replica holds the Lease", "lease", e.c.Namespace+"/"+e.c.Name, "identity", e.c.Identity)
				runCtx, cancel := context.WithCancelCause(ctx)
				defer cancel(nil)
				// lctx ends when the renewals fail (or electCtx, which only
				// this function cancels, after lead).
				stop := context.AfterFunc(lctx, func() {
					if ctx.Err() == nil {
						lost.Store(true)
						cancel(ErrLost)
					}
				})
				defer stop()
				lead(runCtx)
			},
			OnStoppedLeading: func() { e.setLeader(false) },
		},
	})
	if err != nil {
		return fmt.Errorf("lease %s/%s: %w", e.c.Namespace, e.c.Name, err)
	}
	e.le.Store(le)
	// Before this replica leads, ctx ends the campaign; once it leads,
	// lead sees ctx itself and the campaign ends after it.
	go func() {
		select {
		case <-ctx.Done():
			select {
			case <-started:
			default:
				stopElect()
			}
		case <-started:
		case <-electCtx.Done():
		}
	}()
	e.c.Log.Info("campaigning for the Lease", "lease", e.c.Namespace+"/"+e.c.Name, "identity", e.c.Identity)
	le.Run(electCtx)
	mu.Lock()
	runReturns = true
	wasLeading := leading
	mu.Unlock()
	if wasLeading {
		<-leadDone
	}
	if lost.Load() {
		e.c.Log.Error("lost the Lease; stopped leading", "lease", e.c.Namespace+"/"+e.c.Name, "identity", e.c.Identity)
		return ErrLost
	}
	return nil
}

func (e *Elector) setLeader(v bool) {
	if e.leader.Swap(v) != v && e.c.OnLeading != nil {
		e.c.OnLeading(v)
	}
}

// IsLeader reports whether this replica leads now.
func (e *Elector) IsLeader() bool { return e.leader.Load() }

// Leader is the identity of the Lease's holder as this replica last saw
// it; "" when none holds it (or before the first look).
func (e *Elector) Leader() string {
	le := e.le.Load()
	if le == nil {
		return ""
	}
	return le.GetLeader()
}
