package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/strata-dev/strata/internal/layers"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

// Defaults of Manager's fields.
const (
	DefaultLeaderElectionID        = "strata-layers-controller"
	DefaultConcurrency             = 4
	DefaultLeaseDuration           = 15 * time.Second
	DefaultRenewDeadline           = 10 * time.Second
	DefaultRetryPeriod             = 2 * time.Second
	DefaultGracefulShutdownTimeout = 30 * time.Second
	DefaultReconcileTimeout        = time.Minute
	// EventSource is the reporting controller of the Events recorded.
	EventSource = "strata-layers-controller"
)

// inClusterNamespaceFile holds the namespace of a pod's service account.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Manager runs the App controller until its context ends. Set the fields,
// then call Run.
type Manager struct {
	// Config reaches the API server. Its Timeout is ignored (watches are
	// long requests); each reconcile is bounded by ReconcileTimeout.
	Config *rest.Config
	// Namespace restricts the controller to the Apps, Catalogs, ConfigMaps
	// and Secrets of one namespace; empty means every namespace.
	Namespace string
	// SkipCatalog leaves the Catalogs' layers out, and does not watch
	// Catalogs.
	SkipCatalog bool
	// Namespaces are the namespaces an App may read besides its own (the
	// Catalogs', the platform's configuration); the zero value allows its
	// own only. A layer elsewhere fails its App (NamespaceNotAllowed)
	// before anything is read.
	Namespaces layers.Namespaces
	// MaxRenderCost bounds the memory the parsed layers of one App may
	// take, in bytes; an App over it fails alone (ConfigMapMergeFailed or
	// SecretMergeFailed, the layer refused before it is built). Zero means
	// DefaultMaxRenderCost.
	MaxRenderCost int64
	// Concurrency is how many Apps are reconciled at once; zero means
	// DefaultConcurrency.
	Concurrency int
	// ReconcileTimeout bounds one reconcile; zero means
	// DefaultReconcileTimeout.
	ReconcileTimeout time.Duration

	// LeaderElection makes the replicas elect a leader on a Lease: only the
	// leader reconciles, the others keep their caches warm.
	LeaderElection bool
	// LeaderElectionID names the Lease; empty means DefaultLeaderElectionID.
	LeaderElectionID string
	// LeaderElectionNamespace is the Lease's namespace; empty means the
	// pod's own (read from its service account), an error outside a pod.
	LeaderElectionNamespace string
	// Identity is this replica's name in the Lease; empty means
	// HOSTNAME_RANDOM.
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod tune the election;
	// zero means the Default* values.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	// MetricsBindAddress serves /metrics (host:port); empty or "0" means
	// none.
	MetricsBindAddress string
	// HealthProbeBindAddress serves /healthz and /readyz (host:port);
	// empty or "0" means none.
	HealthProbeBindAddress string
	// Registry receives the controller's metrics; nil means
	// controller-runtime's registry, the one served at /metrics with
	// controller-runtime's own.
	Registry prometheus.Registerer
	// GracefulShutdownTimeout bounds the wait for running reconciles when
	// the context ends; zero means DefaultGracefulShutdownTimeout.
	GracefulShutdownTimeout time.Duration

	// Logger receives the logs; nil means none.
	Logger *slog.Logger
}

// SetProcessLogger routes the logs of controller-runtime's and client-go's
// package-level loggers (used by a few of their internals) to log. Call it
// from main or a command, before any client runs: klog's logger may not
// change while clients log. Only the first call in a process has effect.
func SetProcessLogger(log *slog.Logger) {
	processLogger.Do(func() {
		ctrllog.SetLogger(logr.FromSlogHandler(log.Handler()))
		klog.SetSlogLogger(log)
	})
}

// processLogger makes SetProcessLogger take effect once: the loggers it
// sets belong to the process.
var processLogger sync.Once

// Run starts the controller and blocks until ctx ends and the running
// reconciles finish, or until the controller fails (losing the Lease
// included).
func (m *Manager) Run(ctx context.Context) error {
	if m.Config == nil {
		return errors.New("layers controller: Manager.Config is nil")
	}
	slogger := m.Logger
	if slogger == nil {
		slogger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	logger := logr.FromSlogHandler(&stopHandler{Handler: slogger.Handler(), stopping: func() bool { return ctx.Err() != nil }})

	cfg := rest.CopyConfig(m.Config)
	cfg.Timeout = 0
	if cfg.UserAgent == "" || cfg.UserAgent == "strata" {
		cfg.UserAgent = "strata-layers-controller"
	}
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}

	opts := manager.Options{
		Scheme: scheme,
		Logger: logger,
		Cache: cache.Options{
			// The cache holds every ConfigMap and Secret it may serve:
			// leave out the server's bookkeeping.
			DefaultTransform: cache.TransformStripManagedFields(),
		},
		Metrics:                 metricsserver.Options{BindAddress: orZero(m.MetricsBindAddress)},
		HealthProbeBindAddress:  orZero(m.HealthProbeBindAddress),
		GracefulShutdownTimeout: ptr(orDefault(m.GracefulShutdownTimeout, DefaultGracefulShutdownTimeout)),
	}
	if m.Namespace != "" {
		opts.Cache.DefaultNamespaces = map[string]cache.Config{m.Namespace: {}}
	}
	if m.LeaderElection {
		lock, id, err := m.leaseLock(cfg)
		if err != nil {
			return err
		}
		opts.LeaderElection = true
		opts.LeaderElectionResourceLockInterface = lock
		opts.LeaderElectionID = lock.Describe()
		opts.LeaderElectionReleaseOnCancel = true
		opts.LeaseDuration = ptr(orDefault(m.LeaseDuration, DefaultLeaseDuration))
		opts.RenewDeadline = ptr(orDefault(m.RenewDeadline, DefaultRenewDeadline))
		opts.RetryPeriod = ptr(orDefault(m.RetryPeriod, DefaultRetryPeriod))
		slogger = slogger.With("identity", id)
	}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		return fmt.Errorf("layers controller: %w", err)
	}
	if err := m.setup(ctx, mgr); err != nil {
		return fmt.Errorf("layers controller: %w", err)
	}
	watching := m.Namespace
	if watching == "" {
		watching = "all namespaces"
	}
	slogger.Info("starting the layers controller", "apiServer", cfg.Host, "namespace", watching,
		"appsRead", m.Namespaces.String(),
		"leaderElection", m.LeaderElection, "metrics", m.MetricsBindAddress, "probes", m.HealthProbeBindAddress)
	go func() {
		select {
		case <-mgr.Elected():
			if m.LeaderElection {
				slogger.Info("leading: reconciling Apps")
			}
		case <-ctx.Done():
		}
	}()
	grace := orDefault(m.GracefulShutdownTimeout, DefaultGracefulShutdownTimeout)
	if err := startAndStop(ctx, mgr, grace); err != nil {
		return fmt.Errorf("layers controller: %w", err)
	}
	slogger.Info("the layers controller stopped")
	return nil
}

// startAndStop runs mgr until ctx ends. controller-runtime v0.25 never
// returns, spinning, when stopped before its cache has synced
// (kubernetes-sigs/controller-runtime#3440): so the manager's own context
// ends only once the cache has synced, or the grace period has passed.
func startAndStop(ctx context.Context, mgr manager.Manager, grace time.Duration) error {
	mgrCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- mgr.Start(mgrCtx) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	syncCtx, stopSync := context.WithTimeout(context.Background(), grace)
	synced := mgr.GetCache().WaitForCacheSync(syncCtx)
	stopSync()
	cancel()
	wait := grace + 5*time.Second
	if !synced {
		// The manager is stuck in its start-up: it will not return.
		wait = time.Second
	}
	select {
	case err := <-errc:
		return err
	case <-time.After(wait):
		return fmt.Errorf("stopped before its cache synced (%v), the manager did not return within %v", grace, wait)
	}
}

// setup registers the indexes, the health checks and the controller.
func (m *Manager) setup(ctx context.Context, mgr manager.Manager) error {
	reg := m.Registry
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	met, err := newMetrics(reg)
	if err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.App{}, refsIndex, indexApp); err != nil {
		return fmt.Errorf("indexing Apps: %w", err)
	}
	if !m.SkipCatalog {
		if err := idx.IndexField(ctx, &v1alpha1.Catalog{}, refsIndex, indexCatalog); err != nil {
			return fmt.Errorf("indexing Catalogs: %w", err)
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("cache", func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("the cache has not synced yet")
		}
		return nil
	}); err != nil {
		return err
	}

	r := &reconciler{
		client:      mgr.GetClient(),
		scheme:      mgr.GetScheme(),
		source:      cacheSource{reader: mgr.GetCache(), namespace: m.Namespace},
		recorder:    mgr.GetEventRecorder(EventSource),
		metrics:     met,
		skipCatalog: m.SkipCatalog,
		namespaces:  m.Namespaces,
		maxCost:     orDefault(m.MaxRenderCost, DefaultMaxRenderCost),
		now:         time.Now,
	}
	mp := mapper{reader: mgr.GetCache(), skipCatalog: m.SkipCatalog}
	mapTo := func(kind string) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			reqs, err := mp.appsUsing(ctx, kind, o.GetNamespace(), o.GetName())
			if err != nil {
				mgr.GetLogger().Error(err, "finding the Apps that use an object", "kind", kind,
					"namespace", o.GetNamespace(), "name", o.GetName())
			}
			return reqs
		})
	}
	b := builder.ControllerManagedBy(mgr).
		Named("layers-app").
		// Status updates do not change the generation: they need no reconcile.
		For(&v1alpha1.App{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// An output edited or deleted by hand is written again.
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Secret{}).
		Watches(&corev1.ConfigMap{}, mapTo(layers.KindConfigMap), builder.WithPredicates(dataChanged())).
		Watches(&corev1.Secret{}, mapTo(layers.KindSecret), builder.WithPredicates(dataChanged()))
	if !m.SkipCatalog {
		b = b.Watches(&v1alpha1.Catalog{}, mapTo(layers.KindCatalog))
	}
	return b.WithOptions(ctrlcontroller.Options{
		MaxConcurrentReconciles: orDefault(m.Concurrency, DefaultConcurrency),
		ReconciliationTimeout:   orDefault(m.ReconcileTimeout, DefaultReconcileTimeout),
		// The name guards against two controllers of one name in a
		// process; tests run several Managers in one process.
		SkipNameValidation: ptr(true),
	}).Complete(r)
}

// leaseLock builds the Lease lock, with this replica's identity.
func (m *Manager) leaseLock(cfg *rest.Config) (resourcelock.Interface, string, error) {
	ns := m.LeaderElectionNamespace
	if ns == "" {
		data, err := os.ReadFile(inClusterNamespaceFile)
		if err != nil {
			return nil, "", errors.New("leader election needs the Lease's namespace: set --leader-election-namespace (in a pod it defaults to the pod's namespace)")
		}
		ns = strings.TrimSpace(string(data))
	}
	id := m.Identity
	if id == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, "", fmt.Errorf("leader election identity: %w", err)
		}
		id = host + "_" + string(uuid.NewUUID())
	}
	lc := rest.CopyConfig(cfg)
	// One slow request must not cost the Lease.
	lc.Timeout = max(orDefault(m.RenewDeadline, DefaultRenewDeadline)/2, time.Second)
	lc = rest.AddUserAgent(lc, "leader-election")
	coord, err := coordinationv1.NewForConfig(lc)
	if err != nil {
		return nil, "", fmt.Errorf("leader election client: %w", err)
	}
	name := orDefault(m.LeaderElectionID, DefaultLeaderElectionID)
	return &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: name},
		Client:     coord,
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}, id, nil
}

func orZero(addr string) string {
	if addr == "" {
		return "0"
	}
	return addr
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func ptr[T any](v T) *T { return &v }

// stopHandler demotes the error controller-runtime logs when a leader
// stops on purpose ("leader election lost", after the Lease was released)
// to what it is: an Info record that the Lease was released.
type stopHandler struct {
	slog.Handler
	stopping func() bool
}

func (h *stopHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelError && r.Message == "error received after stop sequence was engaged" && h.stopping() {
		lost := false
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "err" && strings.Contains(a.Value.String(), "leader election lost") {
				lost = true
			}
			return !lost
		})
		if lost {
			r = slog.NewRecord(r.Time, slog.LevelInfo, "stopped leading: the Lease is released", r.PC)
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h *stopHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &stopHandler{Handler: h.Handler.WithAttrs(attrs), stopping: h.stopping}
}

func (h *stopHandler) WithGroup(name string) slog.Handler {
	return &stopHandler{Handler: h.Handler.WithGroup(name), stopping: h.stopping}
}
