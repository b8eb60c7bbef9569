package clustertest_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// editAfterGet is the real dynamic client, except that after the first
// successful Get it runs edit: another writer changing the object between
// the Applier's read and its write, every time, deterministically.
type editAfterGet struct {
	dynamic.Interface
	gets *atomic.Int32
	edit func()
}

func (d editAfterGet) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return editAfterGetNR{d.Interface.Resource(gvr), d}
}

type editAfterGetNR struct {
	dynamic.NamespaceableResourceInterface
	d editAfterGet
}

func (r editAfterGetNR) Namespace(ns string) dynamic.ResourceInterface {
	return editAfterGetR{r.NamespaceableResourceInterface.Namespace(ns), r.d}
}

type editAfterGetR struct {
	dynamic.ResourceInterface
	d editAfterGet
}

func (r editAfterGetR) Get(ctx context.Context, name string, o metav1.GetOptions, sub ...string) (*unstructured.Unstructured, error) {
	u, err := r.ResourceInterface.Get(ctx, name, o, sub...)
	if err == nil && r.d.gets.Add(1) == 1 {
		r.d.edit()
	}
	return u, err
}

// TestConflictsAreRetried: JQPatch and CreateOrUpdate write with the
// resourceVersion they read; an edit made in between makes the API server
// refuse the write, and the operation reads again and applies to the edit.
func TestConflictsAreRetried(t *testing.T) {
	e := setup(t)
	e.mustApply(`{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"NS"},"data":{"x":"1"}}}`)
	var gets atomic.Int32
	teamEdit := func(key string) func() {
		return func() {
			cm, err := e.cm("a")
			if err != nil {
				t.Error(err)
				return
			}
			cm.Data[key] = "team"
			if _, err := e.c.Client.CoreV1().ConfigMaps(e.ns).Update(e.ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Error(err)
			}
		}
	}
	e.a.Dynamic = editAfterGet{Interface: e.c.Dynamic, gets: &gets, edit: teamEdit("edited")}
	e.mustApply(`{"operation":"JQPatch","kind":"ConfigMap","namespace":"NS","name":"a","jqFilter":".data.hook = \"jq\""}`)
	if n := gets.Load(); n != 2 {
		t.Errorf("JQPatch read the object %d times; want 2 (the conflict makes it read again)", n)
	}
	if d := cmp.Diff(map[string]string{"x": "1", "edited": "team", "hook": "jq"}, e.data("a")); d != "" {
		t.Errorf("after JQPatch racing an edit (-want +got):\n%s", d)
	}

	// CreateOrUpdate: the hook's object replaces the one there, whatever
	// was edited in between; the conflict is not an error.
	gets.Store(0)
	e.a.Dynamic = editAfterGet{Interface: e.c.Dynamic, gets: &gets, edit: teamEdit("edited2")}
	e.mustApply(`{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"NS"},"data":{"hook":"whole"}}}`)
	if n := gets.Load(); n != 2 {
		t.Errorf("CreateOrUpdate read the object %d times; want 2", n)
	}
	var cm *corev1.ConfigMap
	cm, _ = e.cm("a")
	if d := cmp.Diff(map[string]string{"hook": "whole"}, cm.Data); d != "" {
		t.Errorf("after CreateOrUpdate racing an edit (-want +got):\n%s", d)
	}
}
