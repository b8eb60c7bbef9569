package operator

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/queue"
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

// A job is what one queued task does. Each kind of task is a type of its
// own, in its own file (task_*.go), holding what it works on; it is the
// Data of its queue.Task, and the queues' handler runs it through this
// interface.
type job interface {
	// kind is the task's Kind, as queue listings show it.
	kind() string
	// describe is the task's one-line Description, as logs, the debug
	// queue listings and the task history print it.
	describe() string
	// run does the task; it returns the tasks to put at the head of the
	// task's queue.
	run(ctx context.Context, e *Engine, t *queue.Task) ([]*queue.Task, error)
}

// A failureCounter is a job whose failures (not forgiven by
// allowFailure) a metric counts.
type failureCounter interface {
	failed(e *Engine, err error)
}

// A merger is a job that takes in a newer task with its CompactKey while
// it waits in its queue (see queue's package doc).
type merger interface {
	merge(newer any)
}

// newTask is the queue task of j.
func newTask(j job) *queue.Task {
	return &queue.Task{Kind: j.kind(), Description: j.describe(), Data: j}
}

// handle runs one task.
func (e *Engine) handle(ctx context.Context, t *queue.Task) ([]*queue.Task, error) {
	j, ok := t.Data.(job)
	if !ok {
		return nil, fmt.Errorf("task %s: unknown kind %s", t.Description, t.Kind)
	}
	return j.run(ctx, e, t)
}

// mergeTasks compacts a newer task into an older queued one with the same
// CompactKey; a task that does not merge keeps the older one alone.
func mergeTasks(older, newer *queue.Task) {
	if m, ok := older.Data.(merger); ok {
		m.merge(newer.Data)
	}
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
	if f, ok := t.Data.(failureCounter); ok {
		f.failed(e, err)
	}
}

// lifecycleTasks returns a run per global hook of entries with lifecycle
// binding b, sorted by order then name.
func lifecycleTasks(entries []*hookEntry, b hook.BindingType, activation string) []*queue.Task {
	sel := sortedWith(entries, b)
	tasks := make([]*queue.Task, 0, len(sel))
	for _, he := range sel {
		tasks = append(tasks, newTask(&hookRun{entry: he, binding: b, activation: activation, what: string(b),
			contexts: lifecycleContext(b)}))
	}
	return tasks
}

func lifecycleContext(b hook.BindingType) []hook.BindingContext {
	return []hook.BindingContext{{BindingType: b, Binding: string(b)}}
}

// sortedWith returns the hooks of hs with binding b, by their order of b,
// then by name.
func sortedWith(hs []*hookEntry, b hook.BindingType) []*hookEntry {
	var sel []*hookEntry
	for _, he := range hs {
		if _, ok := he.cfg.Order(b); ok {
			sel = append(sel, he)
		}
	}
	sort.SliceStable(sel, func(i, j int) bool {
		oi, _ := sel[i].cfg.Order(b)
		oj, _ := sel[j].cfg.Order(b)
		if oi != oj {
			return oi < oj
		}
		return sel[i].h.Name < sel[j].h.Name
	})
	return sel
}

func sortedByName(hs []*hookEntry) []*hookEntry {
	out := append([]*hookEntry(nil), hs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].h.Name < out[j].h.Name })
	return out
}

func (e *Engine) setModuleErr(name string, err error) {
	e.m.moduleRunErrors.WithLabelValues(name).Inc()
	e.mu.Lock()
	if ms := e.mods[name]; ms != nil {
		ms.lastErr = err.Error()
	}
	e.mu.Unlock()
}

func (e *Engine) moduleEnabled(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	ms := e.mods[name]
	return ms != nil && ms.enabled
}

// moduleByKey returns the module of key, or nil.
func (e *Engine) moduleByKey(key string) *module.Module {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.modules == nil {
		return nil
	}
	return e.modules.ByKey(key)
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
