package release

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/kube"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	rspb "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/manifest"
)

// Defaults of Helm, as addon-operator's.
const (
	// DefaultHelmTimeout bounds one install, upgrade or uninstall
	// (HELM_TIMEOUT's default).
	DefaultHelmTimeout = 20 * time.Minute
	// DefaultFieldManager is the field manager of the CRDs applied.
	DefaultFieldManager = "strata-operator"
	// DefaultMonitorQPS and DefaultMonitorBurst rate-limit the auto-healing
	// monitor's requests (HELM_MONITOR_KUBE_CLIENT_QPS/BURST).
	DefaultMonitorQPS   = 5
	DefaultMonitorBurst = 10
	// DefaultRequestTimeout bounds one request of the store.
	DefaultRequestTimeout = time.Minute
)

// Release labels and values addon-operator reads.
const (
	// ModuleChecksumLabel is the release storage label holding the
	// module checksum (Rendered.Checksum under Renderer.ModuleChecksum).
	ModuleChecksumLabel = "moduleChecksum"
	// ModuleChecksumValue is where older addon-operator releases kept
	// the checksum: a key of the release's values.
	ModuleChecksumValue = "_addonOperatorModuleChecksum"
	// MaintenanceLabel is addon-operator's maintenance release label;
	// strata's releases are always managed ("false").
	MaintenanceLabel = "maintenance.deckhouse.io/no-resource-reconciliation"
)

// HelmOptions configure a Helm store.
type HelmOptions struct {
	// Namespace holds the releases and is the default namespace of their
	// resources (ADDON_OPERATOR_NAMESPACE). Required.
	Namespace string
	// Driver is the release storage (HELM_DRIVER as Helm reads it):
	// "secret" (also ""), "configmap" or "memory".
	Driver string
	// MaxHistory bounds the revisions kept per release; 0 means
	// DefaultMaxHistory, unless AllHistory is set.
	MaxHistory int
	// AllHistory keeps every revision (HELM_HISTORY_MAX=0 in
	// addon-operator and Helm).
	AllHistory bool
	// Timeout bounds one install, upgrade or uninstall; 0 means
	// DefaultHelmTimeout.
	Timeout time.Duration
	// ResourceLabels are set on every resource of a release (hooks
	// left out, as Helm 3 post-renderers): addon-operator sets
	// ADDON_OPERATOR_CRD_EXTRA_LABELS. The Renderer must hash with the
	// same (Renderer.ResourceLabels).
	ResourceLabels map[string]string
	// FieldManager applies the CRDs; "" means DefaultFieldManager.
	FieldManager string
	// MonitorQPS and MonitorBurst rate-limit Absent in a monitor's sweep
	// (WithSweep); 0 means the defaults.
	MonitorQPS   float32
	MonitorBurst int
	// Logger gets Helm's own log lines (at their levels); nil drops them.
	Logger *slog.Logger
}

// Helm is the release store on the API server: Helm releases, stored as
// Helm stores them (Secrets in Namespace by default), installed and
// upgraded through the Helm SDK. Put runs upgrade --install of the chart
// and values a release was rendered from; a release stuck in a pending
// state (an operation cut off: addon-operator#481) is marked failed first
// so that the upgrade can go on (so is one left uninstalling). Modules' CRDs are applied with
// server-side apply before their chart (ApplyCRDs).
type Helm struct {
	opts   HelmOptions
	getter *restGetter
	cfg    *action.Configuration
	dyn    dynamic.Interface
	meta   metadata.Interface // release storage objects' labels
	mon    metadata.Interface // the monitor's, rate-limited apart

	// caps guards the capabilities and REST mapping Helm actions use:
	// actions hold it for reading, a refresh after CRDs were applied
	// for writing.
	caps sync.RWMutex

	mu   sync.Mutex
	crds map[string]string // module → checksum of the CRDs applied
}

var _ Store = (*Helm)(nil)

// NewHelm opens the Helm store of the cluster rc reaches. rc should have
// no overall timeout; the store bounds its requests.
func NewHelm(ctx context.Context, rc *rest.Config, o HelmOptions) (*Helm, error) {
	if o.Namespace == "" {
		return nil, errors.New("helm releases: the operator's namespace is not set (ADDON_OPERATOR_NAMESPACE)")
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultHelmTimeout
	}
	if o.MaxHistory <= 0 {
		o.MaxHistory = DefaultMaxHistory
	}
	if o.FieldManager == "" {
		o.FieldManager = DefaultFieldManager
	}
	if o.MonitorQPS <= 0 {
		o.MonitorQPS = DefaultMonitorQPS
	}
	if o.MonitorBurst <= 0 {
		o.MonitorBurst = DefaultMonitorBurst
	}
	switch o.Driver {
	case "", "secret", "secrets", "configmap", "configmaps", "memory":
	default:
		return nil, fmt.Errorf("HELM_DRIVER %q: use secret (the default), configmap or memory", o.Driver)
	}
	hc := rest.CopyConfig(rc)
	// Helm's requests take no context: each is bounded by the timeout of
	// a whole operation.
	hc.Timeout = o.Timeout
	dc, err := discovery.NewDiscoveryClientForConfig(hc)
	if err != nil {
		return nil, fmt.Errorf("helm releases: %w", err)
	}
	cached := memory.NewMemCacheClient(dc)
	g := &restGetter{rc: hc, ns: o.Namespace, dc: cached, mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached)}

	var handler slog.Handler = slog.NewTextHandler(io.Discard, nil)
	if o.Logger != nil {
		handler = o.Logger.With("component", "helm").Handler()
	}
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(handler))
	if err := cfg.Init(g, o.Namespace, o.Driver); err != nil {
		return nil, fmt.Errorf("helm releases: %w", err)
	}
	// Helm's kube client makes its clientset on first use, unguarded:
	// made here, before modules of one order install in parallel (a data
	// race otherwise); it also tells at start-up that the API server
	// answers.
	if err := cfg.KubeClient.IsReachable(); err != nil {
		return nil, fmt.Errorf("helm releases: %w", err)
	}
	h := &Helm{opts: o, getter: g, cfg: cfg, crds: map[string]string{}}
	if h.dyn, err = dynamic.NewForConfig(hc); err != nil {
		return nil, fmt.Errorf("helm releases: %w", err)
	}
	if h.meta, err = metadata.NewForConfig(rc); err != nil {
		return nil, fmt.Errorf("helm releases: %w", err)
	}
	mc := rest.CopyConfig(rc)
	mc.QPS, mc.Burst, mc.RateLimiter = o.MonitorQPS, o.MonitorBurst, nil
	if h.mon, err = metadata.NewForConfig(mc); err != nil {
		return nil, fmt.Errorf("helm releases: %w", err)
	}
	if err := h.refresh(ctx); err != nil {
		return nil, err
	}
	return h, nil
}

// refresh reads the cluster's capabilities (version, API versions) again
// and forgets the REST mapping: after CRDs were applied, the chart's
// objects of their kinds resolve.
func (h *Helm) refresh(ctx context.Context) error {
	h.caps.Lock()
	defer h.caps.Unlock()
	h.getter.dc.Invalidate()
	h.getter.mapper.Reset()
	type result struct {
		caps *common.Capabilities
		err  error
	}
	done := make(chan result, 1)
	go func() {
		v, err := h.getter.dc.ServerVersion()
		if err != nil {
			done <- result{err: fmt.Errorf("helm releases: the API server's version: %w", err)}
			return
		}
		set, err := action.GetVersionSet(h.getter.dc)
		if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
			done <- result{err: fmt.Errorf("helm releases: the API server's API versions: %w", err)}
			return
		}
		done <- result{caps: &common.Capabilities{
			APIVersions: set,
			KubeVersion: common.KubeVersion{Version: v.GitVersion, Major: v.Major, Minor: v.Minor},
			HelmVersion: common.DefaultCapabilities.HelmVersion,
		}}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return r.err
		}
		h.cfg.Capabilities = r.caps
		return nil
	case <-ctx.Done():
		return fmt.Errorf("helm releases: reading the cluster's capabilities: %w", context.Cause(ctx))
	}
}

// storage is the resource holding the release records (Secrets or
// ConfigMaps), when the driver keeps them in the cluster.
func (h *Helm) storage() (schema.GroupVersionResource, bool) {
	switch h.cfg.Releases.Name() {
	case driver.SecretsDriverName:
		return schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, true
	case driver.ConfigMapsDriverName:
		return schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, true
	}
	return schema.GroupVersionResource{}, false
}

// last returns the newest revision of a release. With the Secret or
// ConfigMap driver it finds the newest version in the records' labels
// and decodes that record only (Helm's own Last decodes every revision).
func (h *Helm) last(ctx context.Context, name string) (*rspb.Release, error) {
	var (
		ri  any
		err error
	)
	if res, ok := h.storage(); ok {
		version := 0
		opts := metav1.ListOptions{LabelSelector: "owner=helm,name=" + name}
		rctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
		list, lerr := h.meta.Resource(res).Namespace(h.opts.Namespace).List(rctx, opts)
		cancel()
		if lerr != nil {
			return nil, fmt.Errorf("release %s: %w", name, lerr)
		}
		for _, it := range list.Items {
			if v, err := strconv.Atoi(it.Labels["version"]); err == nil && v > version {
				version = v
			}
		}
		if version == 0 {
			return nil, fmt.Errorf("release %s: %w", name, ErrNotFound)
		}
		ri, err = h.cfg.Releases.Get(name, version)
	} else {
		ri, err = h.cfg.Releases.Last(name)
	}
	if err != nil {
		if errors.Is(err, driver.ErrReleaseNotFound) || strings.HasPrefix(err.Error(), "no revision for release") {
			return nil, fmt.Errorf("release %s: %w", name, ErrNotFound)
		}
		return nil, fmt.Errorf("release %s: %w", name, err)
	}
	rel, ok := ri.(*rspb.Release)
	if !ok {
		return nil, fmt.Errorf("release %s: stored as %T, not a Helm v1 release", name, ri)
	}
	return rel, nil
}

// Get returns the newest revision of a release, with its manifest and the
// module checksum it records (the moduleChecksum label, or the older
// _addonOperatorModuleChecksum value).
func (h *Helm) Get(ctx context.Context, name string) (*Release, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rel, err := h.last(ctx, name)
	if err != nil {
		return nil, err
	}
	out := &Release{
		Name: rel.Name, Namespace: rel.Namespace, Revision: rel.Version,
		Checksum: rel.Labels[ModuleChecksumLabel], Manifests: []byte(rel.Manifest),
	}
	if out.Checksum == "" {
		out.Checksum, _ = rel.Config[ModuleChecksumValue].(string)
	}
	if rel.Info != nil {
		out.Status = Status(rel.Info.Status)
		out.Updated = rel.Info.LastDeployed
		out.Description = rel.Info.Description
	}
	h.mu.Lock()
	out.CRDsChecksum = h.crds[name]
	h.mu.Unlock()
	return out, nil
}

// Put runs upgrade --install of the chart and values r was rendered from,
// the module checksum recorded as the release's moduleChecksum label. The
// module's CRDs are applied first. A release whose newest revision is
// pending is recovered first: that revision is marked failed.
func (h *Helm) Put(ctx context.Context, r *Release) error {
	if r.src == nil {
		return fmt.Errorf("release %s: not made by Rendered.Release: nothing to install", r.Name)
	}
	if errs := validation.IsValidLabelValue(r.Checksum); len(errs) > 0 {
		return fmt.Errorf("release %s: checksum %q cannot be a release label (%s): render with Renderer.ModuleChecksum", r.Name, r.Checksum, strings.Join(errs, "; "))
	}
	if len(r.CRDs) > 0 {
		if _, err := h.ApplyCRDs(ctx, r.Name, r.CRDs, r.CRDsChecksum); err != nil {
			return err
		}
	}
	ch, err := r.src.chart()
	if err != nil {
		return fmt.Errorf("release %s: %w", r.Name, err)
	}
	if ch == nil {
		return fmt.Errorf("release %s: the module has no chart", r.Name)
	}
	labels := map[string]string{ModuleChecksumLabel: r.Checksum, MaintenanceLabel: "false"}
	var post labelRenderer
	if len(h.opts.ResourceLabels) > 0 {
		post = labelRenderer(h.opts.ResourceLabels)
	}
	cur, err := h.last(ctx, r.Name)
	switch {
	case errors.Is(err, ErrNotFound):
		cur = nil
	case err != nil:
		return err
	case cur.Info != nil && (cur.Info.Status.IsPending() || cur.Info.Status == rcommon.StatusUninstalling):
		if err := h.recover(cur); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, h.opts.Timeout+DefaultRequestTimeout)
	defer cancel()
	h.caps.RLock()
	defer h.caps.RUnlock()
	var res any
	if cur == nil {
		in := action.NewInstall(h.cfg)
		in.ReleaseName, in.Namespace = r.Name, h.opts.Namespace
		in.Timeout, in.WaitStrategy = h.opts.Timeout, kube.HookOnlyStrategy
		in.SkipCRDs = true // applied by ApplyCRDs
		in.Labels = labels
		in.TakeOwnership = true // as addon-operator: adopt resources applied before the release
		in.DisableOpenAPIValidation = skipClientValidation
		in.Description = r.Description
		if post != nil {
			in.PostRenderer, in.PostRenderStrategy = post, action.PostRenderStrategyNoHooks
		}
		res, err = in.RunWithContext(ctx, ch, r.src.values)
	} else {
		up := action.NewUpgrade(h.cfg)
		up.Install, up.Namespace = true, h.opts.Namespace
		up.Timeout, up.WaitStrategy = h.opts.Timeout, kube.HookOnlyStrategy
		up.SkipCRDs = true
		up.MaxHistory = h.opts.MaxHistory
		if h.opts.AllHistory {
			up.MaxHistory = 0 // Helm: no limit
		}
		up.Labels = labels
		up.TakeOwnership = true
		up.DisableOpenAPIValidation = skipClientValidation
		up.Description = r.Description
		if post != nil {
			up.PostRenderer, up.PostRenderStrategy = post, action.PostRenderStrategyNoHooks
		}
		res, err = up.RunWithContext(ctx, r.Name, ch, r.src.values)
	}
	if err != nil {
		return fmt.Errorf("helm upgrade --install %s: %w", r.Name, err)
	}
	rel, ok := res.(*rspb.Release)
	if !ok {
		return fmt.Errorf("release %s: Helm returned %T, not a Helm v1 release", r.Name, res)
	}
	r.Revision = rel.Version
	if rel.Info != nil {
		r.Status = Status(rel.Info.Status)
		r.Updated = rel.Info.LastDeployed
	}
	return nil
}

// skipClientValidation leaves the validation of a release's objects to the
// API server (Helm sends them with fieldValidation=Strict): Helm's own
// client-side check fetches OpenAPI documents for every release, which
// made installs 3.5 times slower.
const skipClientValidation = true

// recover marks a release's pending (or uninstalling) revision failed:
// its operation was cut off (the process stopped mid-upgrade), and Helm
// refuses any new operation while it is pending.
func (h *Helm) recover(rel *rspb.Release) error {
	was := rel.Info.Status
	rel.SetStatus(rcommon.StatusFailed, fmt.Sprintf("strata-operator: the revision was left %s (its operation was cut off); marked failed so that the release can be upgraded", was))
	if err := h.cfg.Releases.Update(rel); err != nil {
		return fmt.Errorf("release %s: recovering revision %d left %s: %w", rel.Name, rel.Version, was, err)
	}
	if h.opts.Logger != nil {
		h.opts.Logger.Warn("recovered a release left pending", "release", rel.Name, "revision", rel.Version, "status", string(was))
	}
	return nil
}

// Delete uninstalls a release (helm uninstall, no history kept).
func (h *Helm) Delete(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h.caps.RLock()
	defer h.caps.RUnlock()
	un := action.NewUninstall(h.cfg)
	un.Timeout, un.WaitStrategy = h.opts.Timeout, kube.HookOnlyStrategy
	un.IgnoreNotFound = true
	if _, err := un.Run(name); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return fmt.Errorf("helm uninstall %s: %w", name, err)
	}
	h.mu.Lock()
	delete(h.crds, name)
	h.mu.Unlock()
	return nil
}

// List returns the names of the releases in the namespace, in any state.
// With the Secret or ConfigMap driver only the storage objects' labels are
// read.
func (h *Helm) List(ctx context.Context) ([]string, error) {
	res, ok := h.storage()
	if !ok {
		l := action.NewList(h.cfg)
		l.StateMask = action.ListAll
		rels, err := l.Run()
		if err != nil {
			return nil, fmt.Errorf("listing releases: %w", err)
		}
		var out []string
		for _, ri := range rels {
			if rel, ok := ri.(*rspb.Release); ok {
				out = append(out, rel.Name)
			}
		}
		slices.Sort(out)
		return slices.Compact(out), nil
	}
	seen := map[string]bool{}
	opts := metav1.ListOptions{LabelSelector: "owner=helm", Limit: 500}
	for {
		rctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
		list, err := h.meta.Resource(res).Namespace(h.opts.Namespace).List(rctx, opts)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("listing releases in %s: %w", h.opts.Namespace, err)
		}
		for _, it := range list.Items {
			if n := it.Labels["name"]; n != "" {
				seen[n] = true
			}
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			break
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out, nil
}

// An object is a resource of a release manifest.
type object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// Absent returns the resources of a release's newest revision that are
// not in the cluster. It lists the objects' metadata once per kind and
// namespace, so its requests are bounded by the kinds of the release, not
// its objects. Under WithSweep (the monitor) the lists are shared by all
// the releases checked and rate-limited by MonitorQPS/MonitorBurst. An
// object of a kind the API server does not serve (its CRD is gone) is
// absent.
func (h *Helm) Absent(ctx context.Context, name string) ([]string, error) {
	rel, err := h.last(ctx, name)
	if err != nil {
		return nil, err
	}
	type key struct {
		res schema.GroupVersionResource
		ns  string
	}
	groups := map[key][]object{}
	var keys []key
	var absent []string
	for _, doc := range manifest.SplitRendered(rel.Manifest) {
		var o object
		if err := sigsyaml.Unmarshal([]byte(doc), &o); err != nil || o.Kind == "" || o.Metadata.Name == "" {
			continue // comments only, or not an object Helm applied
		}
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err != nil {
			continue
		}
		m, err := h.getter.mapper.RESTMapping(gv.WithKind(o.Kind).GroupKind(), gv.Version)
		if err != nil {
			if meta.IsNoMatchError(err) {
				absent = append(absent, o.Metadata.Namespace+"/"+o.Kind+"/"+o.Metadata.Name)
				continue
			}
			return nil, fmt.Errorf("release %s: %s %s: %w", name, o.APIVersion, o.Kind, err)
		}
		ns := ""
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			if ns = o.Metadata.Namespace; ns == "" {
				ns = h.opts.Namespace
			}
		}
		kk := key{m.Resource, ns}
		if _, ok := groups[kk]; !ok {
			keys = append(keys, kk)
		}
		groups[kk] = append(groups[kk], o)
	}
	// A monitor's sweep goes through the rate-limited client; a module
	// run's check does not wait for it.
	sweep, _ := ctx.Value(sweepKey{}).(*sweepCache)
	client := h.meta
	if sweep != nil {
		client = h.mon
	}
	for _, k := range keys {
		have, err := sweep.names(k.res.String()+"|"+k.ns, func() (map[string]bool, error) {
			return h.names(ctx, client, k.res, k.ns)
		})
		if err != nil {
			return nil, fmt.Errorf("release %s: %w", name, err)
		}
		for _, o := range groups[k] {
			if !have[o.Metadata.Name] {
				absent = append(absent, k.ns+"/"+o.Kind+"/"+o.Metadata.Name)
			}
		}
	}
	slices.Sort(absent)
	return absent, nil
}

// names lists the names of the objects of a resource in a namespace ("":
// cluster-scoped); a resource the API server does not serve has none.
func (h *Helm) names(ctx context.Context, client metadata.Interface, res schema.GroupVersionResource, ns string) (map[string]bool, error) {
	have := map[string]bool{}
	opts := metav1.ListOptions{Limit: 500}
	for {
		rctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
		list, err := client.Resource(res).Namespace(ns).List(rctx, opts)
		cancel()
		if apierrors.IsNotFound(err) {
			return have, nil // the resource type is gone: all absent
		}
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", res.Resource, err)
		}
		for _, it := range list.Items {
			have[it.Name] = true
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return have, nil
		}
	}
}

type sweepKey struct{}

// sweepCache keeps the lists of one sweep.
type sweepCache struct {
	mu    sync.Mutex
	lists map[string]map[string]bool
}

// names returns the cached list of key, listing it the first time; a nil
// cache lists every time.
func (c *sweepCache) names(key string, list func() (map[string]bool, error)) (map[string]bool, error) {
	if c == nil {
		return list()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.lists[key]; ok {
		return l, nil
	}
	l, err := list()
	if err != nil {
		return nil, err
	}
	c.lists[key] = l
	return l, nil
}

// WithSweep returns a context in which Absent lists each kind and
// namespace at most once: for a monitor's sweep over many releases, which
// then costs one request per kind and namespace, not per release.
func WithSweep(ctx context.Context) context.Context {
	return context.WithValue(ctx, sweepKey{}, &sweepCache{lists: map[string]map[string]bool{}})
}

// crdGVR is the resource of CustomResourceDefinitions.
var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// ApplyCRDs applies a module's CRDs (a YAML stream of
// CustomResourceDefinitions) with server-side apply, waits until they are
// established and refreshes the kinds and capabilities Helm knows. CRDs
// already applied with the same checksum by this store are not applied
// again; applied tells whether they were.
func (h *Helm) ApplyCRDs(ctx context.Context, module string, crds []byte, sum string) (applied bool, err error) {
	h.mu.Lock()
	done := sum != "" && h.crds[module] == sum
	h.mu.Unlock()
	if done || len(crds) == 0 {
		return false, nil
	}
	err = h.applyCRDs(ctx, module, crds)
	if err != nil {
		return false, err
	}
	h.mu.Lock()
	h.crds[module] = sum
	h.mu.Unlock()
	return true, nil
}

// Capabilities are the cluster's capabilities, as Helm installs with.
func (h *Helm) Capabilities() *common.Capabilities {
	h.caps.RLock()
	defer h.caps.RUnlock()
	return h.cfg.Capabilities.Copy()
}

func (h *Helm) applyCRDs(ctx context.Context, module string, crds []byte) error {
	docs, err := document.Loader{Limits: document.Limits{MaxBytes: DefaultMaxBytes}}.ParseDocuments(crds, module+" crds")
	if err != nil {
		return fmt.Errorf("module %s: CRDs: %w", module, err)
	}
	var names []string
	for _, d := range docs {
		obj, ok := d.Value.(map[string]any)
		if !ok {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		data, err := json.Marshal(u.Object)
		if err != nil {
			return fmt.Errorf("module %s: CRD %s: %w", module, u.GetName(), err)
		}
		rctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
		_, err = h.dyn.Resource(crdGVR).Patch(rctx, u.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: h.opts.FieldManager, Force: new(true)})
		cancel()
		if err != nil {
			return fmt.Errorf("module %s: applying CRD %s: %w", module, u.GetName(), err)
		}
		names = append(names, u.GetName())
	}
	for _, n := range names {
		if err := h.established(ctx, n); err != nil {
			return fmt.Errorf("module %s: %w", module, err)
		}
	}
	return h.refresh(ctx)
}

// established waits until a CRD is established (or names a conflict).
func (h *Helm) established(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		u, err := h.dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("CRD %s: %w", name, err)
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			switch {
			case cm["type"] == "Established" && cm["status"] == "True":
				return nil
			case cm["type"] == "NamesAccepted" && cm["status"] == "False":
				return fmt.Errorf("CRD %s: names not accepted: %v", name, cm["message"])
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CRD %s: not established: %w", name, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// restGetter gives Helm the clients of one rest.Config.
type restGetter struct {
	rc     *rest.Config
	ns     string
	dc     discovery.CachedDiscoveryInterface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func (g *restGetter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.rc), nil }
func (g *restGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return g.dc, nil
}
func (g *restGetter) ToRESTMapper() (meta.RESTMapper, error)        { return g.mapper, nil }
func (g *restGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig { return clientConfig{g} }

// clientConfig is the kubeconfig Helm's factory reads: the rest.Config
// and the operator's namespace.
type clientConfig struct{ g *restGetter }

func (c clientConfig) RawConfig() (clientcmdapi.Config, error) { return clientcmdapi.Config{}, nil }
func (c clientConfig) ClientConfig() (*rest.Config, error)     { return c.g.ToRESTConfig() }
func (c clientConfig) Namespace() (string, bool, error)        { return c.g.ns, true, nil }
func (c clientConfig) ConfigAccess() clientcmd.ConfigAccess {
	return clientcmd.NewDefaultClientConfigLoadingRules()
}
