package hook_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/schedule"
)

// cmpConfig compares configs, ignoring the compiled crontab and jq code.
var cmpConfig = []cmp.Option{
	cmpopts.IgnoreUnexported(hook.KubernetesBinding{}),
	cmpopts.IgnoreFields(hook.ScheduleBinding{}, "Spec"),
	cmpopts.EquateEmpty(),
}

func kube(name, kind string, mod func(k *hook.KubernetesBinding)) *hook.KubernetesBinding {
	k := &hook.KubernetesBinding{
		Name: name, Kind: kind, Queue: "main",
		ExecuteHookOnEvent:           []hook.WatchEvent{hook.Added, hook.Modified, hook.Deleted},
		ExecuteHookOnSynchronization: true, WaitForSynchronization: true, KeepFullObjectsInMemory: true,
	}
	if mod != nil {
		mod(k)
	}
	return k
}

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name string
		kind hook.Kind
		in   string
		want *hook.Config
	}{
		{"module lifecycle YAML", hook.Module, "configVersion: v1\nonStartup: 10\nbeforeHelm: 1\nafterHelm: 2\nbeforeDeleteHelm: 3\nafterDeleteHelm: 4\n",
			&hook.Config{Version: "v1", Orders: map[hook.BindingType]float64{"onStartup": 10, "beforeHelm": 1, "afterHelm": 2, "beforeDeleteHelm": 3, "afterDeleteHelm": 4}}},
		{"global lifecycle JSON", hook.Global, `{"configVersion":"v1","onStartup":1,"beforeAll":5,"afterAll":-2}`,
			&hook.Config{Version: "v1", Orders: map[hook.BindingType]float64{"onStartup": 1, "beforeAll": 5, "afterAll": -2}}},
		{"schedule defaults", hook.Global, "configVersion: v1\nschedule:\n- crontab: '*/5 * * * *'\n- name: fast\n  crontab: '*/10 * * * * *'\n  allowFailure: true\n  queue: q1\n  group: g\n",
			&hook.Config{Version: "v1", Orders: map[hook.BindingType]float64{}, Schedules: []*hook.ScheduleBinding{
				{Name: "schedule", Crontab: "*/5 * * * *", Queue: "main"},
				{Name: "fast", Crontab: "*/10 * * * * *", AllowFailure: true, Queue: "q1", Group: "g"},
			}}},
		{"kubernetes defaults", hook.Module, "configVersion: v1\nkubernetes:\n- apiVersion: v1\n  kind: Pod\n",
			&hook.Config{Version: "v1", Orders: map[hook.BindingType]float64{}, Kubernetes: []*hook.KubernetesBinding{
				kube("kubernetes", "Pod", func(k *hook.KubernetesBinding) { k.APIVersion = "v1" }),
			}}},
		{"kubernetes every field", hook.Module, `configVersion: v1
beforeHelm: 10
kubernetes:
- name: pods
  apiVersion: v1
  kind: Pod
  nameSelector: {matchNames: [a, b]}
  labelSelector:
    matchLabels: {app: x}
    matchExpressions: [{key: tier, operator: In, values: [web]}]
  fieldSelector:
    matchExpressions: [{field: status.phase, operator: Equals, value: Running}]
  namespace:
    nameSelector: {matchNames: [default]}
    labelSelector: {matchLabels: {team: a}}
  jqFilter: .metadata.labels
  executeHookOnEvent: [Added, Deleted]
  executeHookOnSynchronization: false
  waitForSynchronization: false
  keepFullObjectsInMemory: false
  allowFailure: true
  resynchronizationPeriod: 10m
  queue: pods
  group: g1
- name: nodes
  kind: Node
  includeSnapshotsFrom: [pods]
  group: g1
schedule:
- crontab: "0 * * * *"
  includeSnapshotsFrom: [nodes]
  group: g1
settings:
  executionMinInterval: 3s
  executionBurst: 2
`,
			&hook.Config{Version: "v1", Orders: map[hook.BindingType]float64{"beforeHelm": 10},
				Kubernetes: []*hook.KubernetesBinding{
					{Name: "pods", APIVersion: "v1", Kind: "Pod", NameSelector: []string{"a", "b"},
						LabelSelector: &hook.LabelSelector{MatchLabels: map[string]string{"app": "x"},
							MatchExpressions: []hook.LabelRequirement{{Key: "tier", Operator: "In", Values: []string{"web"}}}},
						FieldSelector: []hook.FieldRequirement{{Field: "status.phase", Operator: "Equals", Value: "Running"}},
						Namespace: &hook.NamespaceSelector{NameSelector: []string{"default"},
							LabelSelector: &hook.LabelSelector{MatchLabels: map[string]string{"team": "a"}}},
						JqFilter: ".metadata.labels", ExecuteHookOnEvent: []hook.WatchEvent{hook.Added, hook.Deleted},
						AllowFailure: true, ResynchronizationPeriod: "10m", Queue: "pods", Group: "g1",
						IncludeSnapshotsFrom: []string{"pods", "nodes"}},
					kube("nodes", "Node", func(k *hook.KubernetesBinding) {
						k.Group = "g1"
						k.IncludeSnapshotsFrom = []string{"pods", "nodes"}
					}),
				},
				Schedules: []*hook.ScheduleBinding{{Name: "schedule", Crontab: "0 * * * *", Queue: "main", Group: "g1",
					IncludeSnapshotsFrom: []string{"nodes", "pods"}}},
				Settings: &hook.Settings{ExecutionMinInterval: 3 * time.Second, ExecutionBurst: 2},
			}},
		{"waitForSynchronization false needs a queue", hook.Global, "configVersion: v1\nkubernetes:\n- kind: Pod\n  waitForSynchronization: false\n",
			&hook.Config{Version: "v1", Orders: map[hook.BindingType]float64{}, Kubernetes: []*hook.KubernetesBinding{kube("kubernetes", "Pod", nil)}}},
		{"watchEvent is the old executeHookOnEvent", hook.Global, "configVersion: v1\nkubernetes:\n- kind: Pod\n  watchEvent: [Modified]\n",
			&hook.Config{Version: "v1", Orders: map[hook.BindingType]float64{}, Kubernetes: []*hook.KubernetesBinding{
				kube("kubernetes", "Pod", func(k *hook.KubernetesBinding) { k.ExecuteHookOnEvent = []hook.WatchEvent{hook.Modified} })}}},
		{"empty executeHookOnEvent runs on nothing", hook.Global, "configVersion: v1\nkubernetes:\n- kind: Pod\n  executeHookOnEvent: []\n",
			&hook.Config{Version: "v1", Orders: map[hook.BindingType]float64{}, Kubernetes: []*hook.KubernetesBinding{
				kube("kubernetes", "Pod", func(k *hook.KubernetesBinding) { k.ExecuteHookOnEvent = []hook.WatchEvent{} })}}},
		{"v0", hook.Module, `{"onStartup": 1, "beforeHelm": 2, "schedule": [{"crontab": "* * * * *", "allowFailure": true}],
"onKubernetesEvent": [{"kind": "Pod", "event": ["add", "delete"], "objectName": "p", "selector": {"matchLabels": {"a": "b"}},
"namespaceSelector": {"matchNames": ["ns"]}, "jqFilter": ".spec"}, {"kind": "Node", "namespaceSelector": {"any": true}}]}`,
			&hook.Config{Version: "v0", Orders: map[hook.BindingType]float64{"onStartup": 1, "beforeHelm": 2},
				Schedules: []*hook.ScheduleBinding{{Name: "schedule", Crontab: "* * * * *", AllowFailure: true, Queue: "main"}},
				Kubernetes: []*hook.KubernetesBinding{
					{Name: "onKubernetesEvent", Kind: "Pod", ExecuteHookOnEvent: []hook.WatchEvent{hook.Added, hook.Deleted},
						NameSelector: []string{"p"}, LabelSelector: &hook.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
						Namespace: &hook.NamespaceSelector{NameSelector: []string{"ns"}}, JqFilter: ".spec",
						Queue: "main", WaitForSynchronization: true, KeepFullObjectsInMemory: true},
					kube("onKubernetesEvent", "Node", func(k *hook.KubernetesBinding) { k.ExecuteHookOnSynchronization = false }),
				}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := hook.ParseConfig([]byte(tc.in), tc.kind, "h.sh")
			if err != nil {
				t.Fatalf("ParseConfig: %v", err)
			}
			if d := cmp.Diff(tc.want, got, cmpConfig...); d != "" {
				t.Errorf("ParseConfig (-want +got):\n%s", d)
			}
			for _, k := range got.Kubernetes {
				if (k.JqFilter != "") != (k.Filter() != nil) {
					t.Errorf("binding %s: jqFilter %q compiled to %v", k.Name, k.JqFilter, k.Filter())
				}
			}
			for _, s := range got.Schedules {
				want, _ := schedule.Parse(s.Crontab)
				if s.Spec == nil || s.Spec.String() != want.String() {
					t.Errorf("schedule %s: Spec %v", s.Name, s.Spec)
				}
			}
		})
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		kind hook.Kind
		in   string
		want string // the whole error
	}{
		{"empty", hook.Global, "", "hook h.sh --config: printed nothing; a hook run with --config must print its bindings as YAML or JSON, such as {\"configVersion\":\"v1\",\"onStartup\":10}"},
		{"not a map", hook.Global, "- a\n", "hook h.sh --config:1: the configuration is a list; it must be a map such as {\"configVersion\":\"v1\",\"onStartup\":10}"},
		{"bad YAML", hook.Global, "configVersion: v1\nonStartup: [\n", "hook h.sh --config:3:"},
		{"unknown version", hook.Global, "configVersion: v2\nonStartup: 1\n", "hook h.sh --config:1: configVersion: \"v2\" is not a known version; write configVersion: v1"},
		{"no bindings", hook.Module, "configVersion: v1\n", "hook h.sh --config: the hook has no bindings, so it would never run; add one of onStartup, beforeHelm, afterHelm, beforeDeleteHelm, afterDeleteHelm, schedule, kubernetes"},
		{"typo", hook.Module, "configVersion: v1\nbeforHelm: 1\n", "hook h.sh --config:2: beforHelm: unknown field (beforHelm is a forbidden property); did you mean beforeHelm?"},
		// shell-operator's validator test: every wrong field is listed.
		{"all problems", hook.Global, "{\n\"configVrsion\":\"v1\",\n\"schedule\":{\"name\":\"qwe\"},\n\"qwdqwd\":\"QWD\"\n}",
			"hook h.sh --config:2: configVrsion: unknown field (configVrsion is a forbidden property); did you mean configVersion?\n" +
				"hook h.sh --config:4: qwdqwd: unknown field (qwdqwd is a forbidden property) of a configuration without configVersion (v0); write configVersion: v1 and the v1 bindings\n" +
				"hook h.sh --config:3: schedule: must be a list of schedules such as {crontab: \"*/5 * * * *\"}, not a map"},
		{"all problems, v1", hook.Module, "configVersion: v1\nbeforeHelm: x\nafterHelm: 1.5\nkubernetes:\n- apiVersion: v1\n",
			"hook h.sh --config:3: afterHelm: order 1.5 is not an integer; write an integer such as afterHelm: 10\n" +
				"hook h.sh --config:2: beforeHelm: the order is \"x\"; write an integer such as beforeHelm: 10 (hooks run by order, then by name)\n" +
				"hook h.sh --config:5: kubernetes[0]: has no kind; add the kind of the objects to watch, such as kind: Pod"},
		{"global binding in a module", hook.Module, "configVersion: v1\nbeforeAll: 1\n", "hook h.sh --config:2: beforeAll: beforeAll is a binding of global hooks, and this is a module hook; use one of onStartup, beforeHelm, afterHelm, beforeDeleteHelm, afterDeleteHelm"},
		{"module binding in a global", hook.Global, "configVersion: v1\nafterHelm: 1\n", "hook h.sh --config:2: afterHelm: afterHelm is a binding of module hooks, and this is a global hook; use one of onStartup, beforeAll, afterAll"},
		{"order a string", hook.Module, "configVersion: v1\nbeforeHelm: \"10\"\n", "hook h.sh --config:2: beforeHelm: the order is \"10\"; write an integer such as beforeHelm: 10 (hooks run by order, then by name)"},
		{"order a fraction", hook.Module, "configVersion: v1\nbeforeHelm: 1.5\n", "hook h.sh --config:2: beforeHelm: order 1.5 is not an integer; write an integer such as beforeHelm: 10"},
		{"crontab fields", hook.Global, "configVersion: v1\nschedule:\n- crontab: '* * *'\n", "hook h.sh --config:3: schedule[0].crontab: crontab \"* * *\" has 3 fields; write 5 (minute hour day-of-month month day-of-week) or 6 (seconds first)"},
		{"crontab missing", hook.Global, "configVersion: v1\nschedule:\n- name: x\n", "hook h.sh --config:3: schedule[0]: has no crontab; add crontab: \"*/5 * * * *\" (5 fields, or 6 with seconds first)"},
		{"kind missing", hook.Global, "configVersion: v1\nkubernetes:\n- apiVersion: v1\n", "hook h.sh --config:3: kubernetes[0]: has no kind; add the kind of the objects to watch, such as kind: Pod"},
		{"bool as string", hook.Global, "configVersion: v1\nkubernetes:\n- kind: Pod\n  executeHookOnSynchronization: \"false\"\n", "hook h.sh --config:4: kubernetes[0].executeHookOnSynchronization: must be a boolean, not the string \"false\"; write true or false without quotes"},
		{"bad jq", hook.Global, "configVersion: v1\nkubernetes:\n- kind: Pod\n  jqFilter: .metadata[\n", "hook h.sh --config:4: kubernetes[0].jqFilter: jq program \".metadata[\" does not parse: unexpected EOF"},
		{"bad event", hook.Global, "configVersion: v1\nkubernetes:\n- kind: Pod\n  executeHookOnEvent: [Add]\n", "hook h.sh --config:4: kubernetes[0].executeHookOnEvent[0]: \"Add\" is not a watch event; write Added"},
		{"unknown kubernetes field", hook.Global, "configVersion: v1\nkubernetes:\n- kind: Pod\n  namespaceSelector: {}\n", "hook h.sh --config:4: kubernetes[0].namespaceSelector: namespaceSelector is the v0 name; with configVersion: v1 write namespace: {nameSelector: {matchNames: [...]}}"},
		{"label operator", hook.Global, "configVersion: v1\nkubernetes:\n- kind: Pod\n  labelSelector:\n    matchExpressions:\n    - {key: a, operator: Is, values: [b]}\n", "hook h.sh --config:6: kubernetes[0].labelSelector.matchExpressions[0].operator: \"Is\" is not an operator; write one of In, NotIn, Exists, DoesNotExist"},
		{"In without values", hook.Global, "configVersion: v1\nkubernetes:\n- kind: Pod\n  labelSelector:\n    matchExpressions:\n    - {key: a, operator: In}\n", "hook h.sh --config:6: kubernetes[0].labelSelector.matchExpressions[0]: operator In needs a non-empty values list"},
		{"field operator", hook.Global, "configVersion: v1\nkubernetes:\n- kind: Pod\n  fieldSelector:\n    matchExpressions:\n    - {field: a, operator: '<', value: b}\n", "hook h.sh --config:6: kubernetes[0].fieldSelector.matchExpressions[0]: operator \"<\" is not one of =, ==, Equals, !=, NotEquals"},
		{"snapshot of nothing", hook.Global, "configVersion: v1\nkubernetes:\n- name: pods\n  kind: Pod\nschedule:\n- crontab: '* * * * *'\n  includeSnapshotsFrom: [nodes]\n", "hook h.sh --config:7: schedule[0].includeSnapshotsFrom[0]: \"nodes\" names no kubernetes binding of this hook; this hook's kubernetes bindings are pods"},
		{"name and field selector", hook.Global, "configVersion: v1\nkubernetes:\n- kind: Pod\n  nameSelector: {matchNames: [a]}\n  fieldSelector: {matchExpressions: [{field: metadata.name, operator: '=', value: a}]}\n", "hook h.sh --config:5: kubernetes[0].fieldSelector.matchExpressions[0]: a fieldSelector on metadata.name and nameSelector.matchNames exclude each other; keep one of them"},
		{"settings typo", hook.Global, "configVersion: v1\nonStartup: 1\nsettings:\n  executionMinPeriod: 1s\n", "hook h.sh --config:4: settings.executionMinPeriod: unknown field; the setting is called executionMinInterval"},
		{"bad duration", hook.Global, "configVersion: v1\nonStartup: 1\nsettings:\n  executionMinInterval: soon\n", "hook h.sh --config:4: settings.executionMinInterval: \"soon\" is not a duration; write one such as 5s or 1m"},
		{"mutating webhooks", hook.Global, "configVersion: v1\nkubernetesMutating: []\n", "hook h.sh --config:2: kubernetesMutating: mutating webhooks are not supported by strata's operator (kubernetesValidating and kubernetesCustomResourceConversion are); move this binding to a hook run by shell-operator or remove it"},
		{"v0 with v1 field", hook.Global, "onStartup: 1\nkubernetes: []\n", "hook h.sh --config:2: kubernetes: kubernetes needs configVersion: v1; add configVersion: v1 (and use kubernetes, not onKubernetesEvent)"},
		{"v1 with v0 field", hook.Global, "configVersion: v1\nonKubernetesEvent: []\n", "hook h.sh --config:2: onKubernetesEvent: onKubernetesEvent is the configVersion v0 name; with configVersion: v1 write kubernetes"},
		{"duplicate key", hook.Global, "configVersion: v1\nonStartup: 1\nonStartup: 2\n", "hook h.sh --config:3:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := hook.ParseConfig([]byte(tc.in), tc.kind, "h.sh")
			if err == nil {
				t.Fatalf("ParseConfig succeeded, want error %q", tc.want)
			}
			if got := err.Error(); got != tc.want && !(strings.HasSuffix(tc.want, ":") && strings.HasPrefix(got, tc.want)) {
				t.Errorf("ParseConfig error:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestSnapshotsFor(t *testing.T) {
	cfg, err := hook.ParseConfig([]byte(`configVersion: v1
onStartup: 1
beforeHelm: 1
kubernetes:
- {name: a, kind: Pod, includeSnapshotsFrom: [b]}
- {name: b, kind: Node}
schedule:
- {crontab: "* * * * *"}
`), hook.Module, "h")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		t    hook.BindingType
		name string
		want []string
	}{
		{hook.OnStartup, "onStartup", nil},
		{hook.BeforeHelm, "beforeHelm", []string{"a", "b"}},
		{hook.Kubernetes, "a", []string{"b"}},
		{hook.Kubernetes, "b", nil},
		{hook.Schedule, "schedule", nil},
	}
	for _, tc := range tests {
		if got := cfg.SnapshotsFor(tc.t, tc.name); !cmp.Equal(got, tc.want) {
			t.Errorf("SnapshotsFor(%s, %s) = %v, want %v", tc.t, tc.name, got, tc.want)
		}
	}
}

// shell-operator accepts a configuration with settings and no binding.
func TestParseConfigSettingsOnly(t *testing.T) {
	cfg, err := hook.ParseConfig([]byte("configVersion: v1\nsettings:\n  executionMinInterval: 5s\n  executionBurst: 2\n"), hook.Global, "h.sh")
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	if cfg.Settings == nil || len(cfg.Orders)+len(cfg.Schedules)+len(cfg.Kubernetes) != 0 {
		t.Errorf("ParseConfig = %+v, want settings and no binding", cfg)
	}
}

// The shapes' own rules: the fields each version's bindings have (a v0
// schedule has fewer than a v1 one), did-you-mean hints over them, limits,
// and a value's own problem reported before the checks across its
// binding's fields.
func TestParseConfigShapes(t *testing.T) {
	long := strings.Repeat("a", 1025)
	many := "[" + strings.Repeat("a, ", 1000) + "a]"
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"v0 schedule has no queue", `{"schedule": [{"crontab": "* * * * *", "queue": "q"}]}`,
			"hook h.sh --config:1: schedule[0].queue: unknown field; known fields are name, crontab, allowFailure"},
		{"v1 schedule queue misspelt", "configVersion: v1\nschedule:\n- crontab: '* * * * *'\n  qeue: q\n",
			"hook h.sh --config:4: schedule[0].qeue: unknown field; did you mean queue?"},
		{"v0 binding fields", `{"onKubernetesEvent": [{"kind": "Pod", "namespace": {}}]}`,
			"hook h.sh --config:1: onKubernetesEvent[0].namespace: unknown field; known fields are name, event, kind, selector, objectName, namespaceSelector, jqFilter, allowFailure"},
		{"v0 event", `{"onKubernetesEvent": [{"kind": "Pod", "event": ["add", "Added"]}]}`,
			"hook h.sh --config:1: onKubernetesEvent[0].event[1]: \"Added\" is not a v0 event; write add, update or delete"},
		{"v0 empty lists are fine but null is not", `{"onStartup": 1, "schedule": [], "onKubernetesEvent": null}`,
			"hook h.sh --config:1: onKubernetesEvent: must be a list of bindings such as {kind: Pod}, not null"},
		{"a value's own problem first", "configVersion: v1\nkubernetes:\n- apiVersion: v1\n  group: [g]\n",
			"hook h.sh --config:4: kubernetes[0].group: must be a string, not a list"},
		{"too long a string", "configVersion: v1\nkubernetes:\n- kind: " + long + "\n",
			"hook h.sh --config:3: kubernetes[0].kind: is longer than 1024 bytes"},
		{"too long a list", "configVersion: v1\nkubernetes:\n- kind: Pod\n  nameSelector: {matchNames: " + many + "}\n",
			"hook h.sh --config:4: kubernetes[0].nameSelector.matchNames: has 1001 items; at most 1000 are allowed"},
		{"negative burst", "configVersion: v1\nsettings: {executionBurst: -1}\n",
			"hook h.sh --config:2: settings.executionBurst: -1 is not a count; write a non-negative integer such as 1"},
		{"label value a number", "configVersion: v1\nkubernetes:\n- kind: Pod\n  labelSelector:\n    matchLabels:\n      a: 1\n",
			"hook h.sh --config:6: kubernetes[0].labelSelector.matchLabels.a: label values are strings; quote 1"},
		{"watch event a number", "configVersion: v1\nkubernetes:\n- kind: Pod\n  watchEvent: [1]\n",
			"hook h.sh --config:4: kubernetes[0].watchEvent[0]: must be a string, not 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := hook.ParseConfig([]byte(tc.in), hook.Module, "h.sh")
			if err == nil || err.Error() != tc.want {
				t.Errorf("ParseConfig error:\n got %v\nwant %s", err, tc.want)
			}
		})
	}
}
