package kubepatch_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/itchyny/gojq"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/kubepatch"
)

func TestDescribe(t *testing.T) {
	ops, err := hook.ParseKubernetesPatch([]byte(`{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"}}}
{"operation":"Create","object":{"apiVersion":"v1","kind":"Namespace","metadata":{"generateName":"tmp-"}}}
{"operation":"MergePatch","apiVersion":"apps/v1","kind":"Deployment","namespace":"ns","name":"d","subresource":"/status","mergePatch":{"a":1}}
{"operation":"Delete","kind":"Node","name":"n1"}
`), "k")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, op := range ops {
		got = append(got, kubepatch.Describe(op))
	}
	want := []string{
		"Create v1/ConfigMap ns/a",
		"Create v1/Namespace tmp-*",
		"MergePatch apps/v1/Deployment ns/d subresource status",
		"Delete Node n1",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Describe (-want +got):\n%s", d)
	}
}

func TestOpError(t *testing.T) {
	cause := errors.New("boom")
	err := error(&kubepatch.OpError{Index: 3, Line: 7, Desc: "MergePatch v1/ConfigMap ns/name", Field: "kind", Err: cause})
	if got, want := err.Error(), "operation 3 (MergePatch v1/ConfigMap ns/name, line 7): kind: boom"; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	if !errors.Is(err, cause) {
		t.Error("OpError does not unwrap to its cause")
	}
}

func TestRunJQ(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "a", "generation": int64(3)},
		"data":     map[string]any{"x": "1"},
	}}
	tests := []struct {
		prog    string
		want    map[string]any
		wantErr string
	}{
		{prog: `.data.y = "2" | .metadata.generation += 1`, want: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "a", "generation": int64(4)},
			"data":     map[string]any{"x": "1", "y": "2"},
		}},
		{prog: `.metadata.generation * 1.5 | {apiVersion: "v1", kind: "ConfigMap", metadata: {name: "a"}, data: {v: tostring}}`, want: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}, "data": map[string]any{"v": "4.5"},
		}},
		{prog: `empty`, wantErr: "the program gave no result"},
		{prog: `.data.x`, wantErr: `the program gave the string "1"; it must give the whole object`},
		{prog: `error("no")`, wantErr: "no"},
		{prog: `{kind: 1}`, wantErr: "not a Kubernetes object"},
	}
	for _, tc := range tests {
		q, err := gojq.Parse(tc.prog)
		if err != nil {
			t.Fatal(err)
		}
		code, err := gojq.Compile(q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := kubepatch.RunJQ(context.Background(), code, obj)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("RunJQ(%s) error = %v; want %q", tc.prog, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("RunJQ(%s): %v", tc.prog, err)
			continue
		}
		if d := cmp.Diff(tc.want, got.Object); d != "" {
			t.Errorf("RunJQ(%s) (-want +got):\n%s", tc.prog, d)
		}
	}
	// A program that does not end stops with its context.
	q, _ := gojq.Parse(`last(range(1e18))`)
	code, _ := gojq.Compile(q)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := kubepatch.RunJQ(ctx, code, obj); !errors.Is(err, context.Canceled) {
		t.Errorf("RunJQ with a cancelled context: %v", err)
	}
	if obj.Object["data"].(map[string]any)["y"] != nil {
		t.Error("RunJQ changed its input")
	}
}
