package hook_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/operator/hook"
)

func TestParseWebhookBindings(t *testing.T) {
	cfg, err := hook.ParseConfig([]byte(`configVersion: v1
kubernetes:
- {name: crs, kind: CronTab, group: g}
- {name: nodes, kind: Node}
kubernetesValidating:
- name: my-crd-validator.example.com
  includeSnapshotsFrom: [nodes]
  group: g
  labelSelector: {matchLabels: {label1: value1}}
  namespace:
    labelSelector:
      matchExpressions:
      - {key: environment, operator: In, values: [prod, staging]}
  rules:
  - {apiVersions: [v1], apiGroups: [stable.example.com], resources: [crontabs], operations: ["*"]}
  - {operations: [CREATE, UPDATE], apiGroups: [apps], apiVersions: [v1, v1beta1], resources: [deployments, replicasets], scope: Namespaced}
  failurePolicy: Ignore
  sideEffects: NoneOnDryRun
  timeoutSeconds: 2
  matchConditions:
  - {name: exclude-user, expression: '("system:apiserver" != request.userInfo.username)'}
kubernetesCustomResourceConversion:
- name: alpha1_to_alpha2
  includeSnapshotsFrom: [crs]
  crdName: crontabs.stable.example.com
  conversions:
  - {fromVersion: stable.example.com/v1alpha1, toVersion: stable.example.com/v1alpha2}
`), hook.Module, "h.sh")
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	want := &hook.ValidatingBinding{
		Name: "my-crd-validator.example.com", Group: "g", IncludeSnapshotsFrom: []string{"nodes", "crs"},
		Rules: []hook.WebhookRule{
			{APIGroups: []string{"stable.example.com"}, APIVersions: []string{"v1"}, Resources: []string{"crontabs"}, Operations: []string{"*"}},
			{APIGroups: []string{"apps"}, APIVersions: []string{"v1", "v1beta1"}, Resources: []string{"deployments", "replicasets"}, Operations: []string{"CREATE", "UPDATE"}, Scope: "Namespaced"},
		},
		FailurePolicy: "Ignore", SideEffects: "NoneOnDryRun", TimeoutSeconds: 2,
		LabelSelector:     &hook.LabelSelector{MatchLabels: map[string]string{"label1": "value1"}},
		NamespaceSelector: &hook.LabelSelector{MatchExpressions: []hook.LabelRequirement{{Key: "environment", Operator: "In", Values: []string{"prod", "staging"}}}},
		MatchConditions:   []hook.MatchCondition{{Name: "exclude-user", Expression: `("system:apiserver" != request.userInfo.username)`}},
	}
	if diff := cmp.Diff(want, cfg.ValidatingBinding("my-crd-validator.example.com")); diff != "" {
		t.Errorf("validating binding (-want +got):\n%s", diff)
	}
	wantConv := []*hook.ConversionBinding{{Name: "alpha1_to_alpha2", IncludeSnapshotsFrom: []string{"crs"}, CRDName: "crontabs.stable.example.com",
		Conversions: []hook.ConversionRule{{FromVersion: "stable.example.com/v1alpha1", ToVersion: "stable.example.com/v1alpha2"}}}}
	if diff := cmp.Diff(wantConv, cfg.Conversion); diff != "" {
		t.Errorf("conversion bindings (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		t    hook.BindingType
		name string
		want []string
	}{
		{hook.KubernetesValidating, "my-crd-validator.example.com", []string{"nodes", "crs"}},
		{hook.KubernetesConversion, "alpha1_to_alpha2", []string{"crs"}},
		{hook.KubernetesValidating, "other.example.com", nil},
		{hook.BeforeHelm, "beforeHelm", []string{"crs", "nodes"}},
	} {
		if got := cfg.SnapshotsFor(tc.t, tc.name); !cmp.Equal(got, tc.want) {
			t.Errorf("SnapshotsFor(%s, %s) = %v, want %v", tc.t, tc.name, got, tc.want)
		}
	}
	if !cfg.Has(hook.KubernetesValidating) || !cfg.Has(hook.KubernetesConversion) || !cfg.HasWebhooks() {
		t.Error("Has: the webhook bindings are not reported")
	}
}

// A hook with only a webhook binding is a hook with a binding.
func TestParseWebhookOnly(t *testing.T) {
	cfg, err := hook.ParseConfig([]byte("configVersion: v1\nkubernetesValidating:\n- name: a.example.com\n  rules: [{apiGroups: [''], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]\n"), hook.Global, "h.sh")
	if err != nil {
		t.Fatal(err)
	}
	if v := cfg.Validating[0]; v.FailurePolicy != "" || v.SideEffects != "None" || v.TimeoutSeconds != 10 {
		t.Errorf("defaults %+v, want failurePolicy unset (the operator's default), sideEffects None, timeoutSeconds 10", v)
	}
}

func TestParseWebhookErrors(t *testing.T) {
	const rule = "  rules: [{apiGroups: [''], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]\n"
	tests := []struct {
		name, in, want string
	}{
		{"validating empty", "configVersion: v1\nkubernetesValidating: []\n", "hook h.sh --config:2: kubernetesValidating: is an empty list; remove it or add a webhook such as {name: policy.example.com, rules: [...]}"},
		{"validating no name", "configVersion: v1\nkubernetesValidating:\n- failurePolicy: Fail\n" + rule, "hook h.sh --config:3: kubernetesValidating[0]: has no name; give the webhook a name such as policy.example.com"},
		{"validating short name", "configVersion: v1\nkubernetesValidating:\n- name: example.com\n" + rule, "hook h.sh --config:3: kubernetesValidating[0].name: \"example.com\" is not a fully qualified name; a validating webhook's name is a lowercase domain of at least three segments, such as policy.example.com"},
		{"validating duplicate", "configVersion: v1\nkubernetesValidating:\n- name: a.example.com\n" + rule + "- name: a.example.com\n" + rule, "hook h.sh --config:5: kubernetesValidating[1].name: \"a.example.com\" is the name of kubernetesValidating[0] too; the webhooks of a hook need distinct names"},
		{"validating failurePolicy", "configVersion: v1\nkubernetesValidating:\n- name: a.example.com\n  failurePolicy: fail\n" + rule, "hook h.sh --config:4: kubernetesValidating[0].failurePolicy: is \"fail\"; write one of Fail, Ignore"},
		{"validating sideEffects", "configVersion: v1\nkubernetesValidating:\n- name: a.example.com\n  sideEffects: Some\n" + rule, "hook h.sh --config:4: kubernetesValidating[0].sideEffects: is \"Some\"; write one of None, NoneOnDryRun"},
		{"validating timeout", "configVersion: v1\nkubernetesValidating:\n- name: a.example.com\n  timeoutSeconds: 0\n" + rule, "hook h.sh --config:4: kubernetesValidating[0].timeoutSeconds: is 0; the timeout is a whole number of seconds from 1 to 30"},
		{"validating typo", "configVersion: v1\nkubernetesValidating:\n- name: a.example.com\n  objectSelector: {}\n" + rule, "hook h.sh --config:4: kubernetesValidating[0].objectSelector: unknown field; known fields are name, group, includeSnapshotsFrom, rules, failurePolicy, sideEffects, timeoutSeconds, labelSelector, namespace, matchConditions"},
		{"validating rule without operations", "configVersion: v1\nkubernetesValidating:\n- name: a.example.com\n  rules: [{apiGroups: [''], apiVersions: [v1], resources: [pods]}]\n", "hook h.sh --config:4: kubernetesValidating[0].rules[0]: has no operations; a rule needs apiGroups, apiVersions, resources and operations (\"*\" matches all)"},
		{"validating bad operation", "configVersion: v1\nkubernetesValidating:\n- name: a.example.com\n  rules: [{apiGroups: [''], apiVersions: [v1], resources: [pods], operations: [Create]}]\n", "hook h.sh --config:4: kubernetesValidating[0].rules[0].operations[0]: \"Create\" is not an operation; write CREATE, UPDATE, DELETE, CONNECT or *"},
		{"validating bad scope", "configVersion: v1\nkubernetesValidating:\n- name: a.example.com\n  rules: [{apiGroups: [''], apiVersions: [v1], resources: [pods], operations: ['*'], scope: Global}]\n", "hook h.sh --config:4: kubernetesValidating[0].rules[0].scope: is \"Global\"; write one of Cluster, Namespaced, *"},
		{"validating namespace nameSelector", "configVersion: v1\nkubernetesValidating:\n- name: a.example.com\n  namespace: {nameSelector: {matchNames: [a]}}\n" + rule, "hook h.sh --config:4: kubernetesValidating[0].namespace.nameSelector: unknown field; a validating webhook selects namespaces by namespace.labelSelector only (the API server's namespaceSelector)"},
		{"validating snapshots of nothing", "configVersion: v1\nkubernetesValidating:\n- name: a.example.com\n  includeSnapshotsFrom: [pods]\n" + rule, "hook h.sh --config:4: kubernetesValidating[0].includeSnapshotsFrom[0]: \"pods\" names no kubernetes binding of this hook; this hook has no kubernetes bindings"},
		{"validating matchCondition without expression", "configVersion: v1\nkubernetesValidating:\n- name: a.example.com\n  matchConditions: [{name: x}]\n" + rule, "hook h.sh --config:4: kubernetesValidating[0].matchConditions[0]: needs a name and a CEL expression, such as {name: not-system, expression: '!request.userInfo.username.startsWith(\"system:\")'}"},
		{"conversion no conversions", "configVersion: v1\nkubernetesCustomResourceConversion:\n- {name: a, crdName: crontabs.stable.example.com}\n", "hook h.sh --config:3: kubernetesCustomResourceConversion[0]: has no conversions; list them, such as [{fromVersion: stable.example.com/v1, toVersion: stable.example.com/v2}]"},
		{"conversion bad crdName", "configVersion: v1\nkubernetesCustomResourceConversion:\n- {name: a, crdName: CronTab, conversions: [{fromVersion: v1, toVersion: v2}]}\n", "hook h.sh --config:3: kubernetesCustomResourceConversion[0].crdName: \"CronTab\" is not a CRD name; write <plural>.<group>, such as crontabs.stable.example.com"},
		{"conversion rule half", "configVersion: v1\nkubernetesCustomResourceConversion:\n- name: a\n  crdName: crontabs.stable.example.com\n  conversions:\n  - {fromVersion: v1}\n", "hook h.sh --config:6: kubernetesCustomResourceConversion[0].conversions[0]: needs fromVersion and toVersion, such as {fromVersion: stable.example.com/v1, toVersion: stable.example.com/v2}"},
		{"conversion to itself", "configVersion: v1\nkubernetesCustomResourceConversion:\n- name: a\n  crdName: crontabs.stable.example.com\n  conversions:\n  - {fromVersion: v1, toVersion: v1}\n", "hook h.sh --config:6: kubernetesCustomResourceConversion[0].conversions[0]: converts v1 to itself; the API server never asks for that"},
		{"conversion typo", "configVersion: v1\nkubernetesCustomResourceConversion:\n- name: a\n  crd: crontabs.stable.example.com\n", "hook h.sh --config:4: kubernetesCustomResourceConversion[0].crd: unknown field; known fields are name, group, includeSnapshotsFrom, crdName, conversions"},
		{"webhook typo at the top", "configVersion: v1\nkubernetesValidatng: []\n", "hook h.sh --config:2: kubernetesValidatng: unknown field (kubernetesValidatng is a forbidden property); did you mean kubernetesValidating?"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := hook.ParseConfig([]byte(tc.in), hook.Global, "h.sh")
			if err == nil {
				t.Fatalf("ParseConfig succeeded, want %s", tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("ParseConfig error:\n got %s\nwant %s", err, tc.want)
			}
		})
	}
}

// A webhook run gets $VALIDATING_RESPONSE_PATH (and
// $ADMISSION_RESPONSE_PATH) or $CONVERSION_RESPONSE_PATH, and what the
// hook writes there comes back; other runs get neither.
func TestRunWebhookResponse(t *testing.T) {
	h := script(t, hook.Global, `
if [ -n "$VALIDATING_RESPONSE_PATH" ]; then
  [ "$VALIDATING_RESPONSE_PATH" = "$ADMISSION_RESPONSE_PATH" ] || exit 7
  grep -q '"type":"Validating"' "$BINDING_CONTEXT_PATH" || exit 8
  echo '{"allowed":false,"message":"no"}' > "$VALIDATING_RESPONSE_PATH"
fi
if [ -n "$CONVERSION_RESPONSE_PATH" ]; then
  grep -q '"fromVersion":"v1"' "$BINDING_CONTEXT_PATH" || exit 9
  echo '{"failedMessage":"cannot"}' > "$CONVERSION_RESPONSE_PATH"
fi
if [ -n "$VALIDATING_RESPONSE_PATH$CONVERSION_RESPONSE_PATH" ]; then exit 0; fi
echo "$VALIDATING_RESPONSE_PATH$CONVERSION_RESPONSE_PATH" > /dev/null
`)
	r := runner(t)
	review := json.RawMessage(`{"request":{"uid":"1"}}`)
	for _, tc := range []struct {
		name string
		bc   hook.BindingContext
		want string
	}{
		{"validating", hook.BindingContext{BindingType: hook.KubernetesValidating, Binding: "a.example.com", Type: hook.TypeValidating, Review: review}, `{"allowed":false,"message":"no"}`},
		{"conversion", hook.BindingContext{BindingType: hook.KubernetesConversion, Binding: "c", Type: hook.TypeConversion, FromVersion: "v1", ToVersion: "v2", Review: review}, `{"failedMessage":"cannot"}`},
		{"schedule", hook.BindingContext{BindingType: hook.Schedule, Binding: "s", Type: hook.TypeSchedule}, ""},
	} {
		// Twice: the second run must not see the first one's answer.
		for range 2 {
			out, err := r.Run(context.Background(), h, hook.Input{Contexts: []hook.BindingContext{tc.bc}})
			if err != nil {
				t.Fatalf("%s: Run: %v", tc.name, err)
			}
			if got := strings.TrimSpace(string(out.Response)); got != tc.want {
				t.Errorf("%s: Response = %q, want %q", tc.name, got, tc.want)
			}
		}
	}
}
