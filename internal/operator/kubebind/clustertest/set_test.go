package clustertest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/strata-dev/strata/internal/eventually"
	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/operator/kubebind"
)

// TestSetOnCluster: a hook's bindings over the cluster source together:
// a group's Synchronization, executeHookOnEvent, and snapshots (of a
// binding that keeps no full objects, and of one whose events do not run
// the hook) read fresh at run time.
func TestSetOnCluster(t *testing.T) {
	e := setup(t)
	ns := unique("kb-set-")
	e.namespace(ns, "")
	e.apply(configMaps, cm(ns, "a", "", "a1"))
	secretsGVR := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	e.apply(secretsGVR, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: s1, namespace: %s}\nstringData: {k: v}\n", ns))
	cfg, err := hook.ParseConfig(fmt.Appendf(nil, `configVersion: v1
kubernetes:
- name: cms
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [%[1]s]}}
  jqFilter: .data.v
  executeHookOnEvent: [Deleted]
  group: g
- name: secrets
  apiVersion: v1
  kind: Secret
  namespace: {nameSelector: {matchNames: [%[1]s]}}
  jqFilter: .metadata.name
  keepFullObjectsInMemory: false
  group: g
`, ns), hook.Global, "h")
	if err != nil {
		t.Fatal(err)
	}
	set := kubebind.NewSet(cfg, e.src)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	got := make(chan hook.BindingContext, 100)
	syncs, err := set.Start(ctx, func(ev kubebind.Event) { got <- ev.Context })
	if err != nil {
		t.Fatal(err)
	}
	filled := set.Fill(syncs)
	if len(filled) != 2 || filled[0].Group != "g" || results(filled[0].Snapshots["cms"]) != `"a1"` || results(filled[1].Snapshots["secrets"]) != `"s1"` {
		t.Fatalf("Synchronization contexts %+v", filled)
	}
	// Added does not run the hook (executeHookOnEvent: [Deleted]); the
	// snapshot has it all the same.
	e.apply(configMaps, cm(ns, "b", "", "b1"))
	eventually.True(t, "the snapshot of cms has b", func() (bool, string) {
		s := results(set.Monitor("cms").Snapshot())
		return s == `"a1" "b1"`, s
	})
	e.apply(secretsGVR, fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: s2, namespace: %s}\nstringData: {k: v}\n", ns))
	ev := recv(t, got)
	if ev.Binding != "secrets" || ev.WatchEvent != hook.Added {
		t.Fatalf("event %+v, want secrets Added", ev)
	}
	run := set.Fill([]hook.BindingContext{ev})[0]
	if s := results(run.Snapshots["cms"]); s != `"a1" "b1"` {
		t.Errorf("the run's cms snapshot %s", s)
	}
	if s := results(run.Snapshots["secrets"]); s != `"s1" "s2"` {
		t.Errorf("the run's secrets snapshot %s", s)
	}
	for _, o := range run.Snapshots["secrets"] {
		if o.Object != nil {
			t.Errorf("the secrets snapshot keeps an object")
		}
	}
	e.delete(configMaps, ns, "a")
	ev = recv(t, got)
	if ev.Binding != "cms" || ev.WatchEvent != hook.Deleted || results(ev.Objects) != `"a1"` {
		t.Fatalf("event %+v, want cms Deleted a1", ev)
	}
}

func recv(t *testing.T, ch <-chan hook.BindingContext) hook.BindingContext {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(eventually.DefaultTimeout):
		t.Fatalf("no event after %v", eventually.DefaultTimeout)
		return hook.BindingContext{}
	}
}
