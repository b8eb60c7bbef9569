package operator

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Reload on change (Settings.ReloadOnChange): the module directories and
// the global hooks directory are watched; once changes have settled for
// reloadDebounce, the modules whose files changed are reloaded — their
// hooks stopped and forgotten (a queued run of a forgotten hook is
// dropped), then a 'reload all modules' re-reads every module (values,
// schemas, enabled scripts, charts) and configures the changed modules'
// hooks again, as for a module enabled anew (onStartup and
// Synchronization run again). A change under the global hooks directory
// reloads the global hooks: a 'reload global hooks' task reads and
// configures them all again, and only when that succeeds stops the old
// ones (schedules, monitors; their queued runs are dropped) and starts the
// new ones as at start-up — onStartup, their bindings with
// Synchronization — followed by a 'reload all modules'. While the new
// files do not configure, the task fails and is retried (the old global
// hooks keep running).
const (
	reloadDebounce = 500 * time.Millisecond
	// maxWatchedDirs bounds the directories watched.
	maxWatchedDirs = 10_000
)

// watchFiles watches the module and global hooks directories until ctx is
// done. It returns once the watches are set.
func (e *Engine) watchFiles(ctx context.Context) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	roots := absAll(e.s.ModulesDirs())
	global := absPath(e.s.GlobalHooksDir)
	if global != "" {
		roots = append(roots, global)
	}
	watched := map[string]bool{}
	add := func(root string) {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return nil
			case !d.IsDir():
				return nil
			case len(watched) >= maxWatchedDirs:
				return filepath.SkipAll
			case watched[p]:
				return nil
			}
			if err := w.Add(p); err == nil {
				watched[p] = true
			}
			return nil
		})
	}
	for _, r := range roots {
		add(r)
	}
	if len(watched) >= maxWatchedDirs {
		e.log.Warn("reload on change: too many directories; only some are watched", "watched", len(watched))
	}
	go func() {
		defer w.Close()
		dirty := map[string]bool{}
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Has(fsnotify.Create) {
					add(ev.Name) // a new directory: watch it and below
				}
				dirty[ev.Name] = true
				timer.Reset(reloadDebounce)
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				e.log.Warn("reload on change: watching the module directories", "error", err)
			case <-timer.C:
				paths := make([]string, 0, len(dirty))
				for p := range dirty {
					paths = append(paths, p)
				}
				clear(dirty)
				slices.Sort(paths)
				e.filesChanged(paths, global)
			}
		}
	}()
	return nil
}

// filesChanged reloads the modules the changed paths belong to.
func (e *Engine) filesChanged(paths []string, global string) {
	var globalFiles []string
	changed := map[string]bool{}
	other := false
	e.mu.Lock()
	for _, p := range paths {
		if global != "" && within(p, global) {
			globalFiles = append(globalFiles, p)
			continue
		}
		found := false
		for name, ms := range e.mods {
			if within(p, ms.m.Path) {
				changed[name], found = true, true
			}
		}
		if !found {
			other = true // a new module, a MODULES_DIR values.yaml, ...
		}
	}
	var names []string
	for name := range changed {
		names = append(names, name)
		ms := e.mods[name]
		if ms.hooks == nil {
			continue
		}
		e.stopModuleLocked(ms)
		for _, he := range ms.hooks {
			he.stale = true
		}
		ms.hooks = nil
	}
	e.mu.Unlock()
	slices.Sort(names)
	if len(globalFiles) > 0 {
		e.log.Info("global hook files changed: reloading the global hooks", "files", strings.Join(globalFiles, ", "))
		e.record("files changed: reload global hooks")
		if err := e.queues.Add(reloadGlobalHooksTask()); err != nil && !errors.Is(err, context.Canceled) {
			e.log.Error("queueing a reload of the global hooks", "error", err)
		}
	}
	if len(names) == 0 && !other {
		return
	}
	e.log.Info("module files changed: reloading", "modules", strings.Join(names, ", "), "other", other)
	e.record("files changed: reload " + joinNames(names))
	if err := e.queues.Add(reloadAllTask("ModulesChanged")); err != nil && !errors.Is(err, context.Canceled) {
		e.log.Error("queueing a reload", "error", err)
	}
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}
