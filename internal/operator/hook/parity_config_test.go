package hook_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-dev/strata/internal/operator/hook"
)

// TestConfigParityShellOperator runs the behaviours shell-operator's own
// hook configuration tests (pkg/hook/config) pin down, each on a small
// input of our own: what is accepted, the defaults filled in, and what is
// refused.
func TestConfigParityShellOperator(t *testing.T) {
	tests := []struct {
		name    string
		kind    hook.Kind
		in      string
		wantErr []string // substrings of the error; nil: no error
		check   func(t *testing.T, c *hook.Config)
	}{
		{name: "unknown configVersion", in: `{"configVersion":"v7","onStartup":1}`, wantErr: []string{"configVersion"}},
		{name: "empty configVersion", in: `{"configVersion":"","onStartup":1}`, wantErr: []string{"configVersion"}},
		{name: "v0 onStartup", in: `{"onStartup": 3}`, check: func(t *testing.T, c *hook.Config) {
			if c.Version != "v0" {
				t.Errorf("version %q, want v0", c.Version)
			}
			if o, ok := c.Order(hook.OnStartup); !ok || o != 3 {
				t.Errorf("onStartup %v %v, want 3", o, ok)
			}
		}},
		{name: "v0 schedules with seconds and onKubernetesEvent", in: `{"onStartup":2,
		  "schedule":[{"name":"a","crontab":"0 */2 * * * *"},{"name":"b","crontab":"0 */7 * * * *"}],
		  "onKubernetesEvent":[{"name":"watch cms","kind":"configmap","allowFailure":true}]}`,
			check: func(t *testing.T, c *hook.Config) {
				if c.Version != "v0" || len(c.Schedules) != 2 || len(c.Kubernetes) != 1 {
					t.Fatalf("got %+v", c)
				}
				if c.Schedules[0].Name != "a" || c.Schedules[1].Name != "b" {
					t.Errorf("schedule names %q %q", c.Schedules[0].Name, c.Schedules[1].Name)
				}
				k := c.Kubernetes[0]
				if k.Name != "watch cms" || k.Kind != "configmap" || !k.AllowFailure {
					t.Errorf("kubernetes %+v", k)
				}
			}},
		{name: "v0 every field", in: `{"onStartup":5,"schedule":[{"name":"s","crontab":"*/3 * * * * *","allowFailure":true}],
		  "onKubernetesEvent":[{"name":"n","kind":"Secret","event":["add","update"],"selector":{"matchLabels":{"x":"y"}},
		  "objectName":"one","namespaceSelector":{"matchNames":["ns1"]},"jqFilter":".data","allowFailure":true}]}`,
			check: func(t *testing.T, c *hook.Config) {
				k := c.Kubernetes[0]
				if len(k.ExecuteHookOnEvent) != 2 || k.ExecuteHookOnEvent[0] != hook.Added || k.ExecuteHookOnEvent[1] != hook.Modified {
					t.Errorf("events %v", k.ExecuteHookOnEvent)
				}
				if len(k.NameSelector) != 1 || k.NameSelector[0] != "one" || k.Namespace == nil || k.Namespace.NameSelector[0] != "ns1" {
					t.Errorf("selectors %+v %+v", k.NameSelector, k.Namespace)
				}
			}},
		{name: "v1 onStartup", in: `{"configVersion":"v1","onStartup":7}`, check: func(t *testing.T, c *hook.Config) {
			if o, _ := c.Order(hook.OnStartup); c.Version != "v1" || o != 7 {
				t.Errorf("got %v %v", c.Version, o)
			}
		}},
		{name: "v1 onStartup not a number", in: "configVersion: v1\nonStartup: x1\n", wantErr: []string{"onStartup"}},
		{name: "schedule queues", in: "configVersion: v1\nonStartup: 4\nschedule:\n- {name: m, crontab: '*/5 * * * *'}\n- {name: s, crontab: '*/5 * * * * *', queue: elsewhere}\n",
			check: func(t *testing.T, c *hook.Config) {
				if c.Schedules[0].Queue != "main" || c.Schedules[1].Queue != "elsewhere" {
					t.Errorf("queues %q %q", c.Schedules[0].Queue, c.Schedules[1].Queue)
				}
			}},
		{name: "kubernetes queues and includeSnapshotsFrom", in: `configVersion: v1
kubernetes:
- {name: a, apiVersion: v1, kind: Pod}
- {name: b, apiVersion: apps/v1, kind: Deployment, includeSnapshotsFrom: [a, c]}
- {name: c, apiVersion: v1, kind: Secret, queue: other}
schedule:
- {name: tick, crontab: '0 */1 * * * *', includeSnapshotsFrom: [a, c]}
`, check: func(t *testing.T, c *hook.Config) {
			if len(c.Kubernetes[1].IncludeSnapshotsFrom) != 2 || c.Kubernetes[2].Queue != "other" || c.Kubernetes[0].Queue != "main" {
				t.Errorf("got %+v %+v", c.Kubernetes[1], c.Kubernetes[2])
			}
			if len(c.Schedules[0].IncludeSnapshotsFrom) != 2 {
				t.Errorf("schedule snapshots %v", c.Schedules[0].IncludeSnapshotsFrom)
			}
		}},
		{name: "includeSnapshotsFrom an unknown binding", in: "configVersion: v1\nkubernetes:\n- {name: a, kind: Pod, includeSnapshotsFrom: [nope]}\n", wantErr: []string{"nope"}},
		{name: "includeSnapshotsFrom its own binding", in: "configVersion: v1\nkubernetes:\n- {name: a, kind: Pod, includeSnapshotsFrom: [a]}\n"},
		// shell-operator's all-bindings test hook has three kubernetes
		// bindings without names.
		{name: "unnamed kubernetes bindings", in: "configVersion: v1\nkubernetes:\n- {kind: configmap, allowFailure: true}\n- {kind: namespace}\n- {kind: pod}\n",
			check: func(t *testing.T, c *hook.Config) {
				if len(c.Kubernetes) != 3 {
					t.Fatalf("%d bindings", len(c.Kubernetes))
				}
				for _, k := range c.Kubernetes {
					if k.Name != "kubernetes" {
						t.Errorf("binding name %q", k.Name)
					}
				}
			}},
		{name: "unnamed v0 bindings", in: `{"onKubernetesEvent":[{"kind":"pod"},{"kind":"secret"}]}`},
		{name: "empty matchNames", in: "configVersion: v1\nkubernetes:\n- {kind: Pod, nameSelector: {matchNames: []}}\n"},
		{name: "no kind", in: "configVersion: v1\nkubernetes:\n- {name: a, apiVersion: v1}\n", wantErr: []string{"kind"}},
		{name: "bad apiVersion", in: "configVersion: v1\nkubernetes:\n- {apiVersion: v1/2/x, kind: Pod}\n", wantErr: []string{"apiVersion"}},
		{name: "nameSelector and metadata.name field", in: `configVersion: v1
kubernetes:
- kind: Pod
  nameSelector: {matchNames: [a]}
  fieldSelector: {matchExpressions: [{field: metadata.name, operator: Equals, value: a}]}
`, wantErr: []string{"nameSelector"}},
		{name: "metadata.name field alone", in: `configVersion: v1
kubernetes:
- kind: Pod
  fieldSelector: {matchExpressions: [{field: metadata.name, operator: "==", value: a}]}
  namespace:
    nameSelector: {matchNames: [default]}
    labelSelector: {matchExpressions: [{key: app, operator: In, values: [one, two]}]}
  resynchronizationPeriod: 10s
`},
		{name: "fieldSelector matchExpressions not a list", in: "configVersion: v1\nkubernetes:\n- kind: Pod\n  fieldSelector: {matchExpressions: {field: a, operator: Equals, value: b}}\n", wantErr: []string{"matchExpressions"}},
		{name: "empty label value", in: "configVersion: v1\nkubernetes:\n- kind: Node\n  labelSelector: {matchLabels: {node-role.kubernetes.io/control-plane: \"\"}}\n"},
		{name: "group gathers snapshots", in: `configVersion: v1
schedule:
- {crontab: '* * * * *', group: g}
kubernetes:
- {name: one, kind: Pod, group: g}
- {name: two, kind: ConfigMap, group: g}
`, check: func(t *testing.T, c *hook.Config) {
			want := "one,two"
			if got := strings.Join(c.Schedules[0].IncludeSnapshotsFrom, ","); got != want {
				t.Errorf("schedule snapshots %q, want %q", got, want)
			}
			for _, k := range c.Kubernetes {
				if got := strings.Join(k.IncludeSnapshotsFrom, ","); got != want {
					t.Errorf("%s snapshots %q, want %q", k.Name, got, want)
				}
			}
			if c.Schedules[0].Queue != "main" {
				t.Errorf("queue %q", c.Schedules[0].Queue)
			}
		}},
		// shell-operator's test of this case fails on a tab in its YAML, not
		// on the combination: its code merges the lists, the binding's own
		// first, then the group's not yet named.
		{name: "group with includeSnapshotsFrom", in: `configVersion: v1
schedule:
- {crontab: '* * * * *', group: g, includeSnapshotsFrom: [two, three]}
kubernetes:
- {name: one, kind: Pod, group: g}
- {name: two, kind: Pod, group: g}
- {name: three, kind: Pod}
`, check: func(t *testing.T, c *hook.Config) {
			if got := strings.Join(c.Schedules[0].IncludeSnapshotsFrom, ","); got != "two,three,one" {
				t.Errorf("schedule snapshots %q, want two,three,one", got)
			}
		}},
		{name: "includeSnapshotsFrom empty", in: "configVersion: v1\nkubernetes:\n- {name: a, kind: Pod, includeSnapshotsFrom: []}\n", wantErr: []string{"includeSnapshotsFrom"}},
		{name: "kubernetes empty", in: "configVersion: v1\nonStartup: 1\nkubernetes: []\n", wantErr: []string{"kubernetes"}},
		{name: "schedule empty", in: "configVersion: v1\nonStartup: 1\nschedule: []\n", wantErr: []string{"schedule"}},
		{name: "schedule without crontab", in: "configVersion: v1\nschedule:\n- {name: a}\n", wantErr: []string{"crontab"}},
		{name: "bad crontab", in: "configVersion: v1\nschedule:\n- {crontab: '61 * * * *'}\n", wantErr: []string{"crontab"}},
		{name: "executeHookOnSynchronization values", in: `configVersion: v1
kubernetes:
- {name: a, kind: Pod, executeHookOnSynchronization: false}
- {name: b, kind: Pod, executeHookOnSynchronization: true}
- {name: c, kind: Pod}
`, check: func(t *testing.T, c *hook.Config) {
			if c.Kubernetes[0].ExecuteHookOnSynchronization || !c.Kubernetes[1].ExecuteHookOnSynchronization || !c.Kubernetes[2].ExecuteHookOnSynchronization {
				t.Errorf("got %v %v %v", c.Kubernetes[0].ExecuteHookOnSynchronization, c.Kubernetes[1].ExecuteHookOnSynchronization, c.Kubernetes[2].ExecuteHookOnSynchronization)
			}
		}},
		// waitForSynchronization: false counts only with a queue given
		// (even main), as shell-operator reads it.
		{name: "waitForSynchronization", in: `configVersion: v1
kubernetes:
- {name: a, kind: Pod, waitForSynchronization: false}
- {name: b, kind: Pod, waitForSynchronization: false, queue: main}
- {name: c, kind: Pod, waitForSynchronization: false, queue: side}
- {name: d, kind: Pod, queue: side}
- {name: e, kind: Pod, keepFullObjectsInMemory: false}
`, check: func(t *testing.T, c *hook.Config) {
			got := []bool{}
			for _, k := range c.Kubernetes {
				got = append(got, k.WaitForSynchronization)
			}
			if want := []bool{true, false, false, true, true}; !slices.Equal(got, want) {
				t.Errorf("waitForSynchronization %v, want %v", got, want)
			}
			if c.Kubernetes[4].KeepFullObjectsInMemory || !c.Kubernetes[0].KeepFullObjectsInMemory {
				t.Errorf("keepFullObjectsInMemory %v %v", c.Kubernetes[0].KeepFullObjectsInMemory, c.Kubernetes[4].KeepFullObjectsInMemory)
			}
		}},
		{name: "executeHookOnSynchronization not a boolean", in: "configVersion: v1\nkubernetes:\n- {kind: Pod, executeHookOnSynchronization: ok}\n", wantErr: []string{"executeHookOnSynchronization"}},
		// shell-operator's schema: a validating webhook needs rules (at
		// least one), a conversion binding crdName and conversions.
		{name: "validating webhook without rules", in: "configVersion: v1\nkubernetesValidating:\n- name: a.example.com\n  rules: []\n", wantErr: []string{"kubernetesValidating[0]", "has no rules"}},
		{name: "mutating webhook refused", in: "configVersion: v1\nkubernetesMutating:\n- name: a.example.com\n", wantErr: []string{"kubernetesMutating"}},
		{name: "conversion webhook without crdName", in: "configVersion: v1\nkubernetesCustomResourceConversion:\n- name: a\n", wantErr: []string{"kubernetesCustomResourceConversion[0]", "crdName"}},
		// The examples of shell-operator's BINDING_VALIDATING.md and
		// BINDING_CONVERSION.md.
		{name: "validating example", in: "configVersion: v1\nkubernetesValidating:\n- name: private-repo-policy.example.com\n  rules:\n  - apiGroups:   [\"stable.example.com\"]\n    apiVersions: [\"v1\"]\n    operations:  [\"CREATE\"]\n    resources:   [\"crontabs\"]\n    scope:       \"Namespaced\"\n",
			check: func(t *testing.T, c *hook.Config) {
				if len(c.Validating) != 1 || c.Validating[0].TimeoutSeconds != 10 || c.Validating[0].SideEffects != "None" || c.Validating[0].FailurePolicy != "" {
					t.Errorf("validating %+v", c.Validating)
				}
			}},
		{name: "conversion example", in: "configVersion: v1\nkubernetesCustomResourceConversion:\n- name: conversions\n  crdName: crontabs.stable.example.com\n  conversions:\n  - fromVersion: unstable.crontab.io/v1beta1\n    toVersion: stable.example.com/v1beta1\n  - fromVersion: stable.example.com/v1beta1\n    toVersion: stable.example.com/v1beta2\n  - fromVersion: v1beta2\n    toVersion: v1\n",
			check: func(t *testing.T, c *hook.Config) {
				if len(c.Conversion) != 1 || len(c.Conversion[0].Conversions) != 3 || c.Conversion[0].CRDName != "crontabs.stable.example.com" {
					t.Errorf("conversion %+v", c.Conversion)
				}
			}},
		{name: "validating timeout too long", in: "configVersion: v1\nkubernetesValidating:\n- name: a.example.com\n  timeoutSeconds: 31\n  rules: [{apiGroups: [''], apiVersions: [v1], resources: [pods], operations: ['*']}]\n", wantErr: []string{"timeoutSeconds", "1 to 30"}},
		{name: "validating name not qualified", in: "configVersion: v1\nkubernetesValidating:\n- name: validator\n  rules: [{apiGroups: [''], apiVersions: [v1], resources: [pods], operations: ['*']}]\n", wantErr: []string{"name", "three segments"}},
		{name: "settings", in: "configVersion: v1\nonStartup: 1\nsettings:\n  executionMinInterval: 30s\n  executionBurst: 1\n", check: func(t *testing.T, c *hook.Config) {
			if c.Settings == nil || c.Settings.ExecutionMinInterval != 30*time.Second || c.Settings.ExecutionBurst != 1 {
				t.Errorf("settings %+v", c.Settings)
			}
		}},
		{name: "settings bad duration", in: "configVersion: v1\nonStartup: 1\nsettings:\n  executionMinInterval: 30ks\n", wantErr: []string{"executionMinInterval"}},
		{name: "watchEvent list", in: "configVersion: v1\nkubernetes:\n- {kind: Pod, watchEvent: [Added, Modified]}\n", check: func(t *testing.T, c *hook.Config) {
			if len(c.Kubernetes[0].ExecuteHookOnEvent) != 2 {
				t.Errorf("events %v", c.Kubernetes[0].ExecuteHookOnEvent)
			}
		}},
		{name: "watchEvent empty list", in: "configVersion: v1\nkubernetes:\n- {kind: Pod, watchEvent: []}\n", check: func(t *testing.T, c *hook.Config) {
			if len(c.Kubernetes[0].ExecuteHookOnEvent) != 0 {
				t.Errorf("events %v", c.Kubernetes[0].ExecuteHookOnEvent)
			}
		}},
		{name: "executeHookOnEvent empty list", in: "configVersion: v1\nkubernetes:\n- {kind: Pod, executeHookOnEvent: []}\n", check: func(t *testing.T, c *hook.Config) {
			if len(c.Kubernetes[0].ExecuteHookOnEvent) != 0 {
				t.Errorf("events %v", c.Kubernetes[0].ExecuteHookOnEvent)
			}
		}},
		{name: "executeHookOnEvent two", in: "configVersion: v1\nkubernetes:\n- name: ns\n  apiVersion: v1\n  kind: Namespace\n  executeHookOnEvent:\n  - Added\n  - Deleted\n", check: func(t *testing.T, c *hook.Config) {
			if e := c.Kubernetes[0].ExecuteHookOnEvent; len(e) != 2 || e[0] != hook.Added || e[1] != hook.Deleted {
				t.Errorf("events %v", e)
			}
		}},
		{name: "events default", in: "configVersion: v1\nkubernetes:\n- {kind: Pod}\n", check: func(t *testing.T, c *hook.Config) {
			if len(c.Kubernetes[0].ExecuteHookOnEvent) != 3 {
				t.Errorf("events %v", c.Kubernetes[0].ExecuteHookOnEvent)
			}
		}},
		{name: "watchEvent a string", in: "configVersion: v1\nkubernetes:\n- {kind: Pod, watchEvent: Added}\n", wantErr: []string{"watchEvent"}},
		{name: "executeHookOnEvent unknown event", in: "configVersion: v1\nkubernetes:\n- {kind: Pod, executeHookOnEvent: [Added, updated]}\n", wantErr: []string{"executeHookOnEvent"}},
		{name: "matchNames a number", in: "configVersion: v1\nkubernetes:\n- {kind: Pod, nameSelector: {matchNames: [20]}}\n", wantErr: []string{"matchNames"}},
		{name: "matchLabels a number", in: "configVersion: v1\nkubernetes:\n- {kind: Pod, labelSelector: {matchLabels: {a: 28}}}\n", wantErr: []string{"matchLabels"}},
		{name: "matchExpressions operand", in: "configVersion: v1\nkubernetes:\n- {kind: Pod, labelSelector: {matchExpressions: [{key: a, operand: notin}]}}\n", wantErr: []string{"operand"}},
		{name: "namespace matchNames a map", in: "configVersion: v1\nkubernetes:\n- {kind: Pod, namespace: {nameSelector: {matchNames: {a: b}}}}\n", wantErr: []string{"matchNames"}},
		{name: "namespace label operator", in: "configVersion: v1\nkubernetes:\n- {kind: Pod, namespace: {labelSelector: {matchExpressions: [{key: a, operator: IsNotin}]}}}\n", wantErr: []string{"operator"}},
		{name: "field operator", in: "configVersion: v1\nkubernetes:\n- {kind: Pod, fieldSelector: {matchExpressions: [{field: a, operator: IsNotin, value: b}]}}\n", wantErr: []string{"operator"}},
		{name: "field value a number", in: "configVersion: v1\nkubernetes:\n- {kind: Pod, fieldSelector: {matchExpressions: [{field: a, operator: Equals, value: 2989}]}}\n", wantErr: []string{"value"}},
		{name: "misspelt configVersion and unknown key", in: `{"configVrsion":"v1","schedule":[{"name":"q","crontab":"* * * * *"}]}`, wantErr: []string{"configVrsion"}},
		{name: "schedule a map", in: "configVersion: v1\nschedule: {name: q}\n", wantErr: []string{"schedule"}},
		{name: "full v1", in: `{"configVersion":"v1","onStartup":256,
		  "schedule":[{"name":"q","crontab":"*/5 * * * * *","allowFailure":true,"includeSnapshotsFrom":["monitor pods"],"queue":"offload"}],
		  "kubernetes":[{"name":"monitor pods","executeHookOnEvent":["Added","Deleted","Modified"],"executeHookOnSynchronization":false,
		   "apiVersion":"v1","kind":"Pod","includeSnapshotsFrom":["monitor pods"],"queue":"pods-offload",
		   "labelSelector":{"matchLabels":{"app":"a","heritage":"t"}},
		   "fieldSelector":{"matchExpressions":[{"field":"metadata.name","operator":"==","value":"p"}]},
		   "namespace":{"nameSelector":{"matchNames":["default"]},"labelSelector":{"matchExpressions":[{"key":"app","operator":"In","values":["one","two"]}]}},
		   "jqFilter":".metadata.labels","allowFailure":true,"resynchronizationPeriod":"10s"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind := tt.kind
			if kind == 0 {
				kind = hook.Global
			}
			c, err := hook.ParseConfig([]byte(tt.in), kind, "hooks/h")
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("no error, want one with %q", tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not name %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}
