package hook

import (
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/strata-dev/strata/internal/document"
)

var validatingKeys = []string{"name", "group", "includeSnapshotsFrom", "rules", "failurePolicy", "sideEffects", "timeoutSeconds", "labelSelector", "namespace", "matchConditions"}
var ruleKeys = []string{"apiGroups", "apiVersions", "resources", "operations", "scope"}
var conversionKeys = []string{"name", "group", "includeSnapshotsFrom", "crdName", "conversions"}

// dnsSubdomain is a lowercase RFC 1123 subdomain.
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// validatingList reads kubernetesValidating: a list of webhooks.
func (p *configParser) validatingList(path document.Path, v any, c *Config) error {
	l, err := p.list(path, v, "validating webhooks such as {name: policy.example.com, rules: [...]}")
	if err != nil {
		return err
	}
	if len(l) == 0 {
		return p.fail(path, "is an empty list; remove it or add a webhook such as {name: policy.example.com, rules: [...]}")
	}
	seen := map[string]int{}
	for i, item := range l {
		ipath := path.Append(document.Index(i))
		m, err := p.mapAt(ipath, item, "a validating webhook such as {name: policy.example.com, rules: [...]}")
		if err != nil {
			return err
		}
		b, err := p.validating(ipath, m)
		if err != nil {
			return err
		}
		if j, dup := seen[b.Name]; dup {
			return p.fail(ipath.Append(document.Key("name")), "%q is the name of kubernetesValidating[%d] too; the webhooks of a hook need distinct names", b.Name, j)
		}
		seen[b.Name] = i
		c.Validating = append(c.Validating, b)
	}
	return nil
}

func (p *configParser) validating(ipath document.Path, m map[string]any) (*ValidatingBinding, error) {
	b := &ValidatingBinding{SideEffects: DefaultSideEffects, TimeoutSeconds: DefaultTimeoutSeconds}
	var err error
	for _, key := range keys(m) {
		kpath := ipath.Append(document.Key(key))
		val := m[key]
		switch key {
		case "name":
			if b.Name, err = p.str(kpath, val); err != nil {
				return nil, err
			}
			if len(b.Name) > 253 || !dnsSubdomain.MatchString(b.Name) || strings.Count(b.Name, ".") < 2 {
				return nil, p.fail(kpath, "%q is not a fully qualified name; a validating webhook's name is a lowercase domain of at least three segments, such as policy.example.com", b.Name)
			}
		case "group":
			if b.Group, err = p.str(kpath, val); err != nil {
				return nil, err
			}
		case "includeSnapshotsFrom":
			if b.IncludeSnapshotsFrom, err = p.strList(kpath, val, "kubernetes binding names"); err != nil {
				return nil, err
			}
			if len(b.IncludeSnapshotsFrom) == 0 {
				return nil, p.fail(kpath, "is an empty list; name kubernetes bindings or remove it")
			}
		case "rules":
			if b.Rules, err = p.rules(kpath, val); err != nil {
				return nil, err
			}
		case "failurePolicy":
			if b.FailurePolicy, err = p.enum(kpath, val, "Fail", "Ignore"); err != nil {
				return nil, err
			}
		case "sideEffects":
			if b.SideEffects, err = p.enum(kpath, val, "None", "NoneOnDryRun"); err != nil {
				return nil, err
			}
		case "timeoutSeconds":
			n, ok := wholeNumber(val)
			if !ok || n < 1 || n > 30 {
				return nil, p.fail(kpath, "is %s; the timeout is a whole number of seconds from 1 to 30", describeValue(val))
			}
			b.TimeoutSeconds = int32(n)
		case "labelSelector":
			if b.LabelSelector, err = p.labelSelector(kpath, val); err != nil {
				return nil, err
			}
		case "namespace":
			ns, err := p.mapAt(kpath, val, "{labelSelector: {...}}")
			if err != nil {
				return nil, err
			}
			for _, nk := range keys(ns) {
				if nk != "labelSelector" {
					return nil, p.fail(kpath.Append(document.Key(nk)), "unknown field; a validating webhook selects namespaces by namespace.labelSelector only (the API server's namespaceSelector)")
				}
			}
			if _, ok := ns["labelSelector"]; !ok {
				return nil, p.fail(kpath, "has no labelSelector; write namespace: {labelSelector: {matchLabels: {...}}} or remove it")
			}
			if b.NamespaceSelector, err = p.labelSelector(kpath.Append(document.Key("labelSelector")), ns["labelSelector"]); err != nil {
				return nil, err
			}
		case "matchConditions":
			if b.MatchConditions, err = p.matchConditions(kpath, val); err != nil {
				return nil, err
			}
		default:
			return nil, p.unknown(kpath, key, validatingKeys)
		}
	}
	if b.Name == "" {
		return nil, p.fail(ipath, "has no name; give the webhook a name such as policy.example.com")
	}
	if len(b.Rules) == 0 {
		return nil, p.fail(ipath, "has no rules; add rules such as [{apiGroups: [\"\"], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]")
	}
	return b, nil
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

func (p *configParser) enum(path document.Path, v any, allowed ...string) (string, error) {
	s, ok := v.(string)
	if !ok || !slices.Contains(allowed, s) {
		return "", p.fail(path, "is %s; write one of %s", describeValue(v), strings.Join(allowed, ", "))
	}
	return s, nil
}

func (p *configParser) rules(path document.Path, v any) ([]WebhookRule, error) {
	l, err := p.list(path, v, "rules such as {apiGroups: [\"\"], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}")
	if err != nil {
		return nil, err
	}
	out := make([]WebhookRule, 0, len(l))
	for i, item := range l {
		ipath := path.Append(document.Index(i))
		m, err := p.mapAt(ipath, item, "a rule {apiGroups, apiVersions, resources, operations, scope}")
		if err != nil {
			return nil, err
		}
		var r WebhookRule
		for _, key := range keys(m) {
			kpath := ipath.Append(document.Key(key))
			var list *[]string
			switch key {
			case "apiGroups":
				list = &r.APIGroups
			case "apiVersions":
				list = &r.APIVersions
			case "resources":
				list = &r.Resources
			case "operations":
				list = &r.Operations
			case "scope":
				if r.Scope, err = p.enum(kpath, m[key], "Cluster", "Namespaced", "*"); err != nil {
					return nil, err
				}
				continue
			default:
				return nil, p.unknown(kpath, key, ruleKeys)
			}
			if *list, err = p.strList(kpath, m[key], "strings"); err != nil {
				return nil, err
			}
			if len(*list) == 0 {
				return nil, p.fail(kpath, "is an empty list; a rule matches nothing without it (\"*\" matches all)")
			}
		}
		for _, req := range []struct {
			name string
			l    []string
		}{{"apiGroups", r.APIGroups}, {"apiVersions", r.APIVersions}, {"resources", r.Resources}, {"operations", r.Operations}} {
			if req.l == nil {
				return nil, p.fail(ipath, "has no %s; a rule needs apiGroups, apiVersions, resources and operations (\"*\" matches all)", req.name)
			}
		}
		for j, op := range r.Operations {
			if !slices.Contains([]string{"CREATE", "UPDATE", "DELETE", "CONNECT", "*"}, op) {
				return nil, p.fail(ipath.Append(document.Key("operations")).Append(document.Index(j)), "%q is not an operation; write CREATE, UPDATE, DELETE, CONNECT or *", op)
			}
		}
		for j, res := range r.Resources {
			if res == "" || strings.Count(res, "/") > 1 {
				return nil, p.fail(ipath.Append(document.Key("resources")).Append(document.Index(j)), "%q is not a resource; write a plural name (configmaps), a subresource (pods/status), or *", res)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

func (p *configParser) matchConditions(path document.Path, v any) ([]MatchCondition, error) {
	l, err := p.list(path, v, "conditions {name, expression}")
	if err != nil {
		return nil, err
	}
	out := make([]MatchCondition, 0, len(l))
	for i, item := range l {
		ipath := path.Append(document.Index(i))
		m, err := p.mapAt(ipath, item, "a condition {name, expression}")
		if err != nil {
			return nil, err
		}
		var mc MatchCondition
		for _, key := range keys(m) {
			kpath := ipath.Append(document.Key(key))
			switch key {
			case "name":
				mc.Name, err = p.str(kpath, m[key])
			case "expression":
				mc.Expression, err = p.str(kpath, m[key])
			default:
				err = p.unknown(kpath, key, []string{"name", "expression"})
			}
			if err != nil {
				return nil, err
			}
		}
		if mc.Name == "" || mc.Expression == "" {
			return nil, p.fail(ipath, "needs a name and a CEL expression, such as {name: not-system, expression: '!request.userInfo.username.startsWith(\"system:\")'}")
		}
		out = append(out, mc)
	}
	return out, nil
}

// conversionList reads kubernetesCustomResourceConversion.
func (p *configParser) conversionList(path document.Path, v any, c *Config) error {
	l, err := p.list(path, v, "conversions such as {name: v1-to-v2, crdName: crontabs.stable.example.com, conversions: [...]}")
	if err != nil {
		return err
	}
	if len(l) == 0 {
		return p.fail(path, "is an empty list; remove it or add a binding such as {name: v1-to-v2, crdName: crontabs.stable.example.com, conversions: [...]}")
	}
	for i, item := range l {
		ipath := path.Append(document.Index(i))
		m, err := p.mapAt(ipath, item, "a conversion binding {name, crdName, conversions}")
		if err != nil {
			return err
		}
		b := &ConversionBinding{}
		for _, key := range keys(m) {
			kpath := ipath.Append(document.Key(key))
			val := m[key]
			switch key {
			case "name":
				b.Name, err = p.str(kpath, val)
			case "group":
				b.Group, err = p.str(kpath, val)
			case "includeSnapshotsFrom":
				if b.IncludeSnapshotsFrom, err = p.strList(kpath, val, "kubernetes binding names"); err == nil && len(b.IncludeSnapshotsFrom) == 0 {
					err = p.fail(kpath, "is an empty list; name kubernetes bindings or remove it")
				}
			case "crdName":
				if b.CRDName, err = p.str(kpath, val); err == nil && (!dnsSubdomain.MatchString(b.CRDName) || !strings.Contains(b.CRDName, ".")) {
					err = p.fail(kpath, "%q is not a CRD name; write <plural>.<group>, such as crontabs.stable.example.com", b.CRDName)
				}
			case "conversions":
				b.Conversions, err = p.conversionRules(kpath, val)
			default:
				err = p.unknown(kpath, key, conversionKeys)
			}
			if err != nil {
				return err
			}
		}
		switch {
		case b.Name == "":
			return p.fail(ipath, "has no name; give the binding a name, such as v1-to-v2")
		case b.CRDName == "":
			return p.fail(ipath, "has no crdName; name the CRD whose objects the hook converts, such as crontabs.stable.example.com")
		case len(b.Conversions) == 0:
			return p.fail(ipath, "has no conversions; list them, such as [{fromVersion: stable.example.com/v1, toVersion: stable.example.com/v2}]")
		}
		c.Conversion = append(c.Conversion, b)
	}
	return nil
}

func (p *configParser) conversionRules(path document.Path, v any) ([]ConversionRule, error) {
	l, err := p.list(path, v, "rules {fromVersion, toVersion}")
	if err != nil {
		return nil, err
	}
	out := make([]ConversionRule, 0, len(l))
	for i, item := range l {
		ipath := path.Append(document.Index(i))
		m, err := p.mapAt(ipath, item, "a rule {fromVersion, toVersion}")
		if err != nil {
			return nil, err
		}
		var r ConversionRule
		for _, key := range keys(m) {
			kpath := ipath.Append(document.Key(key))
			switch key {
			case "fromVersion":
				r.FromVersion, err = p.str(kpath, m[key])
			case "toVersion":
				r.ToVersion, err = p.str(kpath, m[key])
			default:
				err = p.unknown(kpath, key, []string{"fromVersion", "toVersion"})
			}
			if err != nil {
				return nil, err
			}
		}
		if r.FromVersion == "" || r.ToVersion == "" {
			return nil, p.fail(ipath, "needs fromVersion and toVersion, such as {fromVersion: stable.example.com/v1, toVersion: stable.example.com/v2}")
		}
		if r.FromVersion == r.ToVersion {
			return nil, p.fail(ipath, "converts %s to itself; the API server never asks for that", r.FromVersion)
		}
		out = append(out, r)
	}
	return out, nil
}

// webhookChecks checks the webhook bindings' includeSnapshotsFrom against
// the hook's kubernetes bindings and adds the bindings of their group.
func (p *configParser) webhookChecks(c *Config) error {
	known := map[string]bool{}
	groups := map[string][]string{}
	var all []string
	for _, k := range c.Kubernetes {
		if !known[k.Name] {
			all = append(all, k.Name)
		}
		known[k.Name] = true
		if k.Group != "" {
			groups[k.Group] = append(groups[k.Group], k.Name)
		}
	}
	check := func(path document.Path, names []string) error {
		for j, n := range names {
			if !known[n] {
				hint := "this hook has no kubernetes bindings"
				if len(all) > 0 {
					hint = "this hook's kubernetes bindings are " + strings.Join(all, ", ")
				}
				return p.fail(path.Append(document.Index(j)), "%q names no kubernetes binding of this hook; %s", n, hint)
			}
		}
		return nil
	}
	for i, v := range c.Validating {
		if err := check(document.Path{document.Key(string(KubernetesValidating)), document.Index(i), document.Key("includeSnapshotsFrom")}, v.IncludeSnapshotsFrom); err != nil {
			return err
		}
		if g, ok := groups[v.Group]; ok {
			v.IncludeSnapshotsFrom = mergeNames(v.IncludeSnapshotsFrom, g)
		}
	}
	for i, cv := range c.Conversion {
		if err := check(document.Path{document.Key(string(KubernetesConversion)), document.Index(i), document.Key("includeSnapshotsFrom")}, cv.IncludeSnapshotsFrom); err != nil {
			return err
		}
		if g, ok := groups[cv.Group]; ok {
			cv.IncludeSnapshotsFrom = mergeNames(cv.IncludeSnapshotsFrom, g)
		}
	}
	return nil
}
