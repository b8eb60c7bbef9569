package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// Webhook bindings: kubernetesValidating (a ValidatingWebhookConfiguration
// whose reviews run the hook) and kubernetesCustomResourceConversion (a
// CRD's conversion webhook whose reviews run the hook), as shell-operator
// configures them. The operator's webhook package serves them; this file
// holds their configuration and its parsing.

// The webhook binding types.
const (
	KubernetesValidating BindingType = "kubernetesValidating"
	KubernetesConversion BindingType = "kubernetesCustomResourceConversion"
)

// The context types of webhook runs.
const (
	TypeValidating ContextType = "Validating"
	TypeConversion ContextType = "Conversion"
)

// Defaults of a validating binding, shell-operator's.
const (
	DefaultFailurePolicy  = "Fail"
	DefaultSideEffects    = "None"
	DefaultTimeoutSeconds = 10
)

// A ValidatingBinding makes the hook a validating admission webhook: the
// API server sends it the requests its rules match, and the hook answers
// whether they are allowed.
type ValidatingBinding struct {
	// Name is the webhook's name in the ValidatingWebhookConfiguration: a
	// domain of at least three segments (policy.example.com).
	Name string
	// Group and IncludeSnapshotsFrom select the snapshots the run gets,
	// as for a schedule binding.
	Group                string
	IncludeSnapshotsFrom []string
	// Rules are the webhook's rules (at least one).
	Rules []WebhookRule
	// FailurePolicy is Fail or Ignore: what the API server does when it
	// cannot get an answer, and what strata answers when the hook fails.
	// "" when not given: the operator's default applies
	// (VALIDATING_WEBHOOK_FAILURE_POLICY, DefaultFailurePolicy).
	FailurePolicy string
	// SideEffects is None or NoneOnDryRun (default None).
	SideEffects string
	// TimeoutSeconds is how long the API server waits, 1 to 30 (default
	// 10); the hook's run gets half a second less, so that its answer
	// arrives in time.
	TimeoutSeconds int32
	// LabelSelector is the webhook's objectSelector; nil for none.
	LabelSelector *LabelSelector
	// NamespaceSelector is the webhook's namespaceSelector (the binding's
	// namespace.labelSelector); nil for none.
	NamespaceSelector *LabelSelector
	// MatchConditions are CEL conditions the API server evaluates.
	MatchConditions []MatchCondition
}

// A WebhookRule is one rule of a validating webhook (Kubernetes'
// RuleWithOperations).
type WebhookRule struct {
	Operations  []string // CREATE, UPDATE, DELETE, CONNECT or *
	APIGroups   []string
	APIVersions []string
	Resources   []string
	Scope       string // Cluster, Namespaced, * or "" (the API server's default, *)
}

// A MatchCondition is one CEL condition of a validating webhook.
type MatchCondition struct {
	Name       string
	Expression string
}

// A ConversionBinding makes the hook a conversion webhook of one CRD: the
// API server sends it objects to convert between the versions of the
// binding's rules.
type ConversionBinding struct {
	// Name is the binding's name, written to the binding context.
	Name string
	// Group and IncludeSnapshotsFrom select the snapshots the run gets.
	Group                string
	IncludeSnapshotsFrom []string
	// CRDName is the CustomResourceDefinition's name
	// (crontabs.stable.example.com).
	CRDName string
	// Conversions are the conversions the hook can make.
	Conversions []ConversionRule
}

// A ConversionRule is one conversion a hook makes. The versions are
// apiVersions (stable.example.com/v1) or versions alone (v1), which match
// an apiVersion of any group with that version.
type ConversionRule struct {
	FromVersion string
	ToVersion   string
}

// ValidatingBinding returns the validating binding called name, or nil.
func (c *Config) ValidatingBinding(name string) *ValidatingBinding {
	for _, v := range c.Validating {
		if v.Name == name {
			return v
		}
	}
	return nil
}

// HasWebhooks reports whether the hook has a validating or conversion
// binding.
func (c *Config) HasWebhooks() bool { return len(c.Validating) > 0 || len(c.Conversion) > 0 }

// webhookSnapshots returns the snapshots of the webhook binding of type t
// called name (see SnapshotsFor).
func (c *Config) webhookSnapshots(t BindingType, name string) ([]string, bool) {
	switch t {
	case KubernetesValidating:
		if v := c.ValidatingBinding(name); v != nil {
			return v.IncludeSnapshotsFrom, true
		}
		return nil, true
	case KubernetesConversion:
		for _, cv := range c.Conversion {
			if cv.Name == name {
				return cv.IncludeSnapshotsFrom, true
			}
		}
		return nil, true
	}
	return nil, false
}

// appendWebhook writes the rest of a Validating or Conversion context, as
// shell-operator writes them (never as a Group, whatever the binding's
// group): binding, fromVersion, review, snapshots, toVersion, type.
func appendWebhook(w *objWriter, c *BindingContext) ([]byte, error) {
	conv := c.BindingType == KubernetesConversion
	if conv {
		w.str("fromVersion", c.FromVersion)
	}
	if err := w.raw("review", c.Review); err != nil {
		return nil, err
	}
	if c.Snapshots != nil {
		if err := appendSnapshots(w, c.Snapshots); err != nil {
			return nil, err
		}
	}
	if conv {
		w.str("toVersion", c.ToVersion)
		w.str("type", string(TypeConversion))
	} else {
		w.str("type", string(TypeValidating))
	}
	return append(w.buf, '}'), nil
}

// appendSnapshots writes "snapshots": the snapshots by binding name, in
// name order.
func appendSnapshots(w *objWriter, snaps map[string][]ObjectResult) error {
	w.key("snapshots")
	w.buf = append(w.buf, '{')
	for i, n := range slices.Sorted(maps.Keys(snaps)) {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		w.buf = appendString(w.buf, n)
		w.buf = append(w.buf, ':')
		var err error
		if w.buf, err = appendObjects(w.buf, snaps[n]); err != nil {
			return err
		}
	}
	w.buf = append(w.buf, '}')
	return nil
}

// responseEnv returns the variables naming the answer file of a webhook
// run, path, when ctxs are a webhook's: $VALIDATING_RESPONSE_PATH (and
// its other name, $ADMISSION_RESPONSE_PATH) or $CONVERSION_RESPONSE_PATH.
func responseEnv(ctxs []BindingContext, path string) []string {
	if len(ctxs) == 0 {
		return nil
	}
	switch ctxs[0].BindingType {
	case KubernetesValidating:
		return []string{"VALIDATING_RESPONSE_PATH=" + path, "ADMISSION_RESPONSE_PATH=" + path}
	case KubernetesConversion:
		return []string{"CONVERSION_RESPONSE_PATH=" + path}
	}
	return nil
}

// decodeWebhookContext reads the fields of a Validating or Conversion
// context (its "type" is one of them) into c.
func decodeWebhookContext(c *BindingContext, m map[string]json.RawMessage) error {
	typ, _, _ := decodeString(m, "type")
	c.Type = ContextType(typ)
	review, ok := m["review"]
	if !ok || len(bytes.TrimSpace(review)) == 0 || bytes.TrimSpace(review)[0] != '{' {
		return fmt.Errorf("a %s context needs a review object", typ)
	}
	c.Review = review
	if c.Type == TypeValidating {
		c.BindingType = KubernetesValidating
		if _, from := m["fromVersion"]; from {
			return fmt.Errorf("fromVersion belongs to a Conversion context only")
		}
		if _, to := m["toVersion"]; to {
			return fmt.Errorf("toVersion belongs to a Conversion context only")
		}
		return nil
	}
	c.BindingType = KubernetesConversion
	var err error
	var hasFrom, hasTo bool
	if c.FromVersion, hasFrom, err = decodeString(m, "fromVersion"); err != nil {
		return err
	}
	if c.ToVersion, hasTo, err = decodeString(m, "toVersion"); err != nil {
		return err
	}
	if !hasFrom || !hasTo {
		return fmt.Errorf("a Conversion context needs fromVersion and toVersion")
	}
	return nil
}
