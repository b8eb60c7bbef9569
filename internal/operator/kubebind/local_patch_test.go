package kubebind_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/kubebind"
)

// TestLocalApply: hooks' kubernetes patch operations change the objects of
// a LocalSource in memory, as the API server would, and the watchers see
// each change; an object file that later holds an object a hook created
// replaces it.
func TestLocalApply(t *testing.T) {
	h := newHarness(t, map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns}\ndata: {x: \"1\"}\n"})
	var mu sync.Mutex
	var got []string
	ctx := context.Background()
	objs, err := h.src.Watch(ctx, "v1", "ConfigMap", func(c kubebind.Change) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%s %s %s", c.Event, c.Object.ID(), c.Object.JSON))
	})
	if err != nil || len(objs) != 1 {
		t.Fatalf("Watch = %v, %v", objs, err)
	}
	steps := []struct {
		ops     string
		want    []string
		wantErr string
	}{
		{
			ops:  `{"operation": "Create", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}, "data": {"k": "v"}}, "namespace": "ns"}`,
			want: []string{`Added ns/b {"apiVersion":"v1","data":{"k":"v"},"kind":"ConfigMap","metadata":{"name":"b","namespace":"ns"}}`},
		},
		{
			ops:     `{"operation": "Create", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "ns"}}}`,
			wantErr: "operation 0 (line 1, Create ConfigMap ns/b): the object already exists",
		},
		{ops: `{"operation": "CreateIfNotExists", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "ns"}}}`},
		{
			ops:  `{"operation": "CreateOrUpdate", "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "ns"}, "data": {"k": "w"}}}`,
			want: []string{`Modified ns/b {"apiVersion":"v1","data":{"k":"w"},"kind":"ConfigMap","metadata":{"name":"b","namespace":"ns"}}`},
		},
		{
			ops:  `{"operation": "MergePatch", "kind": "ConfigMap", "namespace": "ns", "name": "a", "mergePatch": {"data": {"x": null, "y": "2"}}}`,
			want: []string{`Modified ns/a {"apiVersion":"v1","data":{"y":"2"},"kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"}}`},
		},
		{
			ops: `{"operation": "JSONPatch", "apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns", "name": "b", "jsonPatch": [{"op": "add", "path": "/data/z", "value": "3"}]}
{"operation": "JQPatch", "kind": "ConfigMap", "namespace": "ns", "name": "b", "jqFilter": ".metadata.labels = {\"l\": \"v\"}"}`,
			want: []string{
				`Modified ns/b {"apiVersion":"v1","data":{"k":"w","z":"3"},"kind":"ConfigMap","metadata":{"name":"b","namespace":"ns"}}`,
				`Modified ns/b {"apiVersion":"v1","data":{"k":"w","z":"3"},"kind":"ConfigMap","metadata":{"labels":{"l":"v"},"name":"b","namespace":"ns"}}`,
			},
		},
		{ops: `{"operation": "JQPatch", "kind": "ConfigMap", "namespace": "ns", "name": "c", "jqFilter": ".", "ignoreMissingObject": true}`},
		{
			ops: `{"operation": "MergePatch", "kind": "ConfigMap", "namespace": "ns", "name": "c", "mergePatch": {"data": {}}}
{"operation": "Delete", "kind": "ConfigMap", "namespace": "ns", "name": "a"}
{"operation": "MergePatch", "kind": "ConfigMap", "namespace": "ns", "name": "b", "mergePatch": {"metadata": {"name": "renamed"}}}`,
			want:    []string{`Deleted ns/a {"apiVersion":"v1","data":{"y":"2"},"kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"}}`},
			wantErr: "operation 0 (line 1, MergePatch ConfigMap ns/c): the object does not exist (set ignoreMissingObject: true to skip it)\noperation 2 (line 3, MergePatch ConfigMap ns/b): the patch changes the object's apiVersion, kind, namespace or name",
		},
		{ops: `{"operation": "DeleteInBackground", "kind": "ConfigMap", "namespace": "ns", "name": "a"}`},
	}
	for i, st := range steps {
		ops, err := hook.ParseKubernetesPatch([]byte(st.ops), "patch.json")
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		mu.Lock()
		got = nil
		mu.Unlock()
		err = h.src.Apply(ctx, "global hook h", ops)
		if st.wantErr == "" && err != nil || st.wantErr != "" && (err == nil || !strings.Contains(err.Error(), st.wantErr)) {
			t.Errorf("step %d: Apply error %v, want %q", i, err, st.wantErr)
		}
		mu.Lock()
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Errorf("step %d: changes (-want +got):\n%s", i, diff)
		}
		mu.Unlock()
	}

	// A file that now holds b takes it over: the watchers see the
	// difference, not a second object.
	mu.Lock()
	got = nil
	mu.Unlock()
	h.write("b.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: ns}\ndata: {k: file}\n")
	h.settle()
	mu.Lock()
	defer mu.Unlock()
	want := []string{`Modified ns/b {"apiVersion":"v1","data":{"k":"file"},"kind":"ConfigMap","metadata":{"name":"b","namespace":"ns"}}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after b.yaml (-want +got):\n%s", diff)
	}
	if len(h.errs) > 0 {
		t.Errorf("errors reported: %v", h.errs)
	}
}
