package operator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/strata-dev/strata/internal/operator/debug"
	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/hookmetrics"
	"github.com/strata-dev/strata/internal/operator/kubebind"
	"github.com/strata-dev/strata/internal/operator/lease"
	"github.com/strata-dev/strata/internal/operator/module"
	"github.com/strata-dev/strata/internal/operator/queue"
	"github.com/strata-dev/strata/internal/operator/schedule"
	"github.com/strata-dev/strata/internal/operator/store"
	"github.com/strata-dev/strata/internal/operator/webhook"
	"github.com/strata-dev/strata/internal/stamp"
)

// MaxHistory bounds the lifecycle history the engine keeps.
const MaxHistory = 10000

// An Engine is one addon operator. Build it with New, run it with Run (or
// Render for one converge).
type Engine struct {
	s   Settings
	log *slog.Logger

	runner   *hook.Runner
	resolver *module.Resolver
	queues   *queue.Set
	reg      *prometheus.Registry
	m        *metrics
	hookMets *hookmetrics.Collector
	objects  kubebind.ObjectSource
	ticker   *schedule.Ticker
	back     *backends
	webhooks *webhook.Manager // nil with the local backends

	// oneShot makes the engine stop scheduling reactions (Render).
	oneShot bool

	mu      sync.Mutex
	runCtx  context.Context // the context of Run: monitors live in it
	modules *module.Set
	global  []*hookEntry
	// globalMon is the context of the global hooks' kubernetes monitors,
	// cancelled by stopGlobalMon when the global hooks are reloaded.
	globalMon     context.Context
	stopGlobalMon context.CancelFunc
	mods          map[string]*modState // by module name
	enabled       []string             // enabled modules, in order
	history       []string
	converged     bool
	discovered    bool // the first discovery after start-up was skipped
	readyCh       chan struct{}

	// HA (ha.go): the elector while campaigning or leading, and the
	// context the task in hand runs in (nil: the queue's own).
	elector     atomic.Pointer[lease.Elector]
	taskCtx     context.Context
	leaderGauge prometheus.Gauge
}

// hookEntry is a hook, its configuration and its bindings' state.
type hookEntry struct {
	h      *hook.Hook
	cfg    *hook.Config
	module string // "" for a global hook
	kube   *kubebind.Set
	// syncs are the Synchronization contexts of the started monitors,
	// nil until they start.
	syncs   []hook.BindingContext
	started bool
	sched   []int
	limiter *limiter
	// stale is set when the hook was reloaded (its module's files or the
	// global hook files changed): a queued run of it is dropped.
	stale bool
}

func (he *hookEntry) label() string {
	if he.module == "" {
		return "global " + he.h.Name
	}
	return "module " + he.module + " " + he.h.Name
}

// modState is what the engine knows of a module.
type modState struct {
	m       *module.Module
	hooks   []*hookEntry
	enabled bool
	reason  string
	// startedUp is true once a module run with onStartup succeeded since
	// the module was (re-)enabled.
	startedUp bool
	// monitorsUp is true while the module's kubernetes monitors run.
	monitorsUp bool
	stopMon    context.CancelFunc
	monCtx     context.Context
	lastErr    string
	// helmValues and manifests are what the last Helm run got and made.
	helmValues []byte
	manifests  []byte
	// hasChart is true when the last Helm run had a chart to release.
	hasChart bool
}

// New builds an engine from settings. Nothing runs until Run or Render.
func New(s Settings, log *slog.Logger) (*Engine, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	e := &Engine{s: s, log: log, mods: map[string]*modState{}, readyCh: make(chan struct{})}
	timeout := s.HookTimeout
	switch {
	case timeout == 0:
		timeout = DefaultHookTimeout
	case timeout < 0:
		timeout = 0
	}
	env := hookEnv()
	e.runner = &hook.Runner{Env: env, TempDir: s.TempDir, Timeout: timeout, CheckPatch: store.CheckHookPatch}
	e.resolver = &module.Resolver{Env: env, Timeout: timeout, TempDir: s.TempDir}
	retry, retryMax := s.Retry, s.RetryMax
	if retry <= 0 {
		retry = queue.DefaultBackoffInitial
	}
	if retryMax <= 0 {
		retryMax = max(queue.DefaultBackoffMax, retry)
	}
	e.reg = prometheus.NewRegistry()
	e.m = newMetrics(s.MetricsPrefix, e.reg)
	qopts := queue.Options{
		Backoff: queue.Exponential(retry, retryMax),
		Merge:   mergeTasks,
		OnDone:  e.taskDone,
	}
	if !s.NoQueueActionMetrics {
		qopts.OnAction = func(name, action string, took time.Duration) {
			e.m.queueActionSecs.WithLabelValues(name, action).Observe(took.Seconds())
		}
	}
	e.queues = queue.New(e.handleTask, qopts)
	e.hookMets = hookmetrics.NewCollector(hookmetrics.Limits{})
	e.reg.MustRegister(e.hookMets, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), stamp.Get().Collector())
	e.ticker = &schedule.Ticker{}
	return e, nil
}

// hookEnv is the environment hooks and enabled scripts get besides their
// files' variables: this process's, as addon-operator passes its own (hooks
// read ADDON_OPERATOR_NAMESPACE and the like from it).
func hookEnv() []string { return os.Environ() }

// WaitIdle blocks until every queue is empty, or ctx is done.
func (e *Engine) WaitIdle(ctx context.Context) error { return e.queues.WaitIdle(ctx) }

// WaitFailing blocks until some queued task has failed at least min times
// in a row (it waits for its retry), or ctx is done.
func (e *Engine) WaitFailing(ctx context.Context, min int) error {
	_, err := e.queues.WaitFailing(ctx, min)
	return err
}

// Registry is the engine's Prometheus registry (engine and hook metrics).
func (e *Engine) Registry() *prometheus.Registry { return e.reg }

// Ready is closed when the first converge is done.
func (e *Engine) Ready() <-chan struct{} { return e.readyCh }

// History returns the lifecycle steps done so far, in order: hook runs,
// discoveries, Helm runs, deletions and purges.
func (e *Engine) History() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.history...)
}

func (e *Engine) record(line string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.recordLocked(line)
}

func (e *Engine) recordLocked(line string) {
	if len(e.history) >= MaxHistory {
		copy(e.history, e.history[len(e.history)/2:])
		e.history = e.history[:len(e.history)-len(e.history)/2]
	}
	e.history = append(e.history, line)
}

// Run starts the operator and runs it until ctx is done: HTTP (/metrics,
// /healthz, /readyz), the debug socket, the backends, the start-up tasks
// and the queues. It returns nil when stopped by ctx, or the error that
// kept it from starting. With Settings.HA it first campaigns for the
// Lease and works only while leading (see runHA).
func (e *Engine) Run(ctx context.Context) error {
	if e.s.HA {
		return e.runHA(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 4)
	if err := e.serve(ctx, &wg, errc); err != nil {
		return err
	}
	e.serveDebug(ctx, &wg)
	err := e.work(ctx, errc)
	cancel()
	wg.Wait()
	_ = e.runner.Close()
	return err
}

// serve serves /metrics, /healthz and /readyz and ticks the liveness
// counter until ctx is done; a failure of the server goes to errc.
func (e *Engine) serve(ctx context.Context, wg *sync.WaitGroup, errc chan<- error) error {
	if e.s.ListenPort != "" {
		l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", net.JoinHostPort(e.s.ListenAddress, e.s.ListenPort))
		if err != nil {
			return fmt.Errorf("listening for /metrics: %w; set ADDON_OPERATOR_LISTEN_ADDRESS and ADDON_OPERATOR_LISTEN_PORT (--listen-address, --listen-port)", err)
		}
		srv := &http.Server{Handler: e.HTTPHandler(), ReadHeaderTimeout: 10 * time.Second}
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-ctx.Done()
			sctx, c := context.WithTimeout(context.Background(), 5*time.Second)
			defer c()
			_ = srv.Shutdown(sctx)
		}()
		go func() {
			defer wg.Done()
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
		e.log.Info("serving /metrics, /healthz and /readyz", "address", l.Addr().String())
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				e.m.liveTicks.Inc()
			}
		}
	}()
	return nil
}

// serveDebug serves the debug socket, and the debug API over HTTP when
// DebugHTTPAddr is set, until ctx is done.
func (e *Engine) serveDebug(ctx context.Context, wg *sync.WaitGroup) {
	if e.s.DebugUnixSocket != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := debug.Serve(ctx, e.s.DebugUnixSocket, debug.Handler(e), e.log); err != nil {
				e.log.Error("debug socket", "error", err)
			}
		}()
	}
	if e.s.DebugHTTPAddr != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := debug.ServeTCP(ctx, e.s.DebugHTTPAddr, debug.Handler(e), e.log); err != nil {
				e.log.Error("debug HTTP server", "error", err)
			}
		}()
	}
}

// work opens the backends, queues the start-up tasks and runs the queues
// and schedules until ctx is done or errc reports, then closes the
// backends.
func (e *Engine) work(ctx context.Context, errc <-chan error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	err := e.start(ctx)
	if err == nil && e.s.ReloadOnChange && !e.oneShot {
		if werr := e.watchFiles(ctx); werr != nil {
			e.log.Warn("reload on change: cannot watch the module directories; restart the operator to load changes", "error", werr)
		}
	}
	if err == nil {
		wg.Add(2)
		go func() { defer wg.Done(); e.ticker.Run(ctx) }()
		go func() { defer wg.Done(); e.queues.Run(ctx) }()
		select {
		case <-ctx.Done():
		case err = <-errc:
		}
	}
	cancel()
	wg.Wait()
	if e.webhooks != nil {
		e.webhooks.Wait()
	}
	e.back.close()
	return err
}

// start prepares everything the first task needs: backends, global hooks
// and their configs, modules, then queues the start-up tasks.
func (e *Engine) start(ctx context.Context) error {
	e.mu.Lock()
	e.runCtx = ctx
	e.mu.Unlock()
	back, err := openBackends(ctx, e.s, e.log, e.oneShot)
	if err != nil {
		return err
	}
	e.back = back
	e.objects = back.objects
	set, err := module.Discover(absAll(e.s.ModulesDirs()), absPath(e.s.GlobalHooksDir), e.moduleOptions())
	if err != nil {
		e.m.discoverErrors.Inc()
		return err
	}
	e.warnModules(set)
	if err := back.initValues(set); err != nil {
		return err
	}
	e.mu.Lock()
	e.modules = set
	for _, m := range set.Modules {
		e.mods[m.Name] = &modState{m: m}
	}
	e.mu.Unlock()
	hooks, skipped, err := hook.DiscoverGlobal(e.s.GlobalHooksDir)
	if err != nil {
		return err
	}
	for _, p := range skipped {
		e.log.Warn("skipping a file in the global hooks directory that is not executable", "file", p)
	}
	entries, err := e.configure(ctx, hooks, "")
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.global = entries
	e.mu.Unlock()
	if err := e.startWebhooks(ctx); err != nil {
		return err
	}
	for _, he := range entries {
		e.m.bindingCount.WithLabelValues("", he.h.Name).Set(float64(bindingCount(he.cfg)))
	}
	if !e.oneShot {
		back.watchConfig(ctx, e.configChanged)
		back.watchReleases(ctx, e.s.ReleaseCheck, e.releaseMissing)
	}
	tasks := lifecycleTasks(entries, hook.OnStartup, "OperatorStartup")
	tasks = append(tasks, newTask(enableGlobalBindings{}))
	tasks = append(tasks, reloadAllTask("OperatorStartup"))
	return e.queues.Add(tasks...)
}

func (e *Engine) moduleOptions() module.Options {
	order := e.s.UnnumberedModuleOrder
	return module.Options{UnnumberedOrder: &order, CRDFilterPrefixes: e.s.CRDFilterPrefixes}
}

func bindingCount(c *hook.Config) int {
	return len(c.Orders) + len(c.Schedules) + len(c.Kubernetes) + len(c.Validating) + len(c.Conversion)
}

// configure runs `--config` of hooks, several at once, and returns them
// in their order with their configs; a module-sdk batch file gives one
// entry per hook it holds, in their order.
func (e *Engine) configure(ctx context.Context, hooks []*hook.Hook, moduleName string) ([]*hookEntry, error) {
	found := make([][]*hookEntry, len(hooks))
	errs := make([]error, len(hooks))
	sem := make(chan struct{}, max(2, 2*runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for i, h := range hooks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if h.Kind == hook.Module {
				h.Module = moduleName
			}
			cs, err := e.runner.Configure(ctx, h)
			if err != nil {
				errs[i] = err
				return
			}
			if len(cs) > 1 || cs[0].Hook.Batch != "" {
				names := make([]string, len(cs))
				for j, c := range cs {
					names[j] = c.Hook.Name
				}
				e.log.Info("module-sdk batch hook", "module", moduleName, "file", h.Name, "hooks", names)
			}
			for _, c := range cs {
				he := &hookEntry{h: c.Hook, cfg: c.Config, module: moduleName, limiter: newLimiter(c.Config.Settings)}
				he.kube = e.kubeSet(he)
				found[i] = append(found[i], he)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([]*hookEntry, 0, len(hooks))
	for _, f := range found {
		out = append(out, f...)
	}
	if e.back != nil && e.back.dynamic == nil {
		for _, he := range out {
			e.warnLocalWebhooks(he)
		}
	}
	return out, nil
}

// HTTPHandler serves /metrics, /healthz and /readyz.
func (e *Engine) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", e.metricsHandler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if e.standbyReady(w) {
			return
		}
		select {
		case <-e.readyCh:
			_, _ = w.Write([]byte("ok\n"))
		default:
			http.Error(w, "the first converge is not done", http.StatusServiceUnavailable)
		}
	})
	return mux
}

func (e *Engine) metricsHandler() http.Handler {
	h := promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, q := range e.queues.Snapshot() {
			e.m.queueLength.WithLabelValues(q.Name).Set(float64(len(q.Tasks)))
		}
		e.observeSnapshots()
		h.ServeHTTP(w, r)
	})
}

func joinNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// absPath makes a path absolute, so that scripts run with their own
// directory as working directory still find it; "" stays "".
func absPath(p string) string {
	if p == "" {
		return ""
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

func absAll(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = absPath(p)
	}
	return out
}

// observeSnapshots sets the snapshot gauges of every started kubernetes
// binding, and the count of bindings waiting for their kind (at scrape
// time).
func (e *Engine) observeSnapshots() {
	if w, ok := e.objects.(interface{ Waiting() []string }); ok {
		e.m.kindsWaiting.Set(float64(len(w.Waiting())))
	}
	e.mu.Lock()
	hooks := append([]*hookEntry(nil), e.global...)
	for _, ms := range e.mods {
		if ms.monitorsUp {
			hooks = append(hooks, ms.hooks...)
		}
	}
	kubes := make([]*kubebind.Set, len(hooks))
	for i, he := range hooks {
		kubes[i] = he.kube
	}
	e.mu.Unlock()
	for i, he := range hooks {
		for _, b := range he.cfg.Kubernetes {
			m := kubes[i].Monitor(b.Name)
			if m == nil {
				continue
			}
			snap := m.Snapshot()
			size := 0
			for _, o := range snap {
				size += len(o.Object) + len(o.FilterResult)
			}
			l := []string{he.module, he.h.Name, b.Name, b.Queue}
			e.m.snapshotObjects.WithLabelValues(l...).Set(float64(len(snap)))
			e.m.snapshotBytes.WithLabelValues(l...).Set(float64(size))
		}
	}
}

// kubeSet returns new monitors of he's kubernetes bindings, timed into the
// engine's metrics.
func (e *Engine) kubeSet(he *hookEntry) *kubebind.Set {
	return kubebind.NewSet(he.cfg, e.objects).WithTimings(kubeTimings{m: e.m, he: he})
}

// kubeTimings puts a hook's monitors' timings into the metrics.
type kubeTimings struct {
	m  *metrics
	he *hookEntry
}

var _ kubebind.Timings = kubeTimings{}

func (t kubeTimings) labels(b *hook.KubernetesBinding) []string {
	return []string{t.he.module, t.he.h.Name, b.Name, b.Queue, b.Kind}
}

func (t kubeTimings) Filter(b *hook.KubernetesBinding, d time.Duration) {
	t.m.kubeJqSeconds.WithLabelValues(t.labels(b)...).Observe(d.Seconds())
}

func (t kubeTimings) Event(b *hook.KubernetesBinding, d time.Duration) {
	t.m.kubeEventSecs.WithLabelValues(t.labels(b)...).Observe(d.Seconds())
}
