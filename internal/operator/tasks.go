package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/kubebind"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/queue"
	"github.com/strata-dev/strata/internal/operator/release"
)

// The kinds of tasks, as queue listings show them.
const (
	KindGlobalHookRun        = "GlobalHookRun"
	KindModuleHookRun        = "ModuleHookRun"
	KindEnableGlobalBindings = "EnableGlobalBindings"
	KindReloadGlobalHooks    = "ReloadGlobalHooks"
	KindReloadAll            = "ReloadAllModules"
	KindDiscover             = "DiscoverModules"
	KindModuleRun            = "ModuleRun"
	KindParallelModuleRun    = "ParallelModuleRun"
	KindModuleDelete         = "ModuleDelete"
	KindModulePurge          = "ModulePurge"
	KindConvergeDone         = "ConvergeDone"
)

// hookRun is the payload of a hook run task.
type hookRun struct {
	entry      *hookEntry
	binding    hook.BindingType
	contexts   []hook.BindingContext
	activation string
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

// maxQueuedEventBytes bounds the objects the Event contexts of one queued
// hook run hold: beyond it the run keeps the last state of each object
// (hook.LastStates), rather than a copy per change.
const maxQueuedEventBytes = 16 << 20

type moduleRun struct {
	name       string
	activation string
	// doStartup runs onStartup and Synchronization if not done yet.
	doStartup bool
}

type parallelRun struct {
	names      []string
	activation string
	done       map[string]bool
}

type moduleDelete struct{ name string }
type modulePurge struct{ release string }

type converge struct {
	activation string
	start      time.Time
}

func reloadAllTask(activation string) *queue.Task {
	return &queue.Task{Kind: KindReloadAll, Description: "reload all modules", CompactKey: "reload-all",
		Data: &converge{activation: activation}}
}

func moduleRunTask(name, activation string, startup bool) *queue.Task {
	key := "module-run/" + name
	return &queue.Task{Kind: KindModuleRun, Description: "module " + name + " run", CompactKey: key,
		Data: &moduleRun{name: name, activation: activation, doStartup: startup}}
}

// mergeHookRuns compacts a newer run of a hook into an older queued one:
// their binding contexts combine into one run.
func mergeHookRuns(older, newer *queue.Task) {
	o, ok1 := older.Data.(*hookRun)
	n, ok2 := newer.Data.(*hookRun)
	if !ok1 || !ok2 {
		if om, ok := older.Data.(*moduleRun); ok {
			if nm, ok := newer.Data.(*moduleRun); ok && nm.doStartup {
				om.doStartup = true
			}
		}
		return
	}
	o.contexts = hook.Combine(append(o.contexts, n.contexts...))
	o.reacts = o.reacts || n.reacts
	o.queued += n.queued
	// Folded again only once it has doubled: each merge costs the new
	// contexts, not the whole run.
	if o.queued > max(maxQueuedEventBytes, 2*o.folded) {
		o.contexts = hook.LastStates(o.contexts, maxQueuedEventBytes)
		o.queued = hook.QueuedBytes(o.contexts)
		o.folded = o.queued
	}
}

// handle runs one task.
func (e *Engine) handle(ctx context.Context, t *queue.Task) ([]*queue.Task, error) {
	switch d := t.Data.(type) {
	case *hookRun:
		e.observeWait(t, d)
		return nil, e.runHookTask(ctx, d, t.Queue)
	case *converge:
		switch t.Kind {
		case KindReloadAll:
			return e.reloadAll(d), nil
		case KindDiscover:
			return e.discover(ctx, d)
		case KindConvergeDone:
			e.convergeDone(d)
			return nil, nil
		}
	case *moduleRun:
		return nil, e.runModule(ctx, d.name, d.doStartup, d.activation, nil)
	case *parallelRun:
		return nil, e.runParallel(ctx, d)
	case *moduleDelete:
		return nil, e.deleteModule(ctx, d.name)
	case *modulePurge:
		return nil, e.purge(ctx, d.release)
	case nil:
		switch t.Kind {
		case KindEnableGlobalBindings:
			return e.enableGlobalBindings(ctx)
		case KindReloadGlobalHooks:
			return e.reloadGlobalHooks(ctx)
		}
	}
	return nil, fmt.Errorf("task %s: unknown kind %s", t.Description, t.Kind)
}

func (e *Engine) observeWait(t *queue.Task, d *hookRun) {
	binding := string(d.binding)
	if len(d.contexts) > 0 {
		binding = d.contexts[0].Binding
	}
	e.m.taskWait.WithLabelValues(d.entry.module, d.entry.h.Name, binding, t.Queue).Add(time.Since(t.Enqueued()).Seconds())
}

func (e *Engine) taskDone(t *queue.Task, err error, allowed bool, _ time.Duration) {
	if err == nil {
		return
	}
	if e.oneShot {
		return
	}
	if allowed {
		e.log.Warn("task failed; allowFailure makes it a success", "task", t.Description, "error", err)
		return
	}
	e.log.Error("task failed; it stays at the head of its queue and is retried", "task", t.Description, "queue", t.Queue, "attempt", t.Attempts()+1, "error", err)
	switch d := t.Data.(type) {
	case *moduleRun:
		e.setModuleErr(d.name, err)
	case *moduleDelete:
		e.m.moduleDelErrors.WithLabelValues(d.name).Inc()
	case *converge:
		if t.Kind == KindDiscover {
			e.m.discoverErrors.Inc()
		}
	}
}

func (e *Engine) setModuleErr(name string, err error) {
	e.m.moduleRunErrors.WithLabelValues(name).Inc()
	e.mu.Lock()
	if ms := e.mods[name]; ms != nil {
		ms.lastErr = err.Error()
	}
	e.mu.Unlock()
}

// enableGlobalBindings starts the global hooks' kubernetes monitors and
// schedules (step 2) and returns the Synchronization runs that main
// waits for.
func (e *Engine) enableGlobalBindings(ctx context.Context) ([]*queue.Task, error) {
	e.mu.Lock()
	entries := e.global
	e.mu.Unlock()
	var main []*queue.Task
	for _, he := range entries {
		tasks, err := e.startBindings(ctx, he, "OperatorStartup")
		if err != nil {
			return nil, err
		}
		main = append(main, tasks...)
	}
	return main, nil
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
	kind := KindGlobalHookRun
	if he.module != "" {
		kind = KindModuleHookRun
	}
	return syncTasks(he, kind, activation, e.oneShot, e.queues.Add)
}

// syncTasks makes the Synchronization runs of a hook's kubernetes
// bindings: those that wait for synchronization (all in a one-shot run)
// are returned, to run now in main; the others are handed to add. As
// shell-operator combines the queued runs of one hook that follow a
// grouped Synchronization, a grouped binding's run takes in the
// Synchronizations of the bindings after it that go to the same place,
// and keeps one Group context per group (hook.Combine).
func syncTasks(he *hookEntry, kind, activation string, oneShot bool, add func(...*queue.Task) error) ([]*queue.Task, error) {
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
				prev.Description += ", " + b.Name
				continue
			}
		}
		t := &queue.Task{Kind: kind, Description: fmt.Sprintf("%s kubernetes Synchronization %s", he.label(), b.Name),
			AllowFailure: b.AllowFailure,
			Data:         &hookRun{entry: he, binding: hook.Kubernetes, contexts: []hook.BindingContext{he.syncs[i]}, activation: activation}}
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
	kind := KindGlobalHookRun
	if he.module != "" {
		kind = KindModuleHookRun
	}
	t := &queue.Task{Queue: b.Queue, Kind: kind, AllowFailure: b.AllowFailure,
		Description: fmt.Sprintf("%s kubernetes %s", he.label(), b.Name),
		CompactKey:  "hook/" + he.label() + "/" + b.Queue, Neighbour: true,
		Data: &hookRun{entry: he, binding: hook.Kubernetes, contexts: []hook.BindingContext{ev.Context}, activation: "Kubernetes", reacts: true,
			queued: hook.QueuedBytes([]hook.BindingContext{ev.Context})}}
	if err := e.queues.Add(t); err != nil {
		e.log.Error("queueing a kubernetes event", "hook", he.label(), "error", err)
	}
}

// scheduleFired queues the run of a schedule (steps 11 and 12).
func (e *Engine) scheduleFired(he *hookEntry, sb *hook.ScheduleBinding) {
	kind := KindGlobalHookRun
	if he.module != "" {
		kind = KindModuleHookRun
	}
	t := &queue.Task{Queue: sb.Queue, Kind: kind, AllowFailure: sb.AllowFailure,
		Description: fmt.Sprintf("%s schedule %s", he.label(), sb.Name),
		CompactKey:  "hook/" + he.label() + "/" + sb.Queue, Neighbour: true,
		Data: &hookRun{entry: he, binding: hook.Schedule, contexts: []hook.BindingContext{sb.Context()}, activation: "Schedule", reacts: true}}
	if err := e.queues.Add(t); err != nil {
		e.log.Error("queueing a schedule run", "hook", he.label(), "error", err)
	}
}

// runHookTask runs a queued hook and applies the reaction rules.
func (e *Engine) runHookTask(ctx context.Context, d *hookRun, queueName string) error {
	he := d.entry
	if he.module != "" && !e.moduleEnabled(he.module) {
		// The module was disabled while the run waited.
		return nil
	}
	e.mu.Lock()
	stale := he.stale
	e.mu.Unlock()
	if stale {
		e.log.Info("dropping a queued run of a hook whose files were reloaded", "hook", he.label())
		return nil
	}
	if d.reacts {
		if err := he.limiter.wait(ctx); err != nil {
			return err
		}
	}
	ch, err := e.runHook(ctx, he, d.binding, d.contexts, queueName, d.activation, nil)
	if err != nil || e.oneShot {
		return err
	}
	switch {
	case he.module == "" && d.binding == hook.AfterAll:
		if ch.global || ch.enabled {
			e.record("global values changed by afterAll: reload all modules")
			return e.queues.Add(reloadAllTask("AfterAll"))
		}
	case !d.reacts:
	case he.module == "" && (ch.global || ch.enabled):
		e.record("global values changed: reload all modules")
		return e.queues.Add(reloadAllTask("GlobalValuesChanged"))
	case he.module != "" && ch.module:
		e.record("module " + he.module + " values changed: module run")
		return e.queues.Add(moduleRunTask(he.module, "ModuleValuesChanged", false))
	}
	return nil
}

// reloadAll starts 'reload all modules' (step 3): beforeAll hooks, then
// discovery.
func (e *Engine) reloadAll(d *converge) []*queue.Task {
	d.start = time.Now()
	e.record("reload all modules")
	e.mu.Lock()
	entries := e.global
	e.mu.Unlock()
	tasks := e.lifecycleTasks(entries, hook.BeforeAll, "", d.activation)
	return append(tasks, &queue.Task{Kind: KindDiscover, Description: "discover modules", Data: d})
}

// discover is step 4: which modules run, which are deleted, which
// releases purged; it returns steps 5–8 as tasks.
func (e *Engine) discover(ctx context.Context, d *converge) ([]*queue.Task, error) {
	if err := e.rediscover(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	mods := e.modules.Modules
	e.mu.Unlock()
	decisions, err := e.resolver.Resolve(ctx, mods, e.back.enabledSource(e))
	if err != nil {
		return nil, fmt.Errorf("module discovery: %w", err)
	}
	releases, err := e.back.releaseNames(ctx)
	if err != nil {
		return nil, fmt.Errorf("module discovery: listing releases: %w", err)
	}
	hasRelease := map[string]bool{}
	for _, r := range releases {
		hasRelease[r] = true
	}
	var enabled, disabledNames []string
	var toConfigure []*modState
	var deletes []*queue.Task
	e.mu.Lock()
	for _, dec := range decisions {
		ms := e.mods[dec.Module.Name]
		was := ms.enabled
		ms.enabled, ms.reason = dec.Enabled, dec.Reason
		if dec.Enabled {
			enabled = append(enabled, ms.m.Name)
			if ms.hooks == nil {
				toConfigure = append(toConfigure, ms)
			}
			if !was {
				ms.startedUp = false
			}
			e.m.moduleEnabled.WithLabelValues(ms.m.Name).Set(1)
			continue
		}
		disabledNames = append(disabledNames, ms.m.Name+" ("+dec.Reason+")")
		e.m.moduleEnabled.WithLabelValues(ms.m.Name).Set(0)
		if was || hasRelease[ms.m.Name] {
			if ms.hooks == nil {
				toConfigure = append(toConfigure, ms)
			}
			deletes = append(deletes, &queue.Task{Kind: KindModuleDelete, Description: "module " + ms.m.Name + " delete", Data: &moduleDelete{name: ms.m.Name}})
		}
	}
	e.enabled = enabled
	var purges []*queue.Task
	for _, r := range release.Orphans(releases, func(name string) bool { return e.mods[name] != nil }, e.s.HelmIgnoreRelease) {
		purges = append(purges, &queue.Task{Kind: KindModulePurge, Description: "release " + r + " purge", Data: &modulePurge{release: r}})
	}
	e.recordLocked(fmt.Sprintf("discover: enabled %s; disabled %s", joinNames(enabled), joinNames(disabledNames)))
	e.mu.Unlock()
	if err := e.configureModules(ctx, toConfigure); err != nil {
		return nil, err
	}

	// Step 6 first, as addon-operator's ConvergeModules queues them: the
	// disabled modules' deletes, in reverse module order (a module that
	// comes later, and may depend on an earlier one, goes first).
	slices.Reverse(deletes)
	tasks := deletes
	// Step 5: module runs, the modules of one order together.
	for i := 0; i < len(enabled); {
		order := e.mods[enabled[i]].m.Order
		j := i
		for j < len(enabled) && e.mods[enabled[j]].m.Order == order {
			j++
		}
		if j-i == 1 {
			tasks = append(tasks, moduleRunTask(enabled[i], d.activation, true))
		} else {
			names := append([]string(nil), enabled[i:j]...)
			tasks = append(tasks, &queue.Task{Kind: KindParallelModuleRun,
				Description: "modules " + strings.Join(names, ", ") + " run",
				Data:        &parallelRun{names: names, activation: d.activation, done: map[string]bool{}}})
		}
		i = j
	}
	tasks = append(tasks, purges...)
	e.mu.Lock()
	entries := e.global
	e.mu.Unlock()
	tasks = append(tasks, e.lifecycleTasks(entries, hook.AfterAll, "", d.activation)...)
	tasks = append(tasks, &queue.Task{Kind: KindConvergeDone, Description: "converge done", Data: d})
	return tasks, nil
}

// configureModules discovers and configures the hooks of modules, all
// modules' hooks at once.
func (e *Engine) configureModules(ctx context.Context, mss []*modState) error {
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, ms := range mss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hooks, skipped, err := hook.DiscoverModule(ms.m.Path, ms.m.Key)
			if err == nil {
				for _, p := range skipped {
					e.log.Warn("skipping a file in a module's hooks/ that is not executable", "module", ms.m.Name, "file", p)
				}
				var entries []*hookEntry
				entries, err = e.configure(ctx, hooks, ms.m.Name)
				if err == nil {
					if entries == nil {
						entries = []*hookEntry{}
					}
					e.mu.Lock()
					ms.hooks = entries
					e.mu.Unlock()
					for _, he := range entries {
						e.m.bindingCount.WithLabelValues(ms.m.Name, he.h.Name).Set(float64(bindingCount(he.cfg)))
					}
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("module %s: %w", ms.m.Name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
		return errors.Join(errs...)
	}
	return nil
}

func (e *Engine) moduleEnabled(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	ms := e.mods[name]
	return ms != nil && ms.enabled
}

// runParallel runs the modules of one order at once; a retry runs only
// those that failed. Their history lines are kept per module and added in
// module order, so the history does not depend on timing.
func (e *Engine) runParallel(ctx context.Context, d *parallelRun) error {
	var wg sync.WaitGroup
	errs := make([]error, len(d.names))
	traces := make([][]string, len(d.names))
	for i, name := range d.names {
		if d.done[name] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var tr []string
			errs[i] = e.runModule(ctx, name, true, d.activation, &tr)
			traces[i] = tr
			if errs[i] != nil {
				e.setModuleErr(name, errs[i])
			}
		}()
	}
	wg.Wait()
	e.mu.Lock()
	for i, name := range d.names {
		for _, l := range traces[i] {
			e.recordLocked(l)
		}
		if errs[i] == nil {
			d.done[name] = true
		}
	}
	e.mu.Unlock()
	return errors.Join(errs...)
}

// runModule is a 'module run' (step 5, or 14/15/16 without startup).
// trace, when set, collects its history lines instead of the engine.
func (e *Engine) runModule(ctx context.Context, name string, doStartup bool, activation string, trace *[]string) error {
	start := time.Now()
	e.mu.Lock()
	ms := e.mods[name]
	if ms == nil || !ms.enabled {
		e.mu.Unlock()
		return nil
	}
	hooks := ms.hooks
	startup := doStartup && !ms.startedUp
	e.mu.Unlock()
	rec := func(l string) {
		if trace != nil {
			*trace = append(*trace, l)
		} else {
			e.record(l)
		}
	}
	if startup || !ms.monitorsUp {
		// onStartup hooks, then the kubernetes bindings: Synchronization.
		if startup {
			for _, he := range sortedWith(hooks, hook.OnStartup) {
				if _, err := e.runHook(ctx, he, hook.OnStartup, lifecycleContext(hook.OnStartup), "main", activation, rec); err != nil {
					return err
				}
			}
		}
		for _, he := range sortedByName(hooks) {
			syncs, err := e.startBindings(ctx, he, activation)
			if err != nil {
				return err
			}
			for _, t := range syncs {
				d := t.Data.(*hookRun)
				if _, err := e.runHook(ctx, he, hook.Kubernetes, d.contexts, "main", activation, rec); err != nil {
					if !t.AllowFailure {
						return err
					}
				}
			}
		}
	}
	for _, he := range sortedWith(hooks, hook.BeforeHelm) {
		if _, err := e.runHook(ctx, he, hook.BeforeHelm, lifecycleContext(hook.BeforeHelm), "main", activation, rec); err != nil {
			return err
		}
	}
	if err := e.helm(ctx, ms, activation, rec); err != nil {
		return err
	}
	changed := false
	for _, he := range sortedWith(hooks, hook.AfterHelm) {
		ch, err := e.runHook(ctx, he, hook.AfterHelm, lifecycleContext(hook.AfterHelm), "main", activation, rec)
		if err != nil {
			return err
		}
		changed = changed || ch.module
	}
	e.mu.Lock()
	ms.startedUp = true
	ms.lastErr = ""
	e.mu.Unlock()
	e.m.moduleRunSecs.WithLabelValues(name).Observe(time.Since(start).Seconds())
	if changed && !e.oneShot {
		rec("module " + name + " values changed by afterHelm: module run")
		return e.queues.Add(moduleRunTask(name, "AfterHelm", false))
	}
	return nil
}

func lifecycleContext(b hook.BindingType) []hook.BindingContext {
	return []hook.BindingContext{{BindingType: b, Binding: string(b)}}
}

func sortedWith(hs []*hookEntry, b hook.BindingType) []*hookEntry {
	var sel []*hookEntry
	for _, he := range hs {
		if _, ok := he.cfg.Order(b); ok {
			sel = append(sel, he)
		}
	}
	sortByOrder(sel, b)
	return sel
}

func sortedByName(hs []*hookEntry) []*hookEntry {
	out := append([]*hookEntry(nil), hs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].h.Name < out[j].h.Name })
	return out
}

// deleteModule is step 6: beforeDeleteHelm, the release deleted,
// afterDeleteHelm; the module's monitors and schedules stop.
func (e *Engine) deleteModule(ctx context.Context, name string) error {
	e.mu.Lock()
	ms := e.mods[name]
	hooks := ms.hooks
	e.mu.Unlock()
	for _, he := range sortedWith(hooks, hook.BeforeDeleteHelm) {
		if _, err := e.runHook(ctx, he, hook.BeforeDeleteHelm, lifecycleContext(hook.BeforeDeleteHelm), "main", "ModuleDelete", nil); err != nil {
			return err
		}
	}
	existed, err := e.back.deleteRelease(ctx, name)
	if err != nil {
		return fmt.Errorf("module %s: deleting its release: %w", name, err)
	}
	if existed {
		e.log.Info("helm delete", "module", name, "release", name)
		e.record("module " + name + " release deleted")
	}
	for _, he := range sortedWith(hooks, hook.AfterDeleteHelm) {
		if _, err := e.runHook(ctx, he, hook.AfterDeleteHelm, lifecycleContext(hook.AfterDeleteHelm), "main", "ModuleDelete", nil); err != nil {
			return err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopModuleLocked(ms)
	ms.manifests, ms.helmValues, ms.hasChart = nil, nil, false
	return nil
}

// purge is step 7: a release without a module is deleted.
func (e *Engine) purge(ctx context.Context, release string) error {
	if _, err := e.back.deleteRelease(ctx, release); err != nil {
		return fmt.Errorf("purging release %s (no module has its name): %w", release, err)
	}
	e.record("release " + release + " purged (no module)")
	return nil
}

// convergeDone ends a 'reload all modules'.
func (e *Engine) convergeDone(d *converge) {
	took := time.Since(d.start)
	e.m.convergenceSeconds.WithLabelValues(d.activation).Add(took.Seconds())
	e.m.convergenceTotal.WithLabelValues(d.activation).Inc()
	e.mu.Lock()
	e.recordLocked("converge done")
	first := !e.converged
	e.converged = true
	e.mu.Unlock()
	e.updateWebhooks()
	if first {
		close(e.readyCh)
		e.log.Info("first converge done", "took", took.Round(time.Millisecond))
	}
}

// modulesWithKey returns the module of key, or nil.
func (e *Engine) moduleByKey(key string) *module.Module {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.modules == nil {
		return nil
	}
	return e.modules.ByKey(key)
}

// rediscover finds the modules again at each 'reload all modules' after
// the first (step 3: "first, it finds all modules and their hooks"): new
// modules join, modules whose directory is gone leave (their monitors and
// schedules stop; their releases are purged as releases without a
// module), and the charts are read again.
func (e *Engine) rediscover() error {
	e.mu.Lock()
	first := !e.discovered
	e.discovered = true
	e.mu.Unlock()
	if first {
		return nil // start-up has just discovered them
	}
	set, err := module.Discover(absAll(e.s.ModulesDirs()), absPath(e.s.GlobalHooksDir), e.moduleOptions())
	if err != nil {
		return err
	}
	e.warnModules(set)
	if err := e.back.values.SetModules(set); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	seen := map[string]bool{}
	for _, m := range set.Modules {
		seen[m.Name] = true
		e.back.release.renderer.Forget(m.Path)
		if ms := e.mods[m.Name]; ms != nil {
			if ms.m.Path != m.Path {
				e.back.release.renderer.Forget(ms.m.Path)
			}
			ms.m = m
			continue
		}
		e.mods[m.Name] = &modState{m: m}
	}
	for name, ms := range e.mods {
		if seen[name] {
			continue
		}
		e.stopModuleLocked(ms)
		delete(e.mods, name)
	}
	e.modules = set
	return nil
}

// stopModuleLocked stops a module's schedules and monitors.
func (e *Engine) stopModuleLocked(ms *modState) {
	for _, he := range ms.hooks {
		for _, id := range he.sched {
			e.ticker.Remove(id)
		}
		he.sched, he.started, he.syncs = nil, false, nil
		he.kube = e.kubeSet(he)
	}
	if ms.stopMon != nil {
		ms.stopMon()
		ms.stopMon, ms.monCtx = nil, nil
	}
	ms.monitorsUp, ms.startedUp = false, false
}

// warnModules logs what module discovery skipped: an enabled file
// without an executable bit is not run (addon-operator's rule), which a
// module author may not mean.
func (e *Engine) warnModules(set *module.Set) {
	for _, m := range set.Modules {
		if m.NonExecutableEnabledScript != "" {
			e.log.Warn("not running a module's enabled file that is not executable: the module's enabled flag decides alone; chmod +x it to run it", "module", m.Name, "file", m.NonExecutableEnabledScript)
		}
	}
}
