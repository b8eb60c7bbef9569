package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/strata-dev/strata/internal/operator/lease"
	"github.com/strata-dev/strata/internal/operator/queue"
)

// ErrLeadershipLost is what Run returns when this replica lost the Lease
// while leading: the process should exit, as addon-operator's does, and
// start clean (a standby leads meanwhile).
var ErrLeadershipLost = lease.ErrLost

// runHA is Run with Settings.HA: serve the probes and /metrics at once,
// campaign for the Lease, and work (backends, hooks, releases) only while
// leading. A standby answers /healthz, and /readyz while some replica
// leads (see standbyReady). When ctx is done the leader lets the task in
// hand finish (up to ShutdownGrace), stops, and gives the Lease up so that
// a standby takes over at once; when the Lease is lost, the task in hand
// is cancelled and Run returns ErrLeadershipLost.
func (e *Engine) runHA(ctx context.Context) error {
	rc, err := e.s.restConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fmt.Errorf("HA: %w", err)
	}
	e.leaderGauge = newLeaderGauge(e.s.MetricsPrefix)
	e.reg.MustRegister(e.leaderGauge)
	t := e.s.electionTiming()
	el, err := lease.New(lease.Config{
		Client:        cs.CoordinationV1(),
		Namespace:     e.s.Namespace,
		Name:          LeaseName,
		Identity:      e.s.Identity(),
		LeaseDuration: t.lease, RenewDeadline: t.renew, RetryPeriod: t.retry,
		Log: e.log,
		OnLeading: func(leading bool) {
			if leading {
				e.leaderGauge.Set(1)
			} else {
				e.leaderGauge.Set(0)
			}
		},
	})
	if err != nil {
		return err
	}
	e.elector.Store(el)

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	if err := e.serve(ctx, &wg, errc); err != nil {
		return err
	}
	// A failing HTTP server ends the campaign or the leadership as a
	// signal would.
	go func() {
		select {
		case err := <-errc:
			cancel(err)
		case <-ctx.Done():
		}
	}()
	var workErr error
	leadErr := el.Run(ctx, func(lctx context.Context) {
		var dwg sync.WaitGroup
		e.serveDebug(lctx, &dwg)
		workErr = e.workLeading(lctx, t.grace)
		dwg.Wait()
	})
	stopped := context.Cause(ctx)
	cancel(nil)
	wg.Wait()
	_ = e.runner.Close()
	switch {
	case leadErr != nil:
		return fmt.Errorf("%w (Lease %s/%s, identity %s): exiting so that this replica restarts clean", leadErr, e.s.Namespace, LeaseName, e.s.Identity())
	case workErr != nil:
		return workErr
	case stopped != nil && !errors.Is(stopped, context.Canceled):
		return stopped
	}
	return nil
}

// workLeading is work while leading: the task in hand runs in its own
// context, so that a stop (ctx done) lets it finish; it is cancelled at
// once when the Lease is lost, or after grace.
func (e *Engine) workLeading(ctx context.Context, grace time.Duration) error {
	taskCtx, cancelTask := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelTask()
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(context.Cause(ctx), lease.ErrLost) {
			e.log.Error("lost the Lease: cancelling the task in hand")
			cancelTask()
			return
		}
		e.log.Info("stopping: the task in hand may finish, then the Lease is given up", "grace", grace.String())
		time.AfterFunc(grace, cancelTask)
	})
	defer stop()
	e.taskCtx = taskCtx
	return e.work(ctx, nil)
}

// handleTask runs a task. In HA mode (taskCtx set) a task is not started
// once the queues stop, and the task in hand runs in taskCtx, which
// outlives a stop (see workLeading).
func (e *Engine) handleTask(ctx context.Context, t *queue.Task) ([]*queue.Task, error) {
	if e.taskCtx == nil {
		return e.handle(ctx, t)
	}
	if err := ctx.Err(); err != nil {
		return nil, err // left queued, as a restart would find it
	}
	return e.handle(e.taskCtx, t)
}

// standbyReady answers /readyz for a standby replica and reports whether
// it did. A standby is ready while another replica holds the Lease, as
// addon-operator's (which asks the leader's /readyz; strata trusts the
// Lease): a standby that never became ready would block a Deployment's
// rolling update (its new pods wait on the old leader) and every
// eviction under the PodDisruptionBudget. Liveness (/healthz) never
// depends on leading.
func (e *Engine) standbyReady(w http.ResponseWriter) bool {
	el := e.elector.Load()
	if el == nil || el.IsLeader() {
		return false
	}
	if l := el.Leader(); l != "" && l != e.s.Identity() {
		_, _ = fmt.Fprintf(w, "standby: %s leads\n", l)
		return true
	}
	http.Error(w, "standby: no replica holds the Lease "+LeaseName+" yet", http.StatusServiceUnavailable)
	return true
}

// newLeaderGauge is the HA mode's gauge of the Lease held.
func newLeaderGauge(prefix string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{
		Name: prefix + "ha_leader",
		Help: "1 while this replica holds the leader election Lease (HA mode), else 0",
	})
}
