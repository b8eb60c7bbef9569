package operator

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/operator/webhook"
)

// Settings are the operator's knobs, read from addon-operator's environment
// variables (FromEnv) and then from flags, which win. The zero value is not
// usable; start from DefaultSettings.
type Settings struct {
	// ModulesDir is MODULES_DIR: module directories, ':'-separated.
	ModulesDir string
	// GlobalHooksDir is GLOBAL_HOOKS_DIR: the global hooks (under it, or
	// under its hooks/ when that exists) and their openapi/ schemas.
	GlobalHooksDir string
	// UnnumberedModuleOrder orders modules whose directory has no NNN- prefix.
	UnnumberedModuleOrder int
	// Namespace is the operator's namespace, the releases' namespace.
	Namespace string
	// ConfigMapName names the config store (locally: informational).
	ConfigMapName string
	// ListenAddress and ListenPort serve /metrics, /healthz and /readyz.
	ListenAddress string
	ListenPort    string
	// MetricsPrefix prefixes every engine metric.
	MetricsPrefix string
	// CRDExtraLabels ("k=v,k2=v2") and CRDFilterPrefixes ("doc-,_") shape
	// the crds/ of modules.
	CRDExtraLabels    string
	CRDFilterPrefixes string
	// TempDir holds the files hooks exchange with the operator.
	TempDir string
	// HelmHistoryMax bounds the revisions kept per release; 0 keeps every
	// revision of a release on the cluster, as in addon-operator and Helm,
	// and the local release store's default (its history is always
	// bounded).
	HelmHistoryMax int
	// HelmTimeout bounds one Helm install, upgrade or uninstall on a
	// cluster (Helm's --timeout: its hooks and waits); 0 means the
	// release package's DefaultHelmTimeout (20m, addon-operator's).
	HelmTimeout time.Duration
	// HelmIgnoreRelease is a release the purge of unknown releases skips.
	HelmIgnoreRelease string
	// DebugUnixSocket is the path of the debug API's socket; "" disables it.
	DebugUnixSocket string
	// ReloadOnChange watches the module and global hooks directories and
	// reloads a module whose files change (see reload.go).
	ReloadOnChange bool
	// DebugHTTPAddr, when set, also serves the debug API over plain HTTP
	// at this host:port (shell-operator's --debug-http-addr), without
	// authentication: bind it to a loopback address.
	DebugHTTPAddr string
	// LogType (text, json, color), LogLevel (debug, info, warn, error),
	// LogNoTime drop timestamps.
	LogType   string
	LogLevel  string
	LogNoTime bool
	// NoQueueActionMetrics turns off tasks_queue_action_duration_seconds
	// (QUEUE_ACTIONS_METRICS=no, as addon-operator).
	NoQueueActionMetrics bool
	// KubeConfig and KubeContext select a cluster; with neither (and not
	// in a pod) every backend is local.
	KubeConfig  string
	KubeContext string
	// InCluster is true when the process runs in a pod
	// (KUBERNETES_SERVICE_HOST is set).
	InCluster bool
	// KubeClientQPS and KubeClientBurst are the client-side rate limit of
	// every client the cluster backends make (KUBE_CLIENT_QPS,
	// KUBE_CLIENT_BURST). A negative QPS turns the limit off.
	KubeClientQPS   float32
	KubeClientBurst int

	// High availability.

	// HA makes replicas elect a leader through a Lease
	// (ADDON_OPERATOR_HA=true); only the leader runs hooks and releases.
	HA bool
	// PodName is the pod's name (ADDON_OPERATOR_POD), part of the Lease
	// holder's identity; required with HA.
	PodName string
	// LeaseDuration, RenewDeadline and RetryPeriod time the election; 0
	// means addon-operator's 35 s, 30 s and 10 s.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// ShutdownGrace is how long the leader lets the task in hand finish
	// after SIGTERM before it cancels it and releases the Lease; 0 means
	// DefaultShutdownGrace.
	ShutdownGrace time.Duration

	// Local backends.

	// Local forces local backends even when a cluster is configured.
	Local bool
	// ConfigFile is the local config store: a YAML file shaped like the
	// ConfigMap's data. "" is an empty store.
	ConfigFile string
	// ObjectsDir holds the Kubernetes objects kubernetes bindings watch
	// locally. "" is no objects.
	ObjectsDir string
	// StateDir holds the local release store. "" is TempDir/releases.
	StateDir string

	// Retry is the first delay before a failed task runs again; it doubles
	// up to RetryMax. 0 means 5 s and 30 s.
	Retry    time.Duration
	RetryMax time.Duration
	// ReleaseCheck is how often the release store is checked for releases
	// of enabled modules that went missing; 0 means ReleaseCheckInterval.
	ReleaseCheck time.Duration
	// HookTimeout bounds one run of a hook or enabled script; 0 means
	// DefaultHookTimeout, negative none.
	HookTimeout time.Duration
	// Codecs is the reference switch of the fast codecs the releases'
	// rendering reads its documents with (--fast-codecs).
	Codecs document.Codecs

	// Webhooks configure the servers of the hooks' webhook bindings
	// (shell-operator's VALIDATING_WEBHOOK_* and CONVERSION_WEBHOOK_*;
	// webhooks.go). Namespace is taken from Namespace.
	Webhooks webhook.Settings
}

// Defaults of Settings, as addon-operator's.
const (
	DefaultListenPort         = "9650"
	DefaultMetricsPrefix      = "addon_operator_"
	DefaultConfigMapName      = "addon-operator"
	DefaultCRDExtraLabels     = "heritage=addon-operator"
	DefaultCRDFilterPrefixes  = "doc-,_"
	DefaultDebugUnixSocket    = "/var/run/addon-operator/debug.socket"
	DefaultHelmHistoryMax     = 10
	DefaultHookTimeout        = 10 * time.Minute
	DefaultUnnumberedModOrder = 1
	// DefaultKubeClientQPS and DefaultKubeClientBurst are strata's client
	// rate limit. addon-operator's is 5 and 10, which is most of why its
	// first converge waits: set KUBE_CLIENT_QPS=5 KUBE_CLIENT_BURST=10 to
	// get its pace.
	DefaultKubeClientQPS   = 50
	DefaultKubeClientBurst = 100
	// The election's timing, as addon-operator's (cmd/addon-operator).
	DefaultLeaseDuration = 35 * time.Second
	DefaultRenewDeadline = 30 * time.Second
	DefaultRetryPeriod   = 10 * time.Second
	DefaultShutdownGrace = 30 * time.Second
	// LeaseName is the Lease replicas elect a leader with, in the
	// operator's namespace, as addon-operator's.
	LeaseName = "addon-operator-leader-election"
)

// ServiceAccountNamespaceFile is where a pod finds its namespace; read
// when ADDON_OPERATOR_NAMESPACE is not set in a pod.
var ServiceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// DefaultSettings returns addon-operator's defaults.
func DefaultSettings() Settings {
	return Settings{
		ModulesDir:            "modules",
		GlobalHooksDir:        "global-hooks",
		UnnumberedModuleOrder: DefaultUnnumberedModOrder,
		ConfigMapName:         DefaultConfigMapName,
		ListenAddress:         "0.0.0.0",
		ListenPort:            DefaultListenPort,
		MetricsPrefix:         DefaultMetricsPrefix,
		CRDExtraLabels:        DefaultCRDExtraLabels,
		CRDFilterPrefixes:     DefaultCRDFilterPrefixes,
		TempDir:               "/tmp/addon-operator",
		HelmHistoryMax:        DefaultHelmHistoryMax,
		DebugUnixSocket:       DefaultDebugUnixSocket,
		LogType:               "text",
		LogLevel:              "info",
		KubeClientQPS:         DefaultKubeClientQPS,
		KubeClientBurst:       DefaultKubeClientBurst,
		Webhooks:              defaultWebhooks(),
	}
}

// An envVar is one setting and the names it is read from, in increasing
// priority: the documented name first, then the spellings of current
// addon-operator releases (ADDON_OPERATOR_-prefixed), which win.
type envVar struct {
	names []string
	set   func(s *Settings, v string) error
}

func str(f func(*Settings) *string) func(*Settings, string) error {
	return func(s *Settings, v string) error { *f(s) = v; return nil }
}

// integer and float read numbers; an empty value is no value (the
// default stays), as in addon-operator, whose environment parser skips
// empty variables.
func integer(f func(*Settings) *int) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		if strings.TrimSpace(v) == "" {
			return nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		*f(s) = n
		return nil
	}
}

func float(f func(*Settings) *float32) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		if strings.TrimSpace(v) == "" {
			return nil
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 32)
		if err != nil {
			return fmt.Errorf("%q is not a number", v)
		}
		*f(s) = float32(n)
		return nil
	}
}

func boolean(f func(*Settings) *bool) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%q is not true or false", v)
		}
		*f(s) = b
		return nil
	}
}

var envVars = []envVar{
	{[]string{"MODULES_DIR", "ADDON_OPERATOR_MODULES_DIR"}, str(func(s *Settings) *string { return &s.ModulesDir })},
	{[]string{"SHELL_OPERATOR_HOOKS_DIR", "GLOBAL_HOOKS_DIR", "ADDON_OPERATOR_GLOBAL_HOOKS_DIR"}, str(func(s *Settings) *string { return &s.GlobalHooksDir })},
	{[]string{"UNNUMBERED_MODULE_ORDER", "UNNUMBERED_MODULES_ORDER", "ADDON_OPERATOR_UNNUMBERED_MODULE_ORDER", "ADDON_OPERATOR_UNNUMBERED_MODULES_ORDER"}, integer(func(s *Settings) *int { return &s.UnnumberedModuleOrder })},
	{[]string{"SHELL_OPERATOR_NAMESPACE", "ADDON_OPERATOR_NAMESPACE"}, str(func(s *Settings) *string { return &s.Namespace })},
	{[]string{"ADDON_OPERATOR_CONFIG_MAP"}, str(func(s *Settings) *string { return &s.ConfigMapName })},
	{[]string{"SHELL_OPERATOR_LISTEN_ADDRESS", "ADDON_OPERATOR_LISTEN_ADDRESS"}, str(func(s *Settings) *string { return &s.ListenAddress })},
	{[]string{"SHELL_OPERATOR_LISTEN_PORT", "ADDON_OPERATOR_LISTEN_PORT"}, str(func(s *Settings) *string { return &s.ListenPort })},
	{[]string{"SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX", "ADDON_OPERATOR_PROMETHEUS_METRICS_PREFIX"}, str(func(s *Settings) *string { return &s.MetricsPrefix })},
	{[]string{"ADDON_OPERATOR_CRD_EXTRA_LABELS"}, str(func(s *Settings) *string { return &s.CRDExtraLabels })},
	{[]string{"ADDON_OPERATOR_CRD_FILTER_PREFIXES"}, str(func(s *Settings) *string { return &s.CRDFilterPrefixes })},
	{[]string{"SHELL_OPERATOR_TMP_DIR", "ADDON_OPERATOR_TMP_DIR"}, str(func(s *Settings) *string { return &s.TempDir })},
	{[]string{"HELM_HISTORY_MAX"}, integer(func(s *Settings) *int { return &s.HelmHistoryMax })},
	{[]string{"HELM_IGNORE_RELEASE"}, str(func(s *Settings) *string { return &s.HelmIgnoreRelease })},
	{[]string{"HELM_TIMEOUT"}, func(s *Settings, v string) error {
		if strings.TrimSpace(v) == "" {
			return nil
		}
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%q is not a duration; write one like 20m", v)
		}
		s.HelmTimeout = d
		return nil
	}},
	{[]string{"DEBUG_UNIX_SOCKET"}, str(func(s *Settings) *string { return &s.DebugUnixSocket })},
	{[]string{"DEBUG_HTTP_SERVER_ADDR"}, str(func(s *Settings) *string { return &s.DebugHTTPAddr })},
	{[]string{"STRATA_RELOAD_ON_CHANGE"}, boolean(func(s *Settings) *bool { return &s.ReloadOnChange })},
	{[]string{"LOG_TYPE"}, str(func(s *Settings) *string { return &s.LogType })},
	{[]string{"LOG_LEVEL"}, str(func(s *Settings) *string { return &s.LogLevel })},
	{[]string{"LOG_NO_TIME"}, boolean(func(s *Settings) *bool { return &s.LogNoTime })},
	{[]string{"QUEUE_ACTIONS_METRICS"}, func(s *Settings, v string) error {
		s.NoQueueActionMetrics = strings.EqualFold(strings.TrimSpace(v), "no")
		return nil
	}},
	{[]string{"KUBE_CONFIG"}, str(func(s *Settings) *string { return &s.KubeConfig })},
	{[]string{"KUBE_CONTEXT"}, str(func(s *Settings) *string { return &s.KubeContext })},
	{[]string{"KUBE_CLIENT_QPS"}, float(func(s *Settings) *float32 { return &s.KubeClientQPS })},
	{[]string{"KUBE_CLIENT_BURST"}, integer(func(s *Settings) *int { return &s.KubeClientBurst })},
	{[]string{"ADDON_OPERATOR_HA"}, func(s *Settings, v string) error {
		// addon-operator turns HA on for "true" only; anything else that is
		// no boolean is a mistake worth stopping for.
		if strings.TrimSpace(v) == "" {
			s.HA = false
			return nil
		}
		return boolean(func(s *Settings) *bool { return &s.HA })(s, v)
	}},
	{[]string{"ADDON_OPERATOR_POD"}, str(func(s *Settings) *string { return &s.PodName })},
	{[]string{"VALIDATING_WEBHOOK_CONFIGURATION_NAME"}, str(func(s *Settings) *string { return &s.Webhooks.Validating.ConfigurationName })},
	{[]string{"VALIDATING_WEBHOOK_SERVICE_NAME"}, str(func(s *Settings) *string { return &s.Webhooks.Validating.ServiceName })},
	{[]string{"VALIDATING_WEBHOOK_SERVER_CERT"}, str(func(s *Settings) *string { return &s.Webhooks.Validating.ServerCert })},
	{[]string{"VALIDATING_WEBHOOK_SERVER_KEY"}, str(func(s *Settings) *string { return &s.Webhooks.Validating.ServerKey })},
	{[]string{"VALIDATING_WEBHOOK_CA"}, str(func(s *Settings) *string { return &s.Webhooks.Validating.CA })},
	{[]string{"VALIDATING_WEBHOOK_CLIENT_CA"}, list(func(s *Settings) *[]string { return &s.Webhooks.Validating.ClientCA })},
	{[]string{"VALIDATING_WEBHOOK_FAILURE_POLICY"}, str(func(s *Settings) *string { return &s.Webhooks.FailurePolicy })},
	{[]string{"VALIDATING_WEBHOOK_LISTEN_PORT"}, str(func(s *Settings) *string { return &s.Webhooks.Validating.ListenPort })},
	{[]string{"VALIDATING_WEBHOOK_LISTEN_ADDRESS"}, str(func(s *Settings) *string { return &s.Webhooks.Validating.ListenAddress })},
	{[]string{"STRATA_VALIDATING_WEBHOOK_URL"}, str(func(s *Settings) *string { return &s.Webhooks.Validating.URL })},
	{[]string{"CONVERSION_WEBHOOK_SERVICE_NAME"}, str(func(s *Settings) *string { return &s.Webhooks.Conversion.ServiceName })},
	{[]string{"CONVERSION_WEBHOOK_SERVER_CERT"}, str(func(s *Settings) *string { return &s.Webhooks.Conversion.ServerCert })},
	{[]string{"CONVERSION_WEBHOOK_SERVER_KEY"}, str(func(s *Settings) *string { return &s.Webhooks.Conversion.ServerKey })},
	{[]string{"CONVERSION_WEBHOOK_CA"}, str(func(s *Settings) *string { return &s.Webhooks.Conversion.CA })},
	{[]string{"CONVERSION_WEBHOOK_CLIENT_CA"}, list(func(s *Settings) *[]string { return &s.Webhooks.Conversion.ClientCA })},
	{[]string{"CONVERSION_WEBHOOK_LISTEN_PORT"}, str(func(s *Settings) *string { return &s.Webhooks.Conversion.ListenPort })},
	{[]string{"CONVERSION_WEBHOOK_LISTEN_ADDRESS"}, str(func(s *Settings) *string { return &s.Webhooks.Conversion.ListenAddress })},
	{[]string{"STRATA_CONVERSION_WEBHOOK_URL"}, str(func(s *Settings) *string { return &s.Webhooks.Conversion.URL })},
}

// list reads a comma-separated list; an empty value is none.
func list(f func(*Settings) *[]string) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		*f(s) = nil
		for _, x := range strings.Split(v, ",") {
			if x = strings.TrimSpace(x); x != "" {
				*f(s) = append(*f(s), x)
			}
		}
		return nil
	}
}

// EnvNames lists every environment variable FromEnv reads, for docs and
// help texts.
func EnvNames() []string {
	var out []string
	for _, e := range envVars {
		out = append(out, e.names...)
	}
	return append(out, "KUBERNETES_SERVICE_HOST")
}

// FromEnv overrides s with the environment variables lookup finds (pass
// os.LookupEnv). Where a setting has several names, the later one of the
// list wins: ADDON_OPERATOR_MODULES_DIR over MODULES_DIR, as in current
// addon-operator releases. A malformed value is an error naming the
// variable.
func (s *Settings) FromEnv(lookup func(string) (string, bool)) error {
	for _, e := range envVars {
		for _, name := range e.names {
			v, ok := lookup(name)
			if !ok {
				continue
			}
			if err := e.set(s, v); err != nil {
				return fmt.Errorf("environment variable %s: %w", name, err)
			}
		}
	}
	if v, ok := lookup("KUBERNETES_SERVICE_HOST"); ok && v != "" {
		s.InCluster = true
	}
	if s.InCluster && s.Namespace == "" {
		ns, err := readNamespaceFile(ServiceAccountNamespaceFile)
		if err != nil {
			return err
		}
		s.Namespace = ns
	}
	return nil
}

// readNamespaceFile reads the service account's namespace file; a missing
// file is no namespace (Check then asks for ADDON_OPERATOR_NAMESPACE).
func readNamespaceFile(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("the pod's namespace (%s): %w; set ADDON_OPERATOR_NAMESPACE", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(validation.DNS1123LabelMaxLength+2)))
	if err != nil {
		return "", fmt.Errorf("the pod's namespace (%s): %w; set ADDON_OPERATOR_NAMESPACE", path, err)
	}
	return strings.TrimSpace(string(data)), nil
}

// ModulesDirs splits ModulesDir on ':' and drops empty entries.
func (s *Settings) ModulesDirs() []string {
	var out []string
	for _, d := range strings.Split(s.ModulesDir, ":") {
		if d = strings.TrimSpace(d); d != "" {
			out = append(out, d)
		}
	}
	return out
}

// OnCluster reports whether a cluster is configured: a kubeconfig, or
// in a pod. With HA the Lease lives there even when --local keeps the
// other backends local.
func (s *Settings) OnCluster() bool {
	return s.KubeConfig != "" || s.InCluster
}

// UseLocal reports whether every backend is local: asked for with Local,
// or no cluster is configured.
func (s *Settings) UseLocal() bool {
	return s.Local || (s.KubeConfig == "" && !s.InCluster)
}

// Check validates the settings a run needs.
func (s *Settings) Check() error {
	if len(s.ModulesDirs()) == 0 && s.GlobalHooksDir == "" {
		return fmt.Errorf("no modules and no global hooks: set MODULES_DIR (--modules-dir) or GLOBAL_HOOKS_DIR (--global-hooks-dir)")
	}
	if err := s.checkWebhooks(); err != nil {
		return err
	}
	if s.HelmTimeout < 0 {
		return fmt.Errorf("HELM_TIMEOUT (--helm-timeout) %s: must be positive, such as 20m", s.HelmTimeout)
	}
	if s.HelmHistoryMax < 0 {
		return fmt.Errorf("HELM_HISTORY_MAX (--helm-history-max) %d: must be 0 (no limit) or more", s.HelmHistoryMax)
	}
	if _, err := strconv.Atoi(s.ListenPort); s.ListenPort != "" && err != nil {
		return fmt.Errorf("listen port %q: not a number; set ADDON_OPERATOR_LISTEN_PORT (--listen-port) to a port such as 9650", s.ListenPort)
	}
	if s.KubeClientQPS > 0 && s.KubeClientBurst < 1 {
		return fmt.Errorf("KUBE_CLIENT_BURST (--kube-client-burst) %d: must be 1 or more while KUBE_CLIENT_QPS is %g", s.KubeClientBurst, s.KubeClientQPS)
	}
	if s.Namespace != "" {
		if errs := validation.IsDNS1123Label(s.Namespace); len(errs) > 0 {
			return fmt.Errorf("namespace %q (ADDON_OPERATOR_NAMESPACE, --namespace): %s", s.Namespace, strings.Join(errs, "; "))
		}
	}
	if !s.UseLocal() && s.Namespace == "" {
		return fmt.Errorf("no namespace: on a cluster the operator needs ADDON_OPERATOR_NAMESPACE (--namespace), the namespace of its ConfigMap and releases; in a pod set it from metadata.namespace, or pass --local for the local backends")
	}
	return s.checkHA()
}

// checkHA validates the HA settings: a Lease needs a cluster, a namespace
// and an identity.
func (s *Settings) checkHA() error {
	if !s.HA {
		return nil
	}
	if !s.OnCluster() {
		return fmt.Errorf("ADDON_OPERATOR_HA (--ha) needs a cluster for its Lease: set KUBE_CONFIG (--kube-config) or run in a pod")
	}
	if s.Namespace == "" {
		return fmt.Errorf("ADDON_OPERATOR_HA (--ha): no namespace for the Lease %s; set ADDON_OPERATOR_NAMESPACE (--namespace)", LeaseName)
	}
	if strings.TrimSpace(s.PodName) == "" {
		return fmt.Errorf("ADDON_OPERATOR_HA (--ha): ADDON_OPERATOR_POD (--pod-name) is empty; it names the Lease holder: set it from the pod's metadata.name")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--ha-lease-duration", s.LeaseDuration}, {"--ha-renew-deadline", s.RenewDeadline}, {"--ha-retry-period", s.RetryPeriod}, {"--shutdown-grace", s.ShutdownGrace}} {
		if d.v < 0 {
			return fmt.Errorf("%s %s: must not be negative", d.name, d.v)
		}
	}
	t := s.electionTiming()
	if t.lease <= t.renew || t.renew <= t.retry {
		return fmt.Errorf("election timing: --ha-lease-duration (%s) must exceed --ha-renew-deadline (%s), which must exceed --ha-retry-period (%s)", t.lease, t.renew, t.retry)
	}
	return nil
}

type electionTiming struct{ lease, renew, retry, grace time.Duration }

// electionTiming is the election's timing with the defaults filled in.
func (s *Settings) electionTiming() electionTiming {
	or := func(v, d time.Duration) time.Duration {
		if v <= 0 {
			return d
		}
		return v
	}
	return electionTiming{
		lease: or(s.LeaseDuration, DefaultLeaseDuration),
		renew: or(s.RenewDeadline, DefaultRenewDeadline),
		retry: or(s.RetryPeriod, DefaultRetryPeriod),
		grace: or(s.ShutdownGrace, DefaultShutdownGrace),
	}
}

// Identity is the Lease holder identity of this replica, as
// addon-operator's: <pod>.<listen address with dashes>.<namespace>.pod.
func (s *Settings) Identity() string {
	return fmt.Sprintf("%s.%s.%s.pod", strings.TrimSpace(s.PodName), strings.ReplaceAll(s.ListenAddress, ".", "-"), s.Namespace)
}
