package webhook

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/strata-dev/strata/internal/operator/hook"
)

// FieldManager is the server-side apply field manager of what the Manager
// writes on the cluster.
const FieldManager = "strata-operator-webhooks"

// ServerSettings configure one webhook server: shell-operator's
// VALIDATING_WEBHOOK_* or CONVERSION_WEBHOOK_* settings.
type ServerSettings struct {
	// ConfigurationName names the ValidatingWebhookConfiguration
	// (validating only): it is <ConfigurationName>-hooks, as
	// shell-operator names it.
	ConfigurationName string
	// ServiceName is the Service in the operator's namespace through
	// which the API server reaches the server (clientConfig.service).
	ServiceName string
	// URL, when set, is the base URL the API server calls instead of the
	// Service (clientConfig.url = URL + path): a strata extension for
	// an operator outside the cluster, and for tests.
	URL string
	// ServerCert and ServerKey are the server's certificate and key
	// files; CA is the file of the CA that signed it, the caBundle the
	// API server gets.
	ServerCert, ServerKey, CA string
	// ClientCA, when set, are CA files of the client certificates the
	// server requires (the API server's).
	ClientCA []string
	// ListenAddress and ListenPort are where the server listens.
	ListenAddress, ListenPort string
}

// Settings configure the webhook servers.
type Settings struct {
	// Namespace is the operator's namespace (the Services').
	Namespace string
	// FailurePolicy is the failurePolicy of validating bindings that give
	// none: Fail or Ignore (VALIDATING_WEBHOOK_FAILURE_POLICY).
	FailurePolicy string
	Validating    ServerSettings
	Conversion    ServerSettings
}

// ValidatingConfigurationName is the name of the
// ValidatingWebhookConfiguration for configuration name base.
func ValidatingConfigurationName(base string) string { return base + "-hooks" }

// index is the served bindings, looked up by the handlers.
type index struct {
	validating map[string]Validating
	conversion map[string][]Conversion // by CRD name
	b          Bindings
}

// A Manager serves the webhook bindings: it starts the HTTPS servers the
// bindings need, routes reviews to the hooks, and keeps the
// ValidatingWebhookConfiguration and the CRDs' conversion on the cluster
// in step with the bindings. Build it with NewManager, Start it, then
// Update it whenever the bindings change.
type Manager struct {
	s      Settings
	runner Runner
	dyn    dynamic.Interface // nil: nothing is registered (local mode)
	log    *slog.Logger

	idx     atomic.Pointer[index]
	trigger chan struct{}
	reviews *prometheus.CounterVec
	seconds *prometheus.HistogramVec

	mu      sync.Mutex
	ctx     context.Context
	wg      sync.WaitGroup
	serving map[string]string // kind -> address served
	synced  string            // what the last sync applied, to log changes only
}

// NewManager builds a manager. dyn is the cluster's client, nil for none;
// reg gets the webhook metrics (prefix names them).
func NewManager(s Settings, runner Runner, dyn dynamic.Interface, reg prometheus.Registerer, prefix string, log *slog.Logger) *Manager {
	m := &Manager{s: s, runner: runner, dyn: dyn, log: log, trigger: make(chan struct{}, 1), serving: map[string]string{}}
	m.reviews = prometheus.NewCounterVec(prometheus.CounterOpts{Name: prefix + "webhook_reviews_total",
		Help: "Reviews answered by webhook hooks: kind validating or conversion, the webhook (or CRD), the outcome (allowed, denied, error, error-ignored, unknown, converted)."},
		[]string{"kind", "webhook", "outcome"})
	m.seconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: prefix + "webhook_review_seconds",
		Help: "Time to answer a review, hook runs included.", Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}},
		[]string{"kind"})
	if reg != nil {
		reg.MustRegister(m.reviews, m.seconds)
	}
	m.idx.Store(&index{validating: map[string]Validating{}, conversion: map[string][]Conversion{}})
	return m
}

func (m *Manager) current() *index { return m.idx.Load() }

func (m *Manager) observe(kind, name, outcome string, d time.Duration) {
	m.reviews.WithLabelValues(kind, name, outcome).Inc()
	m.seconds.WithLabelValues(kind).Observe(d.Seconds())
}

// Handler returns the handler of both kinds of reviews (the servers use
// it; tests may call it directly): /hooks/<webhook> validates,
// /<crd name> converts, /healthz answers 200.
func (m *Manager) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc(ValidatingPath("{name}"), m.serveValidating)
	mux.HandleFunc("/{crd}", m.serveConversion)
	return mux
}

// Start makes the manager live in ctx: servers started by Update and the
// loop that keeps the cluster's configuration up to date stop with it.
// Wait waits for them. A manager may be started again, with a new
// context, once Wait returned.
func (m *Manager) Start(ctx context.Context) {
	m.mu.Lock()
	m.ctx = ctx
	m.mu.Unlock()
	if m.dyn == nil {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.syncLoop(ctx)
	}()
}

// Wait waits for the servers and the sync loop after Start's context is
// done.
func (m *Manager) Wait() { m.wg.Wait() }

// Update serves b from now on: it checks b, starts the server of a kind
// of binding that has none yet, and has the cluster's configuration
// brought in step. An error leaves the bindings served before.
func (m *Manager) Update(b Bindings) error {
	idx := &index{validating: map[string]Validating{}, conversion: map[string][]Conversion{}, b: b}
	for _, v := range b.Validating {
		if o, dup := idx.validating[v.Binding.Name]; dup {
			return fmt.Errorf("the validating webhook %q is bound by two hooks, %s and %s; webhook names must be unique across all hooks", v.Binding.Name, o.Hook, v.Hook)
		}
		idx.validating[v.Binding.Name] = v
	}
	for _, c := range b.Conversion {
		idx.conversion[c.Binding.CRDName] = append(idx.conversion[c.Binding.CRDName], c)
	}
	if len(b.Validating) > 0 {
		if err := m.serve("validating", m.s.Validating); err != nil {
			return err
		}
	}
	if len(b.Conversion) > 0 {
		if err := m.serve("conversion", m.s.Conversion); err != nil {
			return err
		}
	}
	m.idx.Store(idx)
	select {
	case m.trigger <- struct{}{}:
	default:
	}
	return nil
}

// Addr returns the address the server of kind (validating or conversion)
// listens on, "" when it does not run.
func (m *Manager) Addr(kind string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.serving[kind]
}

func (m *Manager) serve(kind string, s ServerSettings) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.serving[kind]; ok {
		return nil
	}
	if m.ctx == nil {
		return errors.New("webhook manager not started")
	}
	flag := strings.ToUpper(kind) + "_WEBHOOK"
	srv := &Server{Addr: net.JoinHostPort(s.ListenAddress, s.ListenPort), CertFile: s.ServerCert, KeyFile: s.ServerKey, ClientCAFiles: s.ClientCA,
		Handler: m.Handler(), Log: m.log.With("server", kind+" webhook")}
	l, err := srv.Listen(m.ctx)
	if err != nil {
		return fmt.Errorf("%s webhook server: %w (set %s_SERVER_CERT, %s_SERVER_KEY, %s_LISTEN_ADDRESS, %s_LISTEN_PORT)", kind, err, flag, flag, flag, flag)
	}
	m.serving[kind] = l.Addr().String()
	m.log.Info("serving "+kind+" webhooks", "address", l.Addr().String(), "cert", s.ServerCert)
	m.wg.Add(1)
	ctx := m.ctx
	go func() {
		defer m.wg.Done()
		if err := srv.Serve(ctx, l); err != nil {
			m.log.Error(kind+" webhook server stopped", "error", err)
		}
		// Stopped with its context: a Start with a new one serves again.
		m.mu.Lock()
		delete(m.serving, kind)
		m.mu.Unlock()
	}()
	return nil
}

// syncLoop applies the configuration when the bindings change, again
// every minute (so that an edit by hand or a chart's upgrade is undone),
// and sooner while the last try failed (a CRD a module's chart has not
// installed yet): after 5 s, doubling up to a minute. A failure is logged
// at warning when its error differs from the last one's.
func (m *Manager) syncLoop(ctx context.Context) {
	t := time.NewTimer(time.Minute)
	defer t.Stop()
	retry, lastErr := 5*time.Second, ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.trigger:
		case <-t.C:
		}
		next := time.Minute
		if err := m.Sync(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			next, retry = retry, min(2*retry, time.Minute)
			if err.Error() != lastErr {
				m.log.Warn("webhook configuration not applied; trying again", "in", next.String(), "error", err)
			} else {
				m.log.Debug("webhook configuration not applied; trying again", "in", next.String(), "error", err)
			}
			lastErr = err.Error()
		} else {
			retry, lastErr = 5*time.Second, ""
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(next)
	}
}

var (
	vwcResource = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// Sync applies the ValidatingWebhookConfiguration (when the validating
// server runs) and the conversion of each bound CRD once.
func (m *Manager) Sync(ctx context.Context) error {
	if m.dyn == nil {
		return nil
	}
	idx := m.current()
	var errs []error
	var done []string
	if m.Addr("validating") != "" {
		if err := m.applyValidating(ctx, idx.b.Validating); err != nil {
			errs = append(errs, err)
		} else {
			done = append(done, fmt.Sprintf("ValidatingWebhookConfiguration %s (%d webhooks)", ValidatingConfigurationName(m.s.Validating.ConfigurationName), len(idx.b.Validating)))
		}
	}
	crds := make([]string, 0, len(idx.conversion))
	for crd := range idx.conversion {
		crds = append(crds, crd)
	}
	sort.Strings(crds)
	for _, crd := range crds {
		if err := m.applyConversion(ctx, crd, idx.conversion[crd]); err != nil {
			errs = append(errs, err)
		} else {
			done = append(done, "CRD "+crd+" conversion")
		}
	}
	if s := strings.Join(done, ", "); s != "" {
		m.mu.Lock()
		changed := s != m.synced
		m.synced = s
		m.mu.Unlock()
		if changed {
			m.log.Info("webhook configuration applied", "applied", s)
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) clientConfig(s ServerSettings, path string) (map[string]any, error) {
	ca, err := os.ReadFile(s.CA)
	if err != nil {
		return nil, fmt.Errorf("reading the webhook CA bundle: %w; mount the CA that signed the server certificate where the *_WEBHOOK_CA setting points", err)
	}
	cc := map[string]any{"caBundle": base64.StdEncoding.EncodeToString(ca)}
	if s.URL != "" {
		cc["url"] = strings.TrimSuffix(s.URL, "/") + path
	} else {
		cc["service"] = map[string]any{"namespace": m.s.Namespace, "name": s.ServiceName, "path": path}
	}
	return cc, nil
}

func (m *Manager) applyValidating(ctx context.Context, vs []Validating) error {
	name := ValidatingConfigurationName(m.s.Validating.ConfigurationName)
	webhooks := make([]any, 0, len(vs))
	for _, v := range vs {
		cc, err := m.clientConfig(m.s.Validating, ValidatingPath(v.Binding.Name))
		if err != nil {
			return err
		}
		webhooks = append(webhooks, validatingWebhook(v.Binding, m.failurePolicy(v.Binding), cc))
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1",
		"kind":       "ValidatingWebhookConfiguration",
		"metadata":   map[string]any{"name": name, "labels": map[string]any{"app.kubernetes.io/managed-by": "strata-operator"}},
		"webhooks":   webhooks,
	}}
	_, err := m.dyn.Resource(vwcResource).Apply(ctx, name, obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("applying ValidatingWebhookConfiguration %s: %w", name, err)
	}
	return nil
}

// validatingWebhook is the webhook of binding b in the configuration.
func validatingWebhook(b *hook.ValidatingBinding, policy string, cc map[string]any) map[string]any {
	rules := make([]any, 0, len(b.Rules))
	for _, r := range b.Rules {
		rule := map[string]any{"apiGroups": strs(r.APIGroups), "apiVersions": strs(r.APIVersions), "resources": strs(r.Resources), "operations": strs(r.Operations)}
		if r.Scope != "" {
			rule["scope"] = r.Scope
		}
		rules = append(rules, rule)
	}
	w := map[string]any{
		"name":                    b.Name,
		"clientConfig":            cc,
		"rules":                   rules,
		"failurePolicy":           policy,
		"sideEffects":             b.SideEffects,
		"timeoutSeconds":          int64(b.TimeoutSeconds),
		"matchPolicy":             "Equivalent",
		"admissionReviewVersions": []any{"v1", "v1beta1"},
	}
	if b.LabelSelector != nil {
		w["objectSelector"] = labelSelector(b.LabelSelector)
	}
	if b.NamespaceSelector != nil {
		w["namespaceSelector"] = labelSelector(b.NamespaceSelector)
	}
	if len(b.MatchConditions) > 0 {
		mcs := make([]any, 0, len(b.MatchConditions))
		for _, mc := range b.MatchConditions {
			mcs = append(mcs, map[string]any{"name": mc.Name, "expression": mc.Expression})
		}
		w["matchConditions"] = mcs
	}
	return w
}

func strs(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

func labelSelector(s *hook.LabelSelector) map[string]any {
	out := map[string]any{}
	if len(s.MatchLabels) > 0 {
		ml := map[string]any{}
		for k, v := range s.MatchLabels {
			ml[k] = v
		}
		out["matchLabels"] = ml
	}
	if len(s.MatchExpressions) > 0 {
		var exprs []any
		for _, r := range s.MatchExpressions {
			e := map[string]any{"key": r.Key, "operator": r.Operator}
			if len(r.Values) > 0 {
				e["values"] = strs(r.Values)
			}
			exprs = append(exprs, e)
		}
		out["matchExpressions"] = exprs
	}
	return out
}

func (m *Manager) applyConversion(ctx context.Context, crd string, _ []Conversion) error {
	if _, err := m.dyn.Resource(crdResource).Get(ctx, crd, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("CRD %s does not exist (yet); its conversion webhook is set once it is created", crd)
		}
		return fmt.Errorf("reading CRD %s: %w", crd, err)
	}
	cc, err := m.clientConfig(m.s.Conversion, ConversionPath(crd))
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": crd},
		"spec": map[string]any{"conversion": map[string]any{
			"strategy": "Webhook",
			"webhook": map[string]any{
				"clientConfig":             cc,
				"conversionReviewVersions": []any{"v1", "v1beta1"},
			},
		}},
	}}
	if _, err := m.dyn.Resource(crdResource).Apply(ctx, crd, obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("setting the conversion webhook of CRD %s: %w", crd, err)
	}
	return nil
}
