package operator

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/webhook"
)

// defaultWebhooks are shell-operator's defaults of the webhook servers.
func defaultWebhooks() webhook.Settings {
	return webhook.Settings{
		FailurePolicy: hook.DefaultFailurePolicy,
		Validating: webhook.ServerSettings{
			ConfigurationName: "shell-operator-hooks",
			ServiceName:       "shell-operator-validating-svc",
			ServerCert:        "/validating-certs/tls.crt",
			ServerKey:         "/validating-certs/tls.key",
			CA:                "/validating-certs/ca.crt",
			ListenAddress:     "0.0.0.0",
			ListenPort:        "9680",
		},
		Conversion: webhook.ServerSettings{
			ServiceName:   "shell-operator-conversion-svc",
			ServerCert:    "/conversion-certs/tls.crt",
			ServerKey:     "/conversion-certs/tls.key",
			CA:            "/conversion-certs/ca.crt",
			ListenAddress: "0.0.0.0",
			ListenPort:    "9681",
		},
	}
}

func (s *Settings) checkWebhooks() error {
	w := s.Webhooks
	if w.FailurePolicy != "Fail" && w.FailurePolicy != "Ignore" {
		return fmt.Errorf("VALIDATING_WEBHOOK_FAILURE_POLICY (--validating-webhook-failure-policy) %q: must be Fail or Ignore", w.FailurePolicy)
	}
	for _, c := range []struct {
		name string
		v    string
	}{{"STRATA_VALIDATING_WEBHOOK_URL (--validating-webhook-url)", w.Validating.URL}, {"STRATA_CONVERSION_WEBHOOK_URL (--conversion-webhook-url)", w.Conversion.URL}} {
		if c.v == "" {
			continue
		}
		u, err := url.Parse(c.v)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("%s %q: must be an https URL without query, such as https://operator.example.com:9680 (the API server calls only https webhooks)", c.name, c.v)
		}
	}
	return nil
}

// startWebhooks starts the webhook manager on a cluster and serves the
// global hooks' webhook bindings (the modules' follow at each converge).
// With the local backends nothing is served; a hook with webhook
// bindings is logged.
func (e *Engine) startWebhooks(ctx context.Context) error {
	if e.back.dynamic == nil {
		return nil
	}
	if e.webhooks == nil {
		s := e.s.Webhooks
		s.Namespace = e.s.Namespace
		e.webhooks = webhook.NewManager(s, e, e.back.dynamic, e.reg, e.s.MetricsPrefix, e.log)
	}
	e.webhooks.Start(ctx)
	return e.webhooks.Update(e.webhookBindings())
}

func (e *Engine) warnLocalWebhooks(he *hookEntry) {
	if he.cfg.HasWebhooks() {
		e.log.Warn("webhook bindings are served only on a cluster; with the local backends this hook's kubernetesValidating and kubernetesCustomResourceConversion bindings never run",
			"hook", he.label(), "validating", len(he.cfg.Validating), "conversion", len(he.cfg.Conversion))
	}
}

// updateWebhooks serves the webhook bindings of the global hooks and the
// enabled modules' hooks (after a converge).
func (e *Engine) updateWebhooks() {
	if e.webhooks == nil {
		return
	}
	if err := e.webhooks.Update(e.webhookBindings()); err != nil {
		e.log.Error("webhook bindings not updated", "error", err)
	}
}

// webhookBindings are the webhook bindings of the global hooks and of the
// enabled modules' hooks, in their order.
func (e *Engine) webhookBindings() webhook.Bindings {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b webhook.Bindings
	add := func(he *hookEntry) {
		for _, v := range he.cfg.Validating {
			b.Validating = append(b.Validating, webhook.Validating{Hook: he.label(), Binding: v})
		}
		for _, c := range he.cfg.Conversion {
			b.Conversion = append(b.Conversion, webhook.Conversion{Hook: he.label(), Binding: c})
		}
	}
	for _, he := range e.global {
		add(he)
	}
	for _, name := range e.enabled {
		if ms := e.mods[name]; ms != nil && ms.enabled {
			for _, he := range ms.hooks {
				add(he)
			}
		}
	}
	return b
}

// hookByLabel returns the hook entry whose label is label, or nil.
func (e *Engine) hookByLabel(label string) *hookEntry {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, he := range e.global {
		if he.label() == label {
			return he
		}
	}
	if rest, ok := strings.CutPrefix(label, "module "); ok {
		name, _, _ := strings.Cut(rest, " ")
		if ms := e.mods[name]; ms != nil {
			for _, he := range ms.hooks {
				if he.label() == label {
					return he
				}
			}
		}
	}
	return nil
}

// RunWebhook runs a hook for one review, at once and outside the queues
// (the API server waits for the answer), and returns its response file
// (webhook.Runner). Values and config patches, metrics and kubernetes
// patches it writes are applied as for any run.
func (e *Engine) RunWebhook(ctx context.Context, hookID string, bc hook.BindingContext) ([]byte, error) {
	he := e.hookByLabel(hookID)
	if he == nil {
		return nil, fmt.Errorf("the hook %s is gone (its module was disabled or reloaded)", hookID)
	}
	ch, err := e.runHook(ctx, he, bc.BindingType, []hook.BindingContext{bc}, "webhook", "Webhook", nil)
	if err != nil {
		return nil, err
	}
	return ch.response, nil
}

var _ webhook.Runner = (*Engine)(nil)

// webhookConfigView adds the webhook bindings of c to a hook's view
// (hookConfigView), in shell-operator's shape.
func webhookConfigView(c *hook.Config, out map[string]any) {
	if len(c.Validating) > 0 {
		var list []any
		for _, v := range c.Validating {
			var rules []any
			for _, r := range v.Rules {
				rm := map[string]any{"apiGroups": r.APIGroups, "apiVersions": r.APIVersions, "resources": r.Resources, "operations": r.Operations}
				putNonEmpty(rm, "scope", r.Scope)
				rules = append(rules, rm)
			}
			m := map[string]any{"name": v.Name, "rules": rules, "sideEffects": v.SideEffects, "timeoutSeconds": v.TimeoutSeconds}
			putNonEmpty(m, "failurePolicy", v.FailurePolicy)
			putNonEmpty(m, "group", v.Group)
			putNonEmpty(m, "includeSnapshotsFrom", v.IncludeSnapshotsFrom)
			if v.LabelSelector != nil {
				m["labelSelector"] = labelSelectorView(v.LabelSelector)
			}
			if v.NamespaceSelector != nil {
				m["namespace"] = map[string]any{"labelSelector": labelSelectorView(v.NamespaceSelector)}
			}
			if len(v.MatchConditions) > 0 {
				var mcs []any
				for _, mc := range v.MatchConditions {
					mcs = append(mcs, map[string]any{"name": mc.Name, "expression": mc.Expression})
				}
				m["matchConditions"] = mcs
			}
			list = append(list, m)
		}
		out[string(hook.KubernetesValidating)] = list
	}
	if len(c.Conversion) > 0 {
		var list []any
		for _, cv := range c.Conversion {
			var rules []any
			for _, r := range cv.Conversions {
				rules = append(rules, map[string]any{"fromVersion": r.FromVersion, "toVersion": r.ToVersion})
			}
			m := map[string]any{"name": cv.Name, "crdName": cv.CRDName, "conversions": rules}
			putNonEmpty(m, "group", cv.Group)
			putNonEmpty(m, "includeSnapshotsFrom", cv.IncludeSnapshotsFrom)
			list = append(list, m)
		}
		out[string(hook.KubernetesConversion)] = list
	}
}
