package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/kubebind"
	"github.com/strata-dev/strata/internal/operator/queue"
)

// hookRun is a run of one hook (GlobalHookRun, ModuleHookRun): a
// lifecycle binding's, a Synchronization's, or the queued runs of
// kubernetes events and schedules (steps 9–12).
type hookRun struct {
	entry      *hookEntry
	binding    hook.BindingType
	contexts   []hook.BindingContext
	activation string
	// what follows the hook's label in the description: the lifecycle
	// binding, "kubernetes <binding>", "schedule <binding>", "kubernetes
	// Synchronization <binding>, <binding>...".
	what string
	// reacts is set for event and schedule runs (steps 9–12): their values
	// changes trigger reload-all or module runs. Lifecycle runs (onStartup,
	// Synchronization, beforeAll, beforeHelm...) do not react, except
	// afterAll, handled by its own rule.
	reacts bool
	// queued is hook.QueuedBytes of contexts (set for kubernetes events,
	// summed as runs are merged in); folded is what was left after the
	// last hook.LastStates.
	queued, folded int
}

var (
	_ job    = (*hookRun)(nil)
	_ merger = (*hookRun)(nil)
)

// maxQueuedEventBytes bounds the objects the Event contexts of one queued
// hook run hold: beyond it the run keeps the last state of each object
// (hook.LastStates), rather than a copy per change.
const maxQueuedEventBytes = 16 << 20

func (r *hookRun) kind() string {
	if r.entry.module != "" {
		return KindModuleHookRun
	}
	return KindGlobalHookRun
}

func (r *hookRun) describe() string { return r.entry.label() + " " + r.what }

// merge takes a newer run of the hook in: their binding contexts combine
// into one run.
func (r *hookRun) merge(newer any) {
	n, ok := newer.(*hookRun)
	if !ok {
		return
	}
	r.contexts = hook.Combine(append(r.contexts, n.contexts...))
	r.reacts = r.reacts || n.reacts
	r.queued += n.queued
	// Folded again only once it has doubled: each merge costs the new
	// contexts, not the whole run.
	if r.queued > max(maxQueuedEventBytes, 2*r.folded) {
		r.contexts = hook.LastStates(r.contexts, maxQueuedEventBytes)
		r.queued = hook.QueuedBytes(r.contexts)
		r.folded = r.queued
	}
}

// run runs the queued hook and applies the reaction rules.
func (r *hookRun) run(ctx context.Context, e *Engine, t *queue.Task) ([]*queue.Task, error) {
	r.observeWait(e, t)
	he := r.entry
	if he.module != "" && !e.moduleEnabled(he.module) {
		// The module was disabled while the run waited.
		return nil, nil
	}
	e.mu.Lock()
	stale := he.stale
	e.mu.Unlock()
	if stale {
		e.log.Info("dropping a queued run of a hook whose files were reloaded", "hook", he.label())
		return nil, nil
	}
	if r.reacts {
		if err := he.limiter.wait(ctx); err != nil {
			return nil, err
		}
	}
	ch, err := e.runHook(ctx, he, r.binding, r.contexts, t.Queue, r.activation, nil)
	if err != nil || e.oneShot {
		return nil, err
	}
	switch {
	case he.module == "" && r.binding == hook.AfterAll:
		if ch.global || ch.enabled {
			e.record("global values changed by afterAll: reload all modules")
			return nil, e.queues.Add(reloadAllTask("AfterAll"))
		}
	case !r.reacts:
	case he.module == "" && (ch.global || ch.enabled):
		e.record("global values changed: reload all modules")
		return nil, e.queues.Add(reloadAllTask("GlobalValuesChanged"))
	case he.module != "" && ch.module:
		e.record("module " + he.module + " values changed: module run")
		return nil, e.queues.Add(moduleRunTask(he.module, "ModuleValuesChanged", false))
	}
	return nil, nil
}

// observeWait counts the time the run waited in its queue.
func (r *hookRun) observeWait(e *Engine, t *queue.Task) {
	binding := string(r.binding)
	if len(r.contexts) > 0 {
		binding = r.contexts[0].Binding
	}
	e.m.taskWait.WithLabelValues(r.entry.module, r.entry.h.Name, binding, t.Queue).Add(time.Since(t.Enqueued()).Seconds())
}

// startBindings starts the kubernetes monitors of he (once) and its
// schedules, and returns the Synchronization runs to do now in main;
// those that do not wait for synchronization are queued in their queues.
func (e *Engine) startBindings(ctx context.Context, he *hookEntry, activation string) ([]*queue.Task, error) {
	if !he.started && len(he.cfg.Kubernetes) > 0 {
		mctx := e.monitorCtx(he)
		e.mu.Lock()
		kube := he.kube
		e.mu.Unlock()
		// The monitors live in a context of their own, so that a start
		// that fails half-way (a list the API server refused) stops those
		// that started and the retry starts a fresh set.
		sctx, stop := context.WithCancel(mctx)
		syncs, err := kube.Start(sctx, func(ev kubebind.Event) { e.kubeEvent(he, ev) })
		if err != nil {
			stop()
			e.mu.Lock()
			if he.kube == kube {
				he.kube = e.kubeSet(he)
			}
			e.mu.Unlock()
			return nil, fmt.Errorf("%s: starting kubernetes bindings: %w", he.label(), err)
		}
		context.AfterFunc(mctx, stop)
		he.syncs = syncs
	}
	if !he.started && !e.oneShot {
		for _, sb := range he.cfg.Schedules {
			id := e.ticker.Add(sb.Spec, func(time.Time) { e.scheduleFired(he, sb) })
			he.sched = append(he.sched, id)
		}
	}
	he.started = true
	return syncTasks(he, activation, e.oneShot, e.queues.Add)
}

// syncTasks makes the Synchronization runs of a hook's kubernetes
// bindings: those that wait for synchronization (all in a one-shot run)
// are returned, to run now in main; the others are handed to add. As
// shell-operator combines the queued runs of one hook that follow a
// grouped Synchronization, a grouped binding's run takes in the
// Synchronizations of the bindings after it that go to the same place,
// and keeps one Group context per group (hook.Combine).
func syncTasks(he *hookEntry, activation string, oneShot bool, add func(...*queue.Task) error) ([]*queue.Task, error) {
	var main, queued []*queue.Task
	last := map[string]*queue.Task{} // by destination: the queue's name, or "" for now in main
	for i, b := range he.cfg.Kubernetes {
		if !b.ExecuteHookOnSynchronization || i >= len(he.syncs) {
			continue
		}
		dest := "queue/" + b.Queue
		if b.WaitForSynchronization || oneShot {
			dest = ""
		}
		if prev := last[dest]; prev != nil {
			if d := prev.Data.(*hookRun); d.contexts[0].Group != "" {
				d.contexts = hook.Combine(append(d.contexts, he.syncs[i]))
				d.what += ", " + b.Name
				prev.Description = d.describe()
				continue
			}
		}
		t := newTask(&hookRun{entry: he, binding: hook.Kubernetes, contexts: []hook.BindingContext{he.syncs[i]}, activation: activation,
			what: "kubernetes Synchronization " + b.Name})
		t.AllowFailure = b.AllowFailure
		last[dest] = t
		if dest == "" {
			main = append(main, t)
			continue
		}
		t.Queue = b.Queue
		queued = append(queued, t)
	}
	if len(queued) > 0 {
		if err := add(queued...); err != nil {
			return nil, err
		}
	}
	return main, nil
}

// monitorCtx is the context a hook's monitors live in: the run's, or for
// a module hook the module's, cancelled when it is disabled.
func (e *Engine) monitorCtx(he *hookEntry) context.Context {
	e.mu.Lock()
	defer e.mu.Unlock()
	if he.module != "" {
		if ms := e.mods[he.module]; ms != nil {
			if ms.stopMon == nil {
				ctx, cancel := context.WithCancel(e.runCtx)
				ms.stopMon = cancel
				ms.monitorsUp = true
				ms.monCtx = ctx
			}
			return ms.monCtx
		}
		return e.runCtx
	}
	if e.globalMon == nil {
		e.globalMon, e.stopGlobalMon = context.WithCancel(e.runCtx)
	}
	return e.globalMon
}

// kubeEvent queues the run of a kubernetes event (steps 9 and 10).
func (e *Engine) kubeEvent(he *hookEntry, ev kubebind.Event) {
	if e.oneShot {
		return
	}
	b := ev.Binding
	if ev.Context.Group != "" {
		// A group's context is written with the group's snapshots only,
		// read when the hook runs: its object is not kept while queued.
		ev.Context.Objects = nil
	}
	t := newTask(&hookRun{entry: he, binding: hook.Kubernetes, contexts: []hook.BindingContext{ev.Context}, activation: "Kubernetes", reacts: true,
		what: "kubernetes " + b.Name, queued: hook.QueuedBytes([]hook.BindingContext{ev.Context})})
	t.Queue, t.AllowFailure = b.Queue, b.AllowFailure
	t.CompactKey, t.Neighbour = "hook/"+he.label()+"/"+b.Queue, true
	if err := e.queues.Add(t); err != nil {
		e.log.Error("queueing a kubernetes event", "hook", he.label(), "error", err)
	}
}

// scheduleFired queues the run of a schedule (steps 11 and 12).
func (e *Engine) scheduleFired(he *hookEntry, sb *hook.ScheduleBinding) {
	t := newTask(&hookRun{entry: he, binding: hook.Schedule, contexts: []hook.BindingContext{sb.Context()}, activation: "Schedule", reacts: true,
		what: "schedule " + sb.Name})
	t.Queue, t.AllowFailure = sb.Queue, sb.AllowFailure
	t.CompactKey, t.Neighbour = "hook/"+he.label()+"/"+sb.Queue, true
	if err := e.queues.Add(t); err != nil {
		e.log.Error("queueing a schedule run", "hook", he.label(), "error", err)
	}
}
