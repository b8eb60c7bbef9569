package hook

import (
	"strconv"
	"time"

	"github.com/itchyny/gojq"

	"github.com/strata-dev/strata/internal/operator/schedule"
)

// DefaultQueue is the queue of bindings that name none.
const DefaultQueue = "main"

// Config is a hook's binding configuration, as printed by `hook --config`,
// with every default filled in.
type Config struct {
	// Version is the configVersion: "v1", or "v0" when the hook gave
	// none. It decides the shape of the binding contexts (EncodeContexts).
	Version string
	// Orders holds the lifecycle bindings the hook has (onStartup,
	// beforeAll, ... afterDeleteHelm), each with its order: hooks of one
	// binding run by order, then by name.
	Orders map[BindingType]float64
	// Schedules are the schedule bindings, in the order written.
	Schedules []*ScheduleBinding
	// Kubernetes are the kubernetes bindings, in the order written.
	Kubernetes []*KubernetesBinding
	// Validating and Conversion are the webhook bindings
	// (kubernetesValidating, kubernetesCustomResourceConversion), in the
	// order written (webhook.go).
	Validating []*ValidatingBinding
	Conversion []*ConversionBinding
	// Settings rate-limit the hook's runs; nil when not set.
	Settings *Settings
}

// Order returns the order of lifecycle binding b and whether the hook has
// that binding.
func (c *Config) Order(b BindingType) (float64, bool) {
	o, ok := c.Orders[b]
	return o, ok
}

// Has reports whether the hook has at least one binding of type b.
func (c *Config) Has(b BindingType) bool {
	switch b {
	case Schedule:
		return len(c.Schedules) > 0
	case Kubernetes:
		return len(c.Kubernetes) > 0
	case KubernetesValidating:
		return len(c.Validating) > 0
	case KubernetesConversion:
		return len(c.Conversion) > 0
	}
	_, ok := c.Orders[b]
	return ok
}

// KubernetesBinding returns the kubernetes binding called name, or nil.
func (c *Config) KubernetesBinding(name string) *KubernetesBinding {
	for _, k := range c.Kubernetes {
		if k.Name == name {
			return k
		}
	}
	return nil
}

// SnapshotsFor returns the kubernetes bindings whose snapshots a context
// of binding type t and binding name gets: for a lifecycle binding other
// than onStartup all of the hook's kubernetes bindings (addon-operator's
// rule); for a schedule or kubernetes binding its includeSnapshotsFrom
// (with the bindings of its group); none for onStartup. nil means the
// context has no "snapshots" field at all.
func (c *Config) SnapshotsFor(t BindingType, name string) []string {
	if names, ok := c.webhookSnapshots(t, name); ok {
		return names
	}
	switch {
	case t == OnStartup:
		return nil
	case t.Lifecycle():
		if len(c.Kubernetes) == 0 {
			return nil
		}
		names := make([]string, len(c.Kubernetes))
		for i, k := range c.Kubernetes {
			names[i] = k.Name
		}
		return names
	case t == Schedule:
		for _, s := range c.Schedules {
			if s.Name == name {
				return s.IncludeSnapshotsFrom
			}
		}
	case t == Kubernetes:
		if k := c.KubernetesBinding(name); k != nil {
			return k.IncludeSnapshotsFrom
		}
	}
	return nil
}

// Settings are a hook's execution rate limits (shell-operator's
// settings section).
type Settings struct {
	// ExecutionMinInterval is the least time between two runs.
	ExecutionMinInterval time.Duration
	// ExecutionBurst is how many runs may go at once before
	// ExecutionMinInterval applies.
	ExecutionBurst int
}

// A ScheduleBinding runs the hook on a crontab.
type ScheduleBinding struct {
	// Name is the binding's name, "schedule" when the hook gave none.
	Name string
	// Crontab is the crontab as written: 5 fields, or 6 with seconds
	// first.
	Crontab string
	// Spec is the parsed crontab.
	Spec *schedule.Spec
	// AllowFailure turns a failed run into a success and a metric.
	AllowFailure bool
	// Queue is the queue the runs go to, DefaultQueue when not given.
	Queue string
	// Group names the group of bindings the run belongs to, "" for none.
	Group string
	// IncludeSnapshotsFrom lists the kubernetes bindings whose snapshots
	// the run gets, with those of its group's bindings.
	IncludeSnapshotsFrom []string
}

// Context returns the binding context of one tick of the schedule,
// without snapshots (the caller fills them at run time).
func (s *ScheduleBinding) Context() BindingContext {
	return BindingContext{BindingType: Schedule, Binding: s.Name, Type: TypeSchedule, Group: s.Group}
}

// WatchEvent is a change to a watched object.
type WatchEvent string

// The watch events.
const (
	Added    WatchEvent = "Added"
	Modified WatchEvent = "Modified"
	Deleted  WatchEvent = "Deleted"
)

// A KubernetesBinding runs the hook on changes to Kubernetes objects.
type KubernetesBinding struct {
	// Name is the binding's name: "kubernetes" when the hook gave none
	// (v0: "onKubernetesEvent").
	Name string
	// APIVersion and Kind select the objects watched. APIVersion may be
	// empty (the preferred version of Kind).
	APIVersion string
	Kind       string
	// NameSelector, when set, keeps only objects with one of these names.
	NameSelector []string
	// LabelSelector, when set, keeps only objects whose labels match.
	LabelSelector *LabelSelector
	// FieldSelector, when set, keeps only objects whose fields match.
	FieldSelector []FieldRequirement
	// Namespace, when set, keeps only objects in the selected namespaces.
	Namespace *NamespaceSelector
	// JqFilter is the jq program applied to each object; "" for none.
	JqFilter string
	// ExecuteHookOnEvent lists the watch events that run the hook (all
	// three by default; an empty list: none, only the snapshot is kept).
	ExecuteHookOnEvent []WatchEvent
	// ExecuteHookOnSynchronization runs the hook with the
	// Synchronization context (default true).
	ExecuteHookOnSynchronization bool
	// WaitForSynchronization makes the operator wait for the
	// Synchronization run before going on (default true; false is kept
	// only with a queue of its own, as shell-operator does).
	WaitForSynchronization bool
	// KeepFullObjectsInMemory keeps whole objects in snapshots (default
	// true); false keeps only filter results.
	KeepFullObjectsInMemory bool
	// AllowFailure turns a failed run into a success and a metric.
	AllowFailure bool
	// ResynchronizationPeriod is accepted as shell-operator does and not
	// used.
	ResynchronizationPeriod string
	// Queue is the queue the runs go to, DefaultQueue when not given.
	Queue string
	// Group names the group of bindings the run belongs to, "" for none.
	Group string
	// IncludeSnapshotsFrom lists the kubernetes bindings whose snapshots
	// the run gets, with those of its group's bindings.
	IncludeSnapshotsFrom []string

	filter *gojq.Code
}

// Filter returns the compiled JqFilter, nil when there is none. The code
// is compiled once, by ParseConfig, and safe for concurrent use.
func (k *KubernetesBinding) Filter() *gojq.Code { return k.filter }

// RunsOn reports whether watch event e runs the hook.
func (k *KubernetesBinding) RunsOn(e WatchEvent) bool {
	for _, x := range k.ExecuteHookOnEvent {
		if x == e {
			return true
		}
	}
	return false
}

// A LabelSelector is Kubernetes' label selector.
type LabelSelector struct {
	MatchLabels      map[string]string
	MatchExpressions []LabelRequirement
}

// A LabelRequirement is one expression of a label selector.
type LabelRequirement struct {
	Key      string
	Operator string // In, NotIn, Exists, DoesNotExist
	Values   []string
}

// A FieldRequirement is one expression of a field selector.
type FieldRequirement struct {
	Field    string // a dotted path such as metadata.name
	Operator string // "=", "==" or "Equals"; "!=" or "NotEquals"
	Value    string
}

// Matches reports whether the object's field (read by get, "" when
// absent) satisfies the requirement.
func (r FieldRequirement) Matches(value string) bool {
	switch r.Operator {
	case "!=", "NotEquals":
		return value != r.Value
	}
	return value == r.Value
}

// A NamespaceSelector selects namespaces by name or by their labels.
type NamespaceSelector struct {
	NameSelector  []string
	LabelSelector *LabelSelector
}

// Matches reports whether labels satisfy the selector; a nil selector
// matches everything.
func (s *LabelSelector) Matches(labels map[string]string) bool {
	if s == nil {
		return true
	}
	for k, v := range s.MatchLabels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	for _, r := range s.MatchExpressions {
		v, ok := labels[r.Key]
		switch r.Operator {
		case "In":
			if !ok || !contains(r.Values, v) {
				return false
			}
		case "NotIn":
			if ok && contains(r.Values, v) {
				return false
			}
		case "Exists":
			if !ok {
				return false
			}
		case "DoesNotExist":
			if ok {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A ConfigError is a mistake in a hook's configuration.
type ConfigError struct {
	Hook  string // the hook's name
	Line  int    // line of the --config output, 0 when unknown
	Field string // the field, as a path: kubernetes[0].jqFilter
	Msg   string // what is wrong and what to write instead
}

func (e *ConfigError) Error() string {
	s := "hook " + e.Hook + " --config"
	if e.Line > 0 {
		s += ":" + itoa(e.Line)
	}
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Msg
}

// ParseConfig reads the output of `hook --config` for a hook of kind k
// (its size is the caller's to bound; Runner.Config does):
// YAML or JSON, configVersion v1 or v0. name names the hook in errors,
// which are *ConfigErrors.
func ParseConfig(data []byte, k Kind, name string) (*Config, error) {
	return parseConfig(data, k, name)
}

func itoa(n int) string { return strconv.Itoa(n) }
