package hook

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/strata-dev/strata/internal/document"
)

// The webhook bindings of a configVersion v1 configuration
// (kubernetesValidating, kubernetesCustomResourceConversion): their shapes,
// as document.Decode reads them (config_shape.go has the others), and
// their conversion into ValidatingBindings and ConversionBindings.

// dnsSubdomain is a lowercase RFC 1123 subdomain.
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

type (
	validatingWebhooks []validatingShape
	conversionBindings []conversionShape
	webhookRules       []ruleShape
	matchConditions    []matchConditionShape
	conversionRules    []conversionRuleShape
)

func (validatingWebhooks) CheckTree(v any) error {
	return checkList(v, "validating webhooks such as {name: policy.example.com, rules: [...]}", "remove it or add a webhook such as {name: policy.example.com, rules: [...]}")
}
func (conversionBindings) CheckTree(v any) error {
	return checkList(v, "conversions such as {name: v1-to-v2, crdName: crontabs.stable.example.com, conversions: [...]}",
		"remove it or add a binding such as {name: v1-to-v2, crdName: crontabs.stable.example.com, conversions: [...]}")
}
func (webhookRules) CheckTree(v any) error {
	return checkList(v, `rules such as {apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}`, "")
}
func (matchConditions) CheckTree(v any) error {
	return checkList(v, "conditions {name, expression}", "")
}
func (conversionRules) CheckTree(v any) error {
	return checkList(v, "rules {fromVersion, toVersion}", "")
}

type validatingShape struct {
	Name                 webhookName          `json:"name"`
	Group                str                  `json:"group"`
	IncludeSnapshotsFrom webhookSnapshotNames `json:"includeSnapshotsFrom"`
	Rules                webhookRules         `json:"rules"`
	FailurePolicy        failurePolicy        `json:"failurePolicy"`
	SideEffects          sideEffects          `json:"sideEffects"`
	TimeoutSeconds       timeoutSeconds       `json:"timeoutSeconds"`
	LabelSelector        *labelSelectorShape  `json:"labelSelector"`
	Namespace            *webhookNamespace    `json:"namespace"`
	MatchConditions      matchConditions      `json:"matchConditions"`
}

func (validatingShape) CheckTree(v any) error {
	return checkMap(v, "a validating webhook such as {name: policy.example.com, rules: [...]}")
}

// webhookNamespace selects namespaces by their labels only, as the API
// server's namespaceSelector does.
type webhookNamespace struct {
	LabelSelector *labelSelectorShape `json:"labelSelector"`
}

func (webhookNamespace) CheckTree(v any) error { return checkMap(v, "{labelSelector: {...}}") }

func (webhookNamespace) UnknownField(string, []string) string {
	return "unknown field; a validating webhook selects namespaces by namespace.labelSelector only (the API server's namespaceSelector)"
}

type ruleShape struct {
	APIGroups   ruleStrings `json:"apiGroups"`
	APIVersions ruleStrings `json:"apiVersions"`
	Resources   resources   `json:"resources"`
	Operations  operations  `json:"operations"`
	Scope       scope       `json:"scope"`
}

func (ruleShape) CheckTree(v any) error {
	return checkMap(v, "a rule {apiGroups, apiVersions, resources, operations, scope}")
}

type matchConditionShape struct {
	Name       str `json:"name"`
	Expression str `json:"expression"`
}

func (matchConditionShape) CheckTree(v any) error {
	return checkMap(v, "a condition {name, expression}")
}

type conversionShape struct {
	Name                 str                  `json:"name"`
	Group                str                  `json:"group"`
	IncludeSnapshotsFrom webhookSnapshotNames `json:"includeSnapshotsFrom"`
	CRDName              crdName              `json:"crdName"`
	Conversions          conversionRules      `json:"conversions"`
}

func (conversionShape) CheckTree(v any) error {
	return checkMap(v, "a conversion binding {name, crdName, conversions}")
}

type conversionRuleShape struct {
	FromVersion str `json:"fromVersion"`
	ToVersion   str `json:"toVersion"`
}

func (conversionRuleShape) CheckTree(v any) error {
	return checkMap(v, "a rule {fromVersion, toVersion}")
}

type (
	webhookName          string
	crdName              string
	failurePolicy        string
	sideEffects          string
	scope                string
	timeoutSeconds       int32
	resource             string
	operation            string
	webhookSnapshotNames []str
	ruleStrings          []str
	resources            []resource
	operations           []operation
)

func (webhookName) CheckTree(v any) error {
	if err := checkStr(v); err != nil {
		return err
	}
	if s := v.(string); len(s) > 253 || !dnsSubdomain.MatchString(s) || strings.Count(s, ".") < 2 {
		return fmt.Errorf("%q is not a fully qualified name; a validating webhook's name is a lowercase domain of at least three segments, such as policy.example.com", s)
	}
	return nil
}

func (crdName) CheckTree(v any) error {
	if err := checkStr(v); err != nil {
		return err
	}
	if s := v.(string); !dnsSubdomain.MatchString(s) || !strings.Contains(s, ".") {
		return fmt.Errorf("%q is not a CRD name; write <plural>.<group>, such as crontabs.stable.example.com", s)
	}
	return nil
}

func (failurePolicy) CheckTree(v any) error { return oneOf(v, "Fail", "Ignore") }
func (sideEffects) CheckTree(v any) error   { return oneOf(v, "None", "NoneOnDryRun") }
func (scope) CheckTree(v any) error         { return oneOf(v, "Cluster", "Namespaced", "*") }

func oneOf(v any, allowed ...string) error {
	if s, ok := v.(string); !ok || !slices.Contains(allowed, s) {
		return fmt.Errorf("is %s; write one of %s", describeValue(v), strings.Join(allowed, ", "))
	}
	return nil
}

func (timeoutSeconds) CheckTree(v any) error {
	if n, ok := wholeNumber(v); !ok || n < 1 || n > 30 {
		return fmt.Errorf("is %s; the timeout is a whole number of seconds from 1 to 30", describeValue(v))
	}
	return nil
}

func wholeNumber(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<31 {
			return int64(n), true
		}
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

func (resource) CheckTree(v any) error {
	if err := checkStr(v); err != nil {
		return err
	}
	if s := v.(string); s == "" || strings.Count(s, "/") > 1 {
		return fmt.Errorf("%q is not a resource; write a plural name (configmaps), a subresource (pods/status), or *", s)
	}
	return nil
}

func (operation) CheckTree(v any) error {
	if err := checkStr(v); err != nil {
		return err
	}
	if s := v.(string); !slices.Contains([]string{"CREATE", "UPDATE", "DELETE", "CONNECT", "*"}, s) {
		return fmt.Errorf("%q is not an operation; write CREATE, UPDATE, DELETE, CONNECT or *", s)
	}
	return nil
}

func (webhookSnapshotNames) CheckTree(v any) error {
	return checkList(v, "kubernetes binding names", "name kubernetes bindings or remove it")
}

const emptyRuleList = `a rule matches nothing without it ("*" matches all)`

func (ruleStrings) CheckTree(v any) error { return checkList(v, "strings", emptyRuleList) }
func (resources) CheckTree(v any) error   { return checkList(v, "strings", emptyRuleList) }
func (operations) CheckTree(v any) error  { return checkList(v, "strings", emptyRuleList) }

// validating converts the decoded kubernetesValidating at path.
func (p *configParser) validating(path document.Path, l validatingWebhooks, c *Config) error {
	seen := map[string]int{}
	for i, s := range l {
		at := path.Append(document.Index(i))
		b := &ValidatingBinding{
			Name: string(s.Name), Group: string(s.Group), IncludeSnapshotsFrom: strs(s.IncludeSnapshotsFrom),
			FailurePolicy:  string(s.FailurePolicy),
			SideEffects:    cmp.Or(string(s.SideEffects), DefaultSideEffects),
			TimeoutSeconds: cmp.Or(int32(s.TimeoutSeconds), DefaultTimeoutSeconds),
		}
		var err error
		if b.Rules, err = p.rules(at.Append(document.Key("rules")), s.Rules); err != nil {
			return err
		}
		if b.LabelSelector, err = p.labelSelector(at.Append(document.Key("labelSelector")), s.LabelSelector); err != nil {
			return err
		}
		if ns := s.Namespace; ns != nil {
			if ns.LabelSelector == nil {
				return p.fail(at.Append(document.Key("namespace")), "has no labelSelector; write namespace: {labelSelector: {matchLabels: {...}}} or remove it")
			}
			if b.NamespaceSelector, err = p.labelSelector(at.Append(document.Key("namespace"), document.Key("labelSelector")), ns.LabelSelector); err != nil {
				return err
			}
		}
		if s.MatchConditions != nil {
			b.MatchConditions = make([]MatchCondition, 0, len(s.MatchConditions))
		}
		for j, mc := range s.MatchConditions {
			if mc.Name == "" || mc.Expression == "" {
				return p.fail(at.Append(document.Key("matchConditions"), document.Index(j)), "needs a name and a CEL expression, such as {name: not-system, expression: '!request.userInfo.username.startsWith(\"system:\")'}")
			}
			b.MatchConditions = append(b.MatchConditions, MatchCondition{Name: string(mc.Name), Expression: string(mc.Expression)})
		}
		switch {
		case b.Name == "":
			return p.fail(at, "has no name; give the webhook a name such as policy.example.com")
		case len(b.Rules) == 0:
			return p.fail(at, "has no rules; add rules such as [{apiGroups: [\"\"], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]")
		}
		if j, dup := seen[b.Name]; dup {
			return p.fail(at.Append(document.Key("name")), "%q is the name of kubernetesValidating[%d] too; the webhooks of a hook need distinct names", b.Name, j)
		}
		seen[b.Name] = i
		c.Validating = append(c.Validating, b)
	}
	return nil
}

func (p *configParser) rules(path document.Path, l webhookRules) ([]WebhookRule, error) {
	out := make([]WebhookRule, 0, len(l))
	for i, s := range l {
		r := WebhookRule{APIGroups: strs(s.APIGroups), APIVersions: strs(s.APIVersions), Resources: strs(s.Resources), Operations: strs(s.Operations), Scope: string(s.Scope)}
		for _, req := range []struct {
			name string
			l    []string
		}{{"apiGroups", r.APIGroups}, {"apiVersions", r.APIVersions}, {"resources", r.Resources}, {"operations", r.Operations}} {
			if req.l == nil {
				return nil, p.fail(path.Append(document.Index(i)), "has no %s; a rule needs apiGroups, apiVersions, resources and operations (\"*\" matches all)", req.name)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// conversion converts the decoded kubernetesCustomResourceConversion at
// path.
func (p *configParser) conversion(path document.Path, l conversionBindings, c *Config) error {
	for i, s := range l {
		at := path.Append(document.Index(i))
		b := &ConversionBinding{Name: string(s.Name), Group: string(s.Group), IncludeSnapshotsFrom: strs(s.IncludeSnapshotsFrom), CRDName: string(s.CRDName)}
		for j, r := range s.Conversions {
			rat := at.Append(document.Key("conversions"), document.Index(j))
			if r.FromVersion == "" || r.ToVersion == "" {
				return p.fail(rat, "needs fromVersion and toVersion, such as {fromVersion: stable.example.com/v1, toVersion: stable.example.com/v2}")
			}
			if r.FromVersion == r.ToVersion {
				return p.fail(rat, "converts %s to itself; the API server never asks for that", r.FromVersion)
			}
			b.Conversions = append(b.Conversions, ConversionRule{FromVersion: string(r.FromVersion), ToVersion: string(r.ToVersion)})
		}
		switch {
		case b.Name == "":
			return p.fail(at, "has no name; give the binding a name, such as v1-to-v2")
		case b.CRDName == "":
			return p.fail(at, "has no crdName; name the CRD whose objects the hook converts, such as crontabs.stable.example.com")
		case len(b.Conversions) == 0:
			return p.fail(at, "has no conversions; list them, such as [{fromVersion: stable.example.com/v1, toVersion: stable.example.com/v2}]")
		}
		c.Conversion = append(c.Conversion, b)
	}
	return nil
}

// webhookChecks checks the webhook bindings' includeSnapshotsFrom against
// the hook's kubernetes bindings and adds the bindings of their group.
func (p *configParser) webhookChecks(c *Config) error {
	groups := groupsOf(c)
	for i, v := range c.Validating {
		if err := p.checkSnapshots(c, document.Path{document.Key(string(KubernetesValidating)), document.Index(i), document.Key("includeSnapshotsFrom")}, v.IncludeSnapshotsFrom); err != nil {
			return err
		}
		if g, ok := groups[v.Group]; ok {
			v.IncludeSnapshotsFrom = mergeNames(v.IncludeSnapshotsFrom, g)
		}
	}
	for i, cv := range c.Conversion {
		if err := p.checkSnapshots(c, document.Path{document.Key(string(KubernetesConversion)), document.Index(i), document.Key("includeSnapshotsFrom")}, cv.IncludeSnapshotsFrom); err != nil {
			return err
		}
		if g, ok := groups[cv.Group]; ok {
			cv.IncludeSnapshotsFrom = mergeNames(cv.IncludeSnapshotsFrom, g)
		}
	}
	return nil
}
