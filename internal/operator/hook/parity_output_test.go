package hook_test

import (
	"testing"

	"github.com/strata-dev/strata/internal/operator/hook"
)

// TestKubernetesPatchParityShellOperator reproduces the operation parsing
// cases of shell-operator's object patch tests (kube/object_patch) on
// inputs of our own.
func TestKubernetesPatchParityShellOperator(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ops  int // operations parsed; -1: an error
	}{
		{"creates", `---
operation: Create
namespace: ns1
object:
  apiVersion: v1
  kind: Secret
  metadata: {name: s1}
  stringData: {k: v}
---
operation: CreateOrUpdate
namespace: ns1
object:
  apiVersion: v1
  kind: Secret
  metadata: {name: s1}
---
operation: CreateIfNotExists
object: {apiVersion: v1, kind: Secret, metadata: {name: s2, namespace: ns1}}
`, 3},
		{"create without an object", "operation: Create\nnamespace: ns1\nobject:\n", -1},
		{"create or update without an object", "operation: CreateOrUpdate\nnamespace: ns1\n", -1},
		{"create with an empty object", "operation: Create\nobject: {}\n", -1},
		{"deletes", `---
operation: Delete
apiVersion: v1
kind: Secret
name: s1
namespace: ns1
---
operation: DeleteInBackground
kind: Secret
name: s1
namespace: ns1
---
operation: DeleteNonCascading
apiVersion: v1
kind: Secret
name: s1
namespace: ns1
`, 3},
		{"delete without a kind", "operation: DeleteInBackground\napiVersion: v1\nname: s1\n", -1},
		{"delete without a name", "operation: DeleteNonCascading\nkind: Secret\n", -1},
		{"misspelt member", "operation: Delete\napiversion: v1\nkind: Secret\nname: s1\n", -1},
		{"patches", `---
operation: JQPatch
kind: Secret
name: s1
namespace: ns1
jqFilter: '.data.k = "dg=="'
---
operation: MergePatch
apiVersion: v1
kind: Secret
name: s1
namespace: ns1
mergePatch:
  stringData: {k: v}
---
operation: MergePatch
kind: Secret
name: s1
mergePatch: '{"stringData":{"k":"v"}}'
---
operation: JSONPatch
kind: Secret
name: s1
namespace: ns1
jsonPatch:
- {op: replace, path: /stringData, value: {k: v}}
---
operation: JSONPatch
kind: Secret
name: s1
jsonPatch: '[{"op":"add","path":"/stringData/x","value":"y"}]'
---
operation: MergePatch
kind: Secret
name: s1
subresource: status
mergePatch: {status: {a: b}}
ignoreMissingObject: true
`, 6},
		{"JQPatch without a filter", "operation: JQPatch\nkind: Secret\nname: s1\n", -1},
		{"MergePatch without a patch", "operation: MergePatch\nkind: Secret\nname: s1\n", -1},
		{"operation name in the wrong case", "operation: jsonPatch\nkind: Secret\nname: s1\njsonPatch: []\n", -1},
		{"object as JSON text in YAML", `operation: Create
object: |
  {"apiVersion":"v1", "kind":"Secret", "metadata": {
    "namespace":"ns1", "name":"s3"},
  "stringData":{"k":"v"}}
`, 1},
		// A JSON string broken over lines is no JSON, but shell-operator
		// reads the file as YAML, whose double-quoted strings may be.
		{"object as JSON text over lines", `{"operation": "Create",
"object": "{
  \"apiVersion\":\"v1\", \"kind\":\"Secret\",
  \"metadata\": {\"namespace\":\"ns1\", \"name\":\"s4\"},
  \"stringData\":{\"k\":\"v\"}}
"}
`, 1},
		{"object with generateName", "operation: Create\nobject: {apiVersion: v1, kind: Secret, metadata: {generateName: s-}}\n", 1},
		{"namespace beside an object in another", "operation: Create\nnamespace: a\nobject: {apiVersion: v1, kind: Secret, metadata: {name: s, namespace: b}}\n", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops, err := hook.ParseKubernetesPatch([]byte(tt.in), "k")
			switch {
			case tt.ops < 0 && err == nil:
				t.Fatalf("no error; parsed %+v", ops)
			case tt.ops >= 0 && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.ops >= 0 && len(ops) != tt.ops:
				t.Fatalf("%d operations, want %d", len(ops), tt.ops)
			}
		})
	}
}

// TestKubernetesPatchCreateNamespace: a namespace beside a create's object
// (which shell-operator's schema allows) fills in an object without one.
func TestKubernetesPatchCreateNamespace(t *testing.T) {
	in := `operation: CreateOrUpdate
namespace: ns1
object: {apiVersion: v1, kind: Secret, metadata: {name: s}}
---
operation: CreateIfNotExists
namespace: ns1
object: {apiVersion: v1, kind: Secret, metadata: {name: s, namespace: ns1}}
`
	ops, err := hook.ParseKubernetesPatch([]byte(in), "k")
	if err != nil {
		t.Fatal(err)
	}
	for i, op := range ops {
		meta, _ := op.Object["metadata"].(map[string]any)
		if meta["namespace"] != "ns1" || op.Namespace != "" {
			t.Errorf("operation %d: object namespace %v, operation namespace %q", i, meta["namespace"], op.Namespace)
		}
	}
}

// TestMetricsParityShellOperator reproduces shell-operator's metric
// operation rules (hook/operation.go and its test) on lines of our own.
func TestMetricsParityShellOperator(t *testing.T) {
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{`{"group":"g1","action":"expire"}`, true},
		{`{"name":"m_a","action":"set","value":1}`, true},
		{`{"name":"m_a","set":1}`, true},
		{`{"name":"m_b","add":2,"labels":{"k":"v"}}`, true},
		{`{"name":"m_c","action":"observe","value":0.2,"buckets":[0.1,1]}`, true},
		{`{"group":"g1","name":"m_d","action":"add","value":1}`, true},
		{`{"group":"g1","action":"expired"}`, false},
		{`{"name":"m_a","value":1}`, false},
		{`{"action":"set","value":1}`, false},
		{`{"group":"g1","action":"set","value":1}`, false},
		{`{"name":"m_a","action":"set"}`, false},
		{`{"name":"m_a","action":"add"}`, false},
		{`{"name":"m_c","action":"observe","value":1}`, false},
		{`{"name":"m_c","action":"observe","buckets":[1]}`, false},
		{`{"name":"m_a","set":1,"add":1}`, false},
		{`{"group":"g1","name":"m_c","action":"observe","value":1,"buckets":[1]}`, false},
		{`{"action":"expire"}`, false},
	} {
		_, err := hook.ParseMetrics([]byte(tc.line+"\n"), "m")
		if (err == nil) != tc.ok {
			t.Errorf("%s: error %v, want ok=%v", tc.line, err, tc.ok)
		}
	}
}

// TestValuesPatchStreamParityAddonOperator: addon-operator reads a values
// patch file as a stream of single operations and lists of them.
func TestValuesPatchStreamParityAddonOperator(t *testing.T) {
	in := `{"op":"add","path":"/m/k","value":"one"}
 [{"op":"remove","path":"/m/k"},
   {"op":"add","path":"/m/k","value":"two"}]
{"op":"remove","path":"/m/other"}

`
	p, err := hook.ParsePatch([]byte(in), "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 4 || p[0].Op != "add" || p[2].Value != "two" || p[3].Path != "/m/other" {
		t.Errorf("ParsePatch = %+v", p)
	}
	if _, err := hook.ParsePatch([]byte(`[{"op":"remove"}]`), "p"); err == nil {
		t.Error("an operation without a path was accepted")
	}
}
