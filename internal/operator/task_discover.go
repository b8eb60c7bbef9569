package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/queue"
	"github.com/strata-dev/strata/internal/operator/release"
)

// discover is module discovery (DiscoverModules; step 4): which modules
// run, which are deleted, which releases are purged. It returns steps 5–8
// as tasks.
type discover struct{ c *convergence }

var (
	_ job            = (*discover)(nil)
	_ failureCounter = (*discover)(nil)
)

func (d *discover) kind() string              { return KindDiscover }
func (d *discover) describe() string          { return "discover modules" }
func (d *discover) failed(e *Engine, _ error) { e.m.discoverErrors.Inc() }

func (d *discover) run(ctx context.Context, e *Engine, _ *queue.Task) ([]*queue.Task, error) {
	if err := d.rediscover(e); err != nil {
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
			deletes = append(deletes, newTask(&moduleDelete{name: ms.m.Name}))
		}
	}
	e.enabled = enabled
	var purges []*queue.Task
	for _, r := range release.Orphans(releases, func(name string) bool { return e.mods[name] != nil }, e.s.HelmIgnoreRelease) {
		purges = append(purges, newTask(&modulePurge{release: r}))
	}
	e.recordLocked(fmt.Sprintf("discover: enabled %s; disabled %s", joinNames(enabled), joinNames(disabledNames)))
	e.mu.Unlock()
	if err := configureModules(ctx, e, toConfigure); err != nil {
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
			tasks = append(tasks, moduleRunTask(enabled[i], d.c.activation, true))
		} else {
			names := append([]string(nil), enabled[i:j]...)
			tasks = append(tasks, newTask(newParallelRun(names, d.c.activation)))
		}
		i = j
	}
	tasks = append(tasks, purges...)
	e.mu.Lock()
	entries := e.global
	e.mu.Unlock()
	tasks = append(tasks, lifecycleTasks(entries, hook.AfterAll, d.c.activation)...)
	tasks = append(tasks, newTask(&convergeDone{c: d.c}))
	return tasks, nil
}

// rediscover finds the modules again at each 'reload all modules' after
// the first (step 3: "first, it finds all modules and their hooks"): new
// modules join, modules whose directory is gone leave (their monitors and
// schedules stop; their releases are purged as releases without a
// module), and the charts are read again.
func (d *discover) rediscover(e *Engine) error {
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

// configureModules discovers and configures the hooks of modules, all
// modules' hooks at once.
func configureModules(ctx context.Context, e *Engine, mss []*modState) error {
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
