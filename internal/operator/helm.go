package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/strata-dev/strata/internal/operator/config"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/queue"
	"github.com/strata-dev/strata/internal/operator/release"
	"github.com/strata-dev/strata/internal/values"
)

type jsonPatch = values.JSONPatch

// releaseStore joins the release backend and the chart renderer.
type releaseStore struct {
	store    release.Store
	renderer *release.Renderer
	// checkEvery is how often the auto-healing monitor checks the
	// releases when Settings.ReleaseCheck is 0; 0 means
	// ReleaseCheckInterval.
	checkEvery time.Duration
}

func newReleaseStore(s Settings, dir string) (releaseStore, error) {
	labels, err := release.ParseLabels(s.CRDExtraLabels)
	if err != nil {
		return releaseStore{}, fmt.Errorf("ADDON_OPERATOR_CRD_EXTRA_LABELS (--crd-extra-labels): %w", err)
	}
	local := release.NewLocal(dir)
	local.MaxHistory = s.HelmHistoryMax // 0: the store's default; never unbounded locally
	return releaseStore{store: local, renderer: &release.Renderer{Namespace: s.Namespace, CRDExtraLabels: labels, Codecs: s.Codecs}}, nil
}

func (b *backends) releaseNames(ctx context.Context) ([]string, error) {
	return b.release.store.List(ctx)
}

// deleteRelease deletes a module's release; existed tells whether there
// was one.
func (b *backends) deleteRelease(ctx context.Context, name string) (bool, error) {
	names, err := b.release.store.List(ctx)
	if err != nil {
		return false, err
	}
	if !slices.Contains(names, name) {
		return false, nil
	}
	// Deleted even when Get would call it missing (its manifests gone).
	return true, b.release.store.Delete(ctx, name)
}

// helm is the Helm step of a module run: the chart rendered with the
// module's values (x-required-for-helm checked first), stored as a new
// revision only when addon-operator's dedup says so.
func (e *Engine) helm(ctx context.Context, ms *modState, activation string, rec func(string)) error {
	start := time.Now()
	unmanaged := e.back.values.Config().Unmanaged(ms.m.Key)
	if unmanaged {
		e.m.moduleMaintenance.WithLabelValues(ms.m.Name, config.NoResourceReconciliation).Set(1)
	} else {
		e.m.moduleMaintenance.DeleteLabelValues(ms.m.Name, config.NoResourceReconciliation)
	}
	if unmanaged {
		// addon-operator's maintenance mode: the hooks run, an installed
		// release is left as it is (a release not installed yet is).
		names, err := e.back.release.store.List(ctx)
		if err != nil {
			return fmt.Errorf("module %s: listing releases: %w", ms.m.Name, err)
		}
		if slices.Contains(names, ms.m.Name) {
			e.log.Info("helm release is unmanaged, skip helm upgrade", "module", ms.m.Name,
				"reason", ms.m.Key+config.MaintenanceSuffix+": "+config.NoResourceReconciliation)
			rec("module " + ms.m.Name + " helm: unmanaged (" + ms.m.Key + config.MaintenanceSuffix + "), skipped")
			return nil
		}
	}
	vals, err := e.back.values.HelmValues(ms.m.Key)
	if err != nil {
		return err
	}
	r, err := e.back.release.renderer.Render(ctx, ms.m, vals)
	e.m.helmOpSecs.WithLabelValues(ms.m.Name, activation, "template").Observe(time.Since(start).Seconds())
	if err != nil {
		return err
	}
	vjson, _ := json.Marshal(vals)
	e.mu.Lock()
	ms.helmValues = vjson
	ms.manifests = append(append([]byte{}, r.CRDs...), r.Manifests...)
	ms.hasChart = !r.NoChart
	e.mu.Unlock()
	res, err := release.Converge(ctx, e.back.release.store, r)
	if err != nil {
		return fmt.Errorf("module %s: %w", ms.m.Name, err)
	}
	if r.NoChart {
		rec("module " + ms.m.Name + " helm: no chart")
		return nil
	}
	took := time.Since(start).Round(time.Millisecond).String()
	if res.Rendered != r { // rendered again after its CRDs were applied
		e.mu.Lock()
		ms.manifests = append(append([]byte{}, res.Rendered.CRDs...), res.Rendered.Manifests...)
		e.mu.Unlock()
	}
	if !res.Upgraded {
		e.log.Info("helm release unchanged", "module", ms.m.Name, "reason", res.Why, "duration", took)
		rec("module " + ms.m.Name + " helm: " + res.Why)
		return nil
	}
	rel := res.Release
	why := res.Why
	e.m.moduleHelmSecs.WithLabelValues(ms.m.Name, activation).Observe(time.Since(start).Seconds())
	e.log.Info("helm upgrade", "module", ms.m.Name, "release", ms.m.Name, "revision", rel.Revision, "reason", why, "duration", took)
	rec(fmt.Sprintf("module %s helm upgrade: %s (revision %d)", ms.m.Name, why, rel.Revision))
	return nil
}

// renderModule renders a module's chart with its current values, storing
// nothing (the debug API's module render).
func (e *Engine) renderModule(ctx context.Context, m *module.Module) ([]byte, error) {
	vals, err := e.back.values.HelmValues(m.Key)
	if err != nil {
		return nil, err
	}
	r, err := e.back.release.renderer.Render(ctx, m, vals)
	if err != nil {
		return nil, err
	}
	return append(append([]byte{}, r.CRDs...), r.Manifests...), nil
}

// watchReleases polls the release store for the releases of enabled,
// converged modules that went missing (step 15: 'helm resources absent'):
// locally, a release deleted from the store; in a cluster, resources of
// the release deleted.
func (b *backends) watchReleases(ctx context.Context, every time.Duration, fn func(context.Context)) {
	if every <= 0 {
		every = b.release.checkEvery
	}
	if every <= 0 {
		every = ReleaseCheckInterval
	}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fn(ctx)
			}
		}
	}()
}

// ReleaseCheckInterval is how often the local release store is checked
// for releases that went missing; ClusterReleaseCheckInterval the Helm
// releases of a cluster (each check lists the kinds of each release).
const (
	ReleaseCheckInterval        = 5 * time.Second
	ClusterReleaseCheckInterval = 30 * time.Second
)

// releaseMissing queues a module run for each enabled module whose
// release, or resources of it, went missing since its last Helm step,
// counting each absent resource ({prefix}modules_absent_resources_total).
func (e *Engine) releaseMissing(ctx context.Context) {
	e.mu.Lock()
	var check []string
	for _, name := range e.enabled {
		ms := e.mods[name]
		// An unmanaged module's release is left as it is, missing parts
		// included (addon-operator stops its resources monitor).
		if ms != nil && ms.startedUp && ms.hasChart && !e.back.values.Config().Unmanaged(ms.m.Key) {
			check = append(check, name)
		}
	}
	e.mu.Unlock()
	ctx = release.WithSweep(ctx)
	for _, name := range check {
		// A run queued, running or backing off installs the release; the
		// next check looks again once it is done (checking while it runs
		// would see the release it is about to install as absent).
		if e.queues.Has("main", func(t *queueTask) bool { return t.CompactKey == "module-run/"+name }) {
			continue
		}
		absent, err := e.back.release.store.Absent(ctx, name)
		what := ""
		switch {
		case errors.Is(err, release.ErrNotFound):
			absent = []string{"release " + name}
		case err != nil:
			e.log.Warn("checking a release's resources", "module", name, "error", err)
			continue
		case len(absent) == 0:
			continue
		default:
			what = " (" + strings.Join(absent, ", ") + ")"
		}
		for _, a := range absent {
			e.m.absentResources.WithLabelValues(name, a).Inc()
		}
		e.record("module " + name + " release resources absent" + what + ": module run")
		if err := e.queues.Add(moduleRunTask(name, "HelmResourcesAbsent", false)); err != nil {
			e.log.Error("queueing a module run", "module", name, "error", err)
		}
	}
}

type queueTask = queue.Task
