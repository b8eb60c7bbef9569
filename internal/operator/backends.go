package operator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/client-go/dynamic"

	"github.com/strata-dev/strata/internal/operator/config"
	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/kubebind"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/queue"
	"github.com/strata-dev/strata/internal/operator/store"
)

// backends are the engine's stores: the values store (in memory), and the
// three backends with a local and (part 2) a cluster implementation: the
// config store, the release store and the object source.
type backends struct {
	log     *slog.Logger
	values  *store.Store
	config  config.Store
	objects kubebind.ObjectSource
	release releaseStore
	patcher kubePatcher
	// dynamic is the cluster's client for the webhook configuration; nil
	// with the local backends.
	dynamic dynamic.Interface
	cleanup []func()
}

// A kubePatcher applies the operations a hook wrote to
// $KUBERNETES_PATCH_PATH: on the API server with a cluster, nowhere with
// the local backends (logged).
type kubePatcher interface {
	Apply(ctx context.Context, hookLabel string, ops []hook.KubeOperation) error
}

var (
	_ kubePatcher = localPatcher{}
	_ kubePatcher = (*kubebind.LocalSource)(nil)
)

// localPatcher is the kubePatcher of the local backends without
// --objects: there are no objects to apply the operations to, so they are
// logged.
type localPatcher struct{ log *slog.Logger }

func (p localPatcher) Apply(_ context.Context, hookLabel string, ops []hook.KubeOperation) error {
	p.log.Info("hook wrote kubernetes patch operations; without --objects the local backends have no objects to apply them to", "hook", hookLabel, "operations", len(ops))
	return nil
}

// openBackends opens the backends of s: the cluster backends when a
// cluster is configured (see openCluster), else the local ones. oneShot (Render) works on a
// private copy of the config file, so that hooks' config patches never
// reach the user's file.
func openBackends(ctx context.Context, s Settings, log *slog.Logger, oneShot bool) (*backends, error) {
	b := &backends{log: log}
	if err := os.MkdirAll(s.TempDir, 0o700); err != nil {
		return nil, fmt.Errorf("temporary directory %s: %w; set ADDON_OPERATOR_TMP_DIR (--tmp-dir) to a writable directory", s.TempDir, err)
	}
	if !s.UseLocal() && !oneShot {
		if err := openCluster(ctx, s, log, b); err != nil {
			b.close()
			return nil, err
		}
		return b, nil
	}
	if !oneShot {
		logLocal(s, log)
	}
	b.patcher = localPatcher{log: log}
	cfgPath, cfgName := s.ConfigFile, ""
	if oneShot && cfgPath != "" {
		data, err := os.ReadFile(cfgPath)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			cfgPath = ""
		case err != nil:
			return nil, fmt.Errorf("config store %s: %w", cfgPath, err)
		default:
			// Errors name the user's file, not the copy.
			cfgName = cfgPath
			cfgPath = filepath.Join(s.TempDir, "config.yaml")
			if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
				return nil, err
			}
		}
	}
	if cfgPath == "" {
		cfgPath = filepath.Join(s.TempDir, "empty-config.yaml")
		_ = os.Remove(cfgPath)
	}
	b.config = &config.File{Path: cfgPath, Name: cfgName}

	b.objects = noObjects{}
	if s.ObjectsDir != "" {
		src := &kubebind.LocalSource{Dir: s.ObjectsDir, Logger: log}
		if err := src.Start(ctx); err != nil {
			return nil, fmt.Errorf("objects directory (--objects): %w", err)
		}
		// Hooks' kubernetes patches change the objects, in memory: a hook
		// that creates an object feeds the bindings that watch it.
		b.objects, b.patcher = src, src
	}

	stateDir := s.StateDir
	if stateDir == "" {
		stateDir = filepath.Join(s.TempDir, "releases")
	}
	rel, err := newReleaseStore(s, stateDir)
	if err != nil {
		return nil, err
	}
	b.release = rel
	return b, nil
}

// logLocal says at start that every backend is local and where they are,
// and warns when a kubeconfig in the environment is not used: the operator
// reads addon-operator's KUBE_CONFIG, not KUBECONFIG.
func logLocal(s Settings, log *slog.Logger) {
	why := "no cluster configured (KUBE_CONFIG unset, not in a pod)"
	if s.Local {
		why = "--local"
	}
	log.Info("backends: local", "reason", why, "config", cmp.Or(s.ConfigFile, "(none: empty)"),
		"objects", cmp.Or(s.ObjectsDir, "(none)"), "releases", cmp.Or(s.StateDir, filepath.Join(s.TempDir, "releases")))
	if kc := os.Getenv("KUBECONFIG"); kc != "" && !s.Local {
		log.Warn("KUBECONFIG is set but not used: the operator reads addon-operator's KUBE_CONFIG (--kube-config); it runs on local backends. Set KUBE_CONFIG to run on that cluster, or pass --local to silence this",
			"KUBECONFIG", kc)
	}
}

// initValues makes the values store for the discovered modules and loads
// the config store into it. An invalid config stops the start-up, as in
// addon-operator.
func (b *backends) initValues(set *module.Set) error {
	vs, err := store.New(set, store.Options{})
	if err != nil {
		return err
	}
	b.values = vs
	// A store that reports refused content itself (the ConfigMap records
	// an Event) checks it against the schemas and modules as the engine does.
	if c, ok := b.config.(interface {
		SetCheck(func(*config.Config) error)
	}); ok {
		c.SetCheck(vs.ValidateConfig)
	}
	cfg, err := b.config.Load(context.Background())
	if err != nil {
		return fmt.Errorf("config store: %w", err)
	}
	if _, err := vs.SetConfig(cfg); err != nil {
		return fmt.Errorf("config store %s: %w", cfg.Source, err)
	}
	return nil
}

func (b *backends) close() {
	if b == nil {
		return
	}
	for _, f := range b.cleanup {
		f()
	}
}

// enabledSource is the values store, with the engine's view of the
// modules' enabled flags.
func (b *backends) enabledSource(*Engine) module.EnabledSource { return b.values }

// patchConfig writes a hook's config patch back to the config store,
// checked against the config schemas, and merges the result into the
// values store. It returns what changed.
func (b *backends) patchConfig(ctx context.Context, p *jsonPatch) (config.Change, error) {
	old := b.values.Config()
	cfg, err := b.config.Patch(ctx, p, b.values.ValidateConfig)
	if err != nil {
		return config.Change{}, err
	}
	if _, err := b.values.SetConfig(cfg); err != nil {
		return config.Change{}, err
	}
	return config.Diff(old, cfg), nil
}

// watchConfig reports config store changes to fn until ctx is done.
func (b *backends) watchConfig(ctx context.Context, fn func(config.Event)) {
	ch, err := b.config.Watch(ctx)
	if err != nil {
		b.log.Error("watching the config store; its changes will not be seen", "error", err)
		return
	}
	go func() {
		for ev := range ch {
			fn(ev)
		}
	}()
}

// configChanged is step 16: a changed config store.
func (e *Engine) configChanged(ev config.Event) {
	if ev.Err != nil {
		e.m.configValuesErrors.Inc()
		e.record("config store change refused: " + oneLine(ev.Err.Error()))
		e.log.Error("the config store's new content is invalid; the last good config stays", "error", ev.Err)
		return
	}
	if ev.Change.Empty() {
		return
	}
	if _, err := e.back.values.SetConfig(ev.Config); err != nil {
		e.m.configValuesErrors.Inc()
		e.record("config store change refused: " + oneLine(err.Error()))
		e.log.Error("the config store's new content is invalid; the last good config stays", "error", err)
		return
	}
	e.record("config store changed: " + ev.Change.String())
	if ev.Change.ReloadAll() {
		if err := e.queues.Add(reloadAllTask("ConfigChanged")); err != nil {
			e.log.Error("queueing reload all", "error", err)
		}
		return
	}
	var tasks []*queue.Task
	// A module whose maintenance state changed runs again, as
	// addon-operator reruns it: back to Managed, its release is upgraded.
	for _, key := range slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(ev.Change.Modules), ev.Change.Maintenance...)))) {
		m := e.moduleByKey(key)
		if m == nil || !e.moduleEnabled(m.Name) {
			continue
		}
		tasks = append(tasks, moduleRunTask(m.Name, "ConfigChanged", false))
	}
	if err := e.queues.Add(tasks...); err != nil {
		e.log.Error("queueing module runs", "error", err)
	}
}

// noObjects is the object source without objects (no --objects).
type noObjects struct{}

var _ kubebind.ObjectSource = noObjects{}

func (noObjects) Watch(context.Context, string, string, func(kubebind.Change)) ([]*kubebind.Object, error) {
	return nil, nil
}
