package operator

import (
	"fmt"
	"strconv"
	"strings"
	"time"
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
	// HelmHistoryMax bounds the revisions kept per release; 0 is the
	// release store's default (the local store's history is always bounded).
	HelmHistoryMax int
	// HelmIgnoreRelease is a release the purge of unknown releases skips.
	HelmIgnoreRelease string
	// DebugUnixSocket is the path of the debug API's socket; "" disables it.
	DebugUnixSocket string
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
)

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

func integer(f func(*Settings) *int) func(*Settings, string) error {
	return func(s *Settings, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		*f(s) = n
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
	{[]string{"DEBUG_UNIX_SOCKET"}, str(func(s *Settings) *string { return &s.DebugUnixSocket })},
	{[]string{"LOG_TYPE"}, str(func(s *Settings) *string { return &s.LogType })},
	{[]string{"LOG_LEVEL"}, str(func(s *Settings) *string { return &s.LogLevel })},
	{[]string{"LOG_NO_TIME"}, boolean(func(s *Settings) *bool { return &s.LogNoTime })},
	{[]string{"QUEUE_ACTIONS_METRICS"}, func(s *Settings, v string) error {
		s.NoQueueActionMetrics = strings.EqualFold(strings.TrimSpace(v), "no")
		return nil
	}},
	{[]string{"KUBE_CONFIG"}, str(func(s *Settings) *string { return &s.KubeConfig })},
	{[]string{"KUBE_CONTEXT"}, str(func(s *Settings) *string { return &s.KubeContext })},
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
	return nil
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
	if s.HelmHistoryMax < 0 {
		return fmt.Errorf("HELM_HISTORY_MAX (--helm-history-max) %d: must be 0 (the default, 10) or more", s.HelmHistoryMax)
	}
	if _, err := strconv.Atoi(s.ListenPort); s.ListenPort != "" && err != nil {
		return fmt.Errorf("listen port %q: not a number; set ADDON_OPERATOR_LISTEN_PORT (--listen-port) to a port such as 9650", s.ListenPort)
	}
	return nil
}
