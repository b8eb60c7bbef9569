package hook_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/golden"
	"github.com/strata-dev/strata/internal/operator/hook"
)

var (
	pod1 = json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"web"},"name":"pod-1","namespace":"default"}}`)
	pod2 = json.RawMessage(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"pod-2","namespace":"kube-system"}}`)
)

// contextCases are the binding contexts of every shape shell-operator
// writes; testdata/contexts.txtar holds what each encodes to.
var contextCases = []struct {
	name    string
	version string
	ctxs    []hook.BindingContext
}{
	{"onStartup", "v1", []hook.BindingContext{{BindingType: hook.OnStartup, Binding: "onStartup"}}},
	{"beforeAll without kubernetes bindings", "v1", []hook.BindingContext{{BindingType: hook.BeforeAll, Binding: "beforeAll"}}},
	{"beforeHelm with snapshots", "v1", []hook.BindingContext{{BindingType: hook.BeforeHelm, Binding: "beforeHelm",
		Snapshots: map[string][]hook.ObjectResult{
			"monitor-pods":  {{Object: pod1, FilterResult: json.RawMessage(`{"app":"web"}`)}, {Object: pod2, FilterResult: json.RawMessage(`null`)}},
			"monitor-nodes": {},
		}}}},
	{"afterHelm with empty snapshots", "v1", []hook.BindingContext{{BindingType: hook.AfterHelm, Binding: "afterHelm", Snapshots: map[string][]hook.ObjectResult{}}}},
	{"schedule", "v1", []hook.BindingContext{{BindingType: hook.Schedule, Binding: "every-minute", Type: hook.TypeSchedule}}},
	{"schedule with snapshots", "v1", []hook.BindingContext{{BindingType: hook.Schedule, Binding: "schedule", Type: hook.TypeSchedule,
		Snapshots: map[string][]hook.ObjectResult{"pods": {{Object: pod1}}}}}},
	{"synchronization", "v1", []hook.BindingContext{{BindingType: hook.Kubernetes, Binding: "pods", Type: hook.TypeSynchronization,
		Objects: []hook.ObjectResult{{Object: pod1, FilterResult: json.RawMessage(`"web"`)}, {Object: pod2, FilterResult: json.RawMessage(`null`)}}}}},
	{"synchronization without objects", "v1", []hook.BindingContext{{BindingType: hook.Kubernetes, Binding: "pods", Type: hook.TypeSynchronization}}},
	{"synchronization without full objects", "v1", []hook.BindingContext{{BindingType: hook.Kubernetes, Binding: "pods", Type: hook.TypeSynchronization,
		Objects: []hook.ObjectResult{{FilterResult: json.RawMessage(`"web"`)}}}}},
	{"event without filter", "v1", []hook.BindingContext{{BindingType: hook.Kubernetes, Binding: "kubernetes", Type: hook.TypeEvent, WatchEvent: hook.Added,
		Objects: []hook.ObjectResult{{Object: pod1}}}}},
	{"event with filter", "v1", []hook.BindingContext{{BindingType: hook.Kubernetes, Binding: "pods", Type: hook.TypeEvent, WatchEvent: hook.Modified,
		Objects: []hook.ObjectResult{{Object: pod1, FilterResult: json.RawMessage(`{"app":"web"}`)}}, Filtered: true,
		Snapshots: map[string][]hook.ObjectResult{"pods": {{Object: pod1, FilterResult: json.RawMessage(`{"app":"web"}`)}}}}}},
	{"event deleted without full object", "v1", []hook.BindingContext{{BindingType: hook.Kubernetes, Binding: "pods", Type: hook.TypeEvent, WatchEvent: hook.Deleted,
		Objects: []hook.ObjectResult{{FilterResult: json.RawMessage(`"web"`)}}, Filtered: true}}},
	{"event without object", "v1", []hook.BindingContext{{BindingType: hook.Kubernetes, Binding: "pods", Type: hook.TypeEvent, WatchEvent: hook.Added, Filtered: true}}},
	{"group", "v1", []hook.BindingContext{{BindingType: hook.Kubernetes, Binding: "pods", Type: hook.TypeEvent, WatchEvent: hook.Added, Group: "main-group",
		Objects:   []hook.ObjectResult{{Object: pod1}},
		Snapshots: map[string][]hook.ObjectResult{"pods": {{Object: pod1}}, "nodes": {}}}}},
	{"schedule in a group", "v1", []hook.BindingContext{{BindingType: hook.Schedule, Binding: "schedule", Type: hook.TypeSchedule, Group: "g",
		Snapshots: map[string][]hook.ObjectResult{}}}},
	{"several", "v1", []hook.BindingContext{
		{BindingType: hook.Kubernetes, Binding: "pods", Type: hook.TypeEvent, WatchEvent: hook.Added, Objects: []hook.ObjectResult{{Object: pod1}}},
		{BindingType: hook.Kubernetes, Binding: "pods", Type: hook.TypeEvent, WatchEvent: hook.Deleted, Objects: []hook.ObjectResult{{Object: pod2}}},
	}},
	{"v0 event", "v0", []hook.BindingContext{{BindingType: hook.Kubernetes, Binding: "onKubernetesEvent", Type: hook.TypeEvent, WatchEvent: hook.Modified,
		Objects: []hook.ObjectResult{{Object: pod1}}}}},
	{"v0 schedule", "v0", []hook.BindingContext{{BindingType: hook.Schedule, Binding: "schedule", Type: hook.TypeSchedule}}},
	{"validating", "v1", []hook.BindingContext{{BindingType: hook.KubernetesValidating, Binding: "policy.example.com", Type: hook.TypeValidating,
		Review: json.RawMessage(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}},"operation":"CREATE","uid":"705ab4f5"}}`)}}},
	{"validating in a group with snapshots", "v1", []hook.BindingContext{{BindingType: hook.KubernetesValidating, Binding: "policy.example.com", Type: hook.TypeValidating, Group: "g",
		Review:    json.RawMessage(`{"request":{"uid":"1"}}`),
		Snapshots: map[string][]hook.ObjectResult{"pods": {{Object: pod1}}}}}},
	{"conversion", "v1", []hook.BindingContext{{BindingType: hook.KubernetesConversion, Binding: "alpha1_to_alpha2", Type: hook.TypeConversion,
		FromVersion: "unstable.crontab.io/v1beta1", ToVersion: "stable.example.com/v1beta1",
		Review:    json.RawMessage(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"desiredAPIVersion":"stable.example.com/v1beta1","objects":[{"apiVersion":"unstable.crontab.io/v1beta1","kind":"CronTab"}],"uid":"42f90c87"}}`),
		Snapshots: map[string][]hook.ObjectResult{}}}},
	{"strings escaped", "v1", []hook.BindingContext{{BindingType: hook.Schedule, Binding: "a \"quoted\" <name>\n", Type: hook.TypeSchedule}}},
}

func TestEncodeContextsGolden(t *testing.T) {
	for _, tc := range contextCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := hook.EncodeContexts(tc.version, tc.ctxs)
			if err != nil {
				t.Fatalf("EncodeContexts: %v", err)
			}
			if !json.Valid(got) {
				t.Fatalf("EncodeContexts wrote invalid JSON: %s", got)
			}
			// The same as encoding/json writes a map: keys sorted, HTML escaped.
			var v any
			if err := json.Unmarshal(got, &v); err != nil {
				t.Fatal(err)
			}
			std, _ := json.Marshal(v)
			var compact bytes.Buffer
			if err := json.Compact(&compact, got); err != nil {
				t.Fatal(err)
			}
			if compact.String() != string(std) {
				t.Errorf("EncodeContexts differs from encoding/json's order:\n got %s\nwant %s", got, std)
			}
			var pretty bytes.Buffer
			_ = json.Indent(&pretty, got, "", "  ")
			golden.Check(t, "testdata/contexts.txtar", tc.name, pretty.String()+"\n")
		})
	}
}

func TestDecodeContextsRoundTrip(t *testing.T) {
	for _, tc := range contextCases {
		if tc.version != "v1" {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			data, err := hook.EncodeContexts("v1", tc.ctxs)
			if err != nil {
				t.Fatal(err)
			}
			back, err := hook.DecodeContexts(data)
			if err != nil {
				t.Fatalf("DecodeContexts(%s): %v", data, err)
			}
			again, err := hook.EncodeContexts("v1", back)
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(data) {
				t.Errorf("round trip:\n got %s\nwant %s", again, data)
			}
		})
	}
}

func TestDecodeContextsErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{}`, "binding contexts: line 1: found a JSON object; the file must hold a JSON list of binding contexts"},
		{`[{"type":"Schedule"}]`, "binding context 0: no binding field"},
		{`[{"binding":"x"}]`, `binding context 0: a context without type is a lifecycle binding's, and "x" is not one`},
		{`[{"binding":"x","type":"Synchronization"}]`, "binding context 0: a Synchronization context needs objects"},
		{`[{"binding":"x","type":"Event","watchEvent":"Gone"}]`, `binding context 0: watchEvent "Gone" is not Added, Modified or Deleted`},
		{`[{"binding":"x","type":"Schedule","extra":1}]`, `binding context 0: unknown field "extra"`},
		{`[] []`, "binding contexts: more data after the list at offset 3"},
		{`[{"binding":"x","type":"Bogus"}]`, `binding context 0: type "Bogus" is not Synchronization, Event, Schedule, Group, Validating or Conversion`},
		{`[{"binding":"x","type":"Validating"}]`, "binding context 0: a Validating context needs a review object"},
		{`[{"binding":"x","type":"Conversion","review":{}}]`, "binding context 0: a Conversion context needs fromVersion and toVersion"},
		{`[{"binding":"x","type":"Validating","review":{},"toVersion":"v1"}]`, "binding context 0: toVersion belongs to a Conversion context only"},
		{`[{"binding":"x","type":"Schedule","review":{}}]`, "binding context 0: review belongs to a Validating or Conversion context only"},
	}
	for _, tc := range tests {
		_, err := hook.DecodeContexts([]byte(tc.in))
		if err == nil || err.Error() != tc.want {
			t.Errorf("DecodeContexts(%s) error = %v, want %s", tc.in, err, tc.want)
		}
	}
}

func TestCombine(t *testing.T) {
	ev := func(binding, group string) hook.BindingContext {
		return hook.BindingContext{BindingType: hook.Kubernetes, Binding: binding, Type: hook.TypeEvent, Group: group}
	}
	tests := []struct {
		name     string
		in, want []hook.BindingContext
	}{
		{"empty", nil, []hook.BindingContext{}},
		{"no groups kept", []hook.BindingContext{ev("a", ""), ev("a", ""), ev("b", "")}, []hook.BindingContext{ev("a", ""), ev("a", ""), ev("b", "")}},
		{"a group's run needs the last", []hook.BindingContext{ev("a", "g"), ev("b", "g"), ev("a", "g")}, []hook.BindingContext{ev("a", "g")}},
		{"groups apart", []hook.BindingContext{ev("a", "g"), ev("b", "h"), ev("a", "g"), ev("c", "")}, []hook.BindingContext{ev("a", "g"), ev("b", "h"), ev("a", "g"), ev("c", "")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := hook.Combine(tc.in); !cmp.Equal(got, tc.want) {
				t.Errorf("Combine = %v, want %v", got, tc.want)
			}
		})
	}
}
