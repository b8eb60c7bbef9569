package hook_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/operator/hook"
)

func TestParsePatch(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want hook.Patch
	}{
		{"empty", "", nil},
		{"white space", " \n", nil},
		{"array", `[{"op":"add","path":"/m/a","value":{"b":1}},{"op":"remove","path":"/m/c"}]`,
			hook.Patch{{Op: "add", Path: "/m/a", Value: map[string]any{"b": int64(1)}, Line: 1}, {Op: "remove", Path: "/m/c", Line: 1}}},
		{"stream of arrays and operations", "[{\"op\":\"add\",\"path\":\"/m/a\",\"value\":1}]\n{\"op\":\"replace\",\"path\":\"/m/b\",\"value\":\"x\"}\n[\n{\"op\":\"move\",\"from\":\"/m/a\",\"path\":\"/m/c\"},\n{\"op\":\"copy\",\"from\":\"/m/c\",\"path\":\"/m/d\"}]\n",
			hook.Patch{{Op: "add", Path: "/m/a", Value: int64(1), Line: 1}, {Op: "replace", Path: "/m/b", Value: "x", Line: 2},
				{Op: "move", From: "/m/a", Path: "/m/c", Line: 4}, {Op: "copy", From: "/m/c", Path: "/m/d", Line: 5}}},
		{"null value", `[{"op":"add","path":"/m/a","value":null}]`, hook.Patch{{Op: "add", Path: "/m/a", Line: 1}}},
		{"test", `[{"op":"test","path":"/m/a","value":[1,2.5]}]`, hook.Patch{{Op: "test", Path: "/m/a", Value: []any{int64(1), 2.5}, Line: 1}}},
		// RFC 6902 section 4: members an operation does not use are ignored.
		{"remove with a value", `[{"op":"remove","path":"/m/a","value":{"x":1}}]`, hook.Patch{{Op: "remove", Path: "/m/a", Line: 1}}},
		{"add with a from", `[{"op":"add","path":"/m/a","value":1,"from":"/m/b"}]`, hook.Patch{{Op: "add", Path: "/m/a", Value: int64(1), Line: 1}}},
		{"move with a value", `[{"op":"move","from":"/m/a","path":"/m/b","value":2}]`, hook.Patch{{Op: "move", From: "/m/a", Path: "/m/b", Line: 1}}},
		{"unknown member", `[{"op":"replace","path":"/m/a","value":1,"comment":"x"}]`, hook.Patch{{Op: "replace", Path: "/m/a", Value: int64(1), Line: 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := hook.ParsePatch([]byte(tc.in), "patch")
			if err != nil {
				t.Fatalf("ParsePatch: %v", err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("ParsePatch (-want +got):\n%s", d)
			}
		})
	}
}

func TestParsePatchErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"op":"add"`, "values patch line 1:"},
		{`"hello"`, "values patch line 1: found the string \"hello\"; write a JSON list of operations such as [{\"op\":\"add\",\"path\":\"/x/y\",\"value\":1}]"},
		{`[1]`, "values patch line 1: an operation is a map such as {\"op\":\"add\",\"path\":\"/x/y\",\"value\":1}, not the integer 1"},
		{"[\n{\"op\":\"merge\",\"path\":\"/a\"}]", "values patch line 2: op \"merge\" is not one of add, remove, replace, move, copy, test"},
		{`[{"op":"add","path":"/a"}]`, "values patch line 1: add needs \"value\""},
		{`[{"op":"add","path":"a","value":1}]`, "values patch line 1: \"path\" must be a JSON pointer starting with /, such as \"/moduleKey/key\", not \"a\""},
		{"garbage\x00", "values patch line 1:"},
	}
	for _, tc := range tests {
		_, err := hook.ParsePatch([]byte(tc.in), "values patch")
		if err == nil || !matches(err.Error(), tc.want) {
			t.Errorf("ParsePatch(%q) error = %v, want %s", tc.in, err, tc.want)
		}
	}
}

// matches compares an error with a want that ends with ":" as a prefix.
func matches(got, want string) bool {
	if want != "" && want[len(want)-1] == ':' {
		return len(got) >= len(want) && got[:len(want)] == want
	}
	return got == want
}

func TestParseMetrics(t *testing.T) {
	in := `{"name":"hook_metric_count","action":"add","value":1,"labels":{"label1":"value1"}}
{"name":"g","action":"set","value":33}

{"name":"h","action":"observe","value":42, "buckets": [1,2,5,10,20,50], "labels":{"a":"b"}}
{"name":"short","add":1,"labels":{"l":"v"}}
{"name":"short","set":-5}
{"group":"group1", "name":"hook_metric_count",  "action":"add", "value":1}
{"group":"group_name_1", "action":"expire"}
`
	want := []hook.MetricOperation{
		{Name: "hook_metric_count", Action: hook.MetricAdd, Value: 1, Labels: map[string]string{"label1": "value1"}, Line: 1},
		{Name: "g", Action: hook.MetricSet, Value: 33, Line: 2},
		{Name: "h", Action: hook.MetricObserve, Value: 42, Buckets: []float64{1, 2, 5, 10, 20, 50}, Labels: map[string]string{"a": "b"}, Line: 4},
		{Name: "short", Action: hook.MetricAdd, Value: 1, Labels: map[string]string{"l": "v"}, Line: 5},
		{Name: "short", Action: hook.MetricSet, Value: -5, Line: 6},
		{Name: "hook_metric_count", Action: hook.MetricAdd, Value: 1, Group: "group1", Line: 7},
		{Action: hook.MetricExpire, Group: "group_name_1", Line: 8},
	}
	got, err := hook.ParseMetrics([]byte(in), "metrics")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ParseMetrics (-want +got):\n%s", d)
	}
}

func TestParseMetricsErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"{\"name\":\"a\",\"action\":\"set\",\"value\":1}\nnot json", "m line 2: invalid character 'o' in literal null (expecting 'u'); each line is a JSON object such as {\"name\":\"my_metric\",\"action\":\"set\",\"value\":1}"},
		{`{"name":"a","action":"set"}`, "m line 1: action \"set\" needs \"value\""},
		{`{"action":"set","value":1}`, "m line 1: action \"set\" needs \"name\""},
		{`{"name":"a","value":1}`, "m line 1: no \"action\"; write \"action\": \"add\", \"set\", \"observe\" or \"expire\" (or the shortcut \"add\": N / \"set\": N)"},
		{`{"name":"a","action":"inc","value":1}`, "m line 1: action \"inc\" is not add, set, observe or expire"},
		{`{"name":"a","add":1,"set":2}`, "m line 1: \"add\" and \"set\" exclude each other; write one operation per line"},
		{`{"name":"a-b","action":"set","value":1}`, "m line 1: metric name \"a-b\" is not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)"},
		{`{"name":"a","action":"add","value":-1}`, "m line 1: add -1: a counter only goes up; use action \"set\" for a gauge"},
		{`{"name":"a","action":"observe","value":1}`, "m line 1: action \"observe\" needs \"buckets\", such as [1,2,5,10]"},
		{`{"name":"a","action":"observe","value":1,"buckets":[2,1]}`, "m line 1: buckets must increase: 1 after 2"},
		{`{"name":"a","action":"observe","value":1,"buckets":[1],"group":"g"}`, "m line 1: action \"observe\" is not supported in a group; drop \"group\" or use \"set\""},
		{`{"action":"expire"}`, "m line 1: action \"expire\" needs \"group\": the group whose metrics to drop"},
		{`{"name":"a","action":"set","value":1,"labels":{"hook":"x"}}`, "m line 1: the label \"hook\" is added by the operator (the hook's name); rename yours"},
		{`{"name":"a","action":"set","value":1,"labels":{"a-b":"x"}}`, "m line 1: label name \"a-b\" is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, no leading __)"},
		{`{"name":"a","action":"set","value":1,"labels":{"a":1}}`, "m line 1: label values are strings, not a JSON number; quote it"},
		{`{"name":"a","action":"set","value":1,"extra":1}`, "m line 1: json: unknown field \"extra\"; each line is a JSON object such as {\"name\":\"my_metric\",\"action\":\"set\",\"value\":1}"},
	}
	for _, tc := range tests {
		_, err := hook.ParseMetrics([]byte(tc.in), "m")
		if err == nil || err.Error() != tc.want {
			t.Errorf("ParseMetrics(%s) error =\n %v\nwant\n %s", tc.in, err, tc.want)
		}
	}
}

func TestParseKubernetesPatch(t *testing.T) {
	in := `{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}}
{"operation":"CreateOrUpdate","object":"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"b\"}}","subresource":"status"}
{"operation":"Delete","apiVersion":"v1","kind":"Pod","namespace":"default","name":"p"}
{"operation":"JQPatch","kind":"Deployment","name":"d","jqFilter":".spec.replicas = 1","ignoreMissingObject":true}
{"operation":"MergePatch","kind":"Deployment","name":"d","mergePatch":{"spec":{"replicas":2}}}
{"operation":"JSONPatch","kind":"Deployment","name":"d","jsonPatch":[{"op":"replace","path":"/spec/replicas","value":3}],"ignoreHookError":true}
`
	got, err := hook.ParseKubernetesPatch([]byte(in), "k")
	if err != nil {
		t.Fatal(err)
	}
	want := []hook.KubeOperation{
		{Operation: hook.KubeCreate, Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}, Line: 1},
		{Operation: hook.KubeCreateOrUpdate, Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "b"}}, Subresource: "status", Line: 2},
		{Operation: hook.KubeDelete, APIVersion: "v1", Kind: "Pod", Namespace: "default", Name: "p", Line: 3},
		{Operation: hook.KubeJQPatch, Kind: "Deployment", Name: "d", JQFilter: ".spec.replicas = 1", IgnoreMissingObject: true, Line: 4},
		{Operation: hook.KubeMergePatch, Kind: "Deployment", Name: "d", MergePatch: map[string]any{"spec": map[string]any{"replicas": int64(2)}}, Line: 5},
		{Operation: hook.KubeJSONPatch, Kind: "Deployment", Name: "d", JSONPatch: hook.Patch{{Op: "replace", Path: "/spec/replicas", Value: int64(3), Line: 6}}, IgnoreHookError: true, Line: 6},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ParseKubernetesPatch (-want +got):\n%s", d)
	}
	// shell-operator's Go hooks marshal both flags into every operation.
	sdk := `{"operation":"Delete","kind":"Pod","name":"a","ignoreMissingObject":false,"ignoreHookError":false}
{"operation":"CreateIfNotExists","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}},"ignoreMissingObject":false,"ignoreHookError":false}
`
	if got, err := hook.ParseKubernetesPatch([]byte(sdk), "k"); err != nil || len(got) != 2 {
		t.Errorf("ParseKubernetesPatch(module-sdk shape) = %+v, %v", got, err)
	}
	yaml := "operation: Delete\nkind: Pod\nname: a\n---\noperation: DeleteInBackground\nkind: Pod\nname: b\n"
	got, err = hook.ParseKubernetesPatch([]byte(yaml), "k")
	if err != nil || len(got) != 2 || got[1].Line != 5 || got[1].Operation != hook.KubeDeleteInBackground {
		t.Errorf("ParseKubernetesPatch(YAML) = %+v, %v", got, err)
	}
}

func TestParseKubernetesPatchErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"operation":"Apply","kind":"Pod","name":"a"}`, "k line 1: operation \"Apply\" is not one of Create, CreateOrUpdate, CreateIfNotExists, Delete, DeleteInBackground, DeleteNonCascading, JQPatch, MergePatch, JSONPatch"},
		{`{"operation":"Delete","kind":"Pod"}`, "k line 1: Delete needs \"name\""},
		{`{"operation":"Delete","kind":"Pod","name":"a","object":{}}`, "k line 1: Delete takes no \"object\"; it takes kind, name, apiVersion, namespace, subresource, ignoreMissingObject, ignoreHookError"},
		{`{"operation":"Create","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}},"jqFilter":"."}`, "k line 1: Create takes no \"jqFilter\"; it takes object, namespace, subresource, ignoreMissingObject, ignoreHookError"},
		{`{"operation":"Create","object":{"kind":"Pod"}}`, "k line 1: object has no apiVersion"},
		{`{"operation":"Create","object":{"apiVersion":"v1","kind":"Pod"}}`, "k line 1: object has no metadata.name"},
		{`{"operation":"Create","object":"{not yaml: ["}`, "k line 1:"},
		{`{"operation":"JQPatch","kind":"Pod","name":"a","jqFilter":".["}`, "k line 1: jq program \".[\" does not parse: unexpected EOF"},
		{`{"operation":"MergePatch","kind":"Pod","name":"a","mergePatch":{}}`, "k line 1: mergePatch must be a non-empty map, not a map"},
		{`{"operation":"JSONPatch","kind":"Pod","name":"a","jsonPatch":[{"op":"nope","path":"/a"}]}`, "k line 1: op \"nope\" is not one of add, remove, replace, move, copy, test"},
		{`{"operation":"Delete","kind":"Pod","name":"a","ignoreMissingObject":"yes"}`, "k line 1: \"ignoreMissingObject\" must be true or false, not \"yes\""},
		{`{"operation":"JQPatch","kind":"Pod","name":"a","jqFilter":".","ignoreMissingObject":"yes"}`, "k line 1: \"ignoreMissingObject\" must be true or false, not \"yes\""},
		{`[1,2]`, "k line 1: an operation is a map such as {\"operation\":\"Delete\",\"kind\":\"Pod\",\"name\":\"x\"}, not a list"},
	}
	for _, tc := range tests {
		_, err := hook.ParseKubernetesPatch([]byte(tc.in), "k")
		if err == nil || !matches(err.Error(), tc.want) {
			t.Errorf("ParseKubernetesPatch(%s) error =\n %v\nwant\n %s", tc.in, err, tc.want)
		}
	}
}
