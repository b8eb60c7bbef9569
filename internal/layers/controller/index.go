package controller

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/strata-dev/strata/internal/layers"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

// refsIndex is the field index of Apps and Catalogs by the objects they
// refer to, each written by refKey.
const refsIndex = "strata.layers.refs"

// refKey names a referenced object in refsIndex.
func refKey(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

// appRefs are the index keys of the objects an App's values come from —
// its ConfigMaps and Secrets, and its Catalog — and of its outputs, so
// that deleting an object squatting an output's name retries the App. An
// App whose layers are listed wrongly refers to no layer: only editing it
// can fix it.
func appRefs(app *v1alpha1.App) []string {
	keys := []string{
		refKey(layers.KindConfigMap, app.Namespace, app.Name+ValuesSuffix),
		refKey(layers.KindSecret, app.Namespace, app.Name+SecretsSuffix),
	}
	if plan, err := layers.NewPlan(app, nil, nil, nil); err == nil {
		for _, chain := range [][]layers.Ref{plan.ConfigMaps, plan.Secrets} {
			for _, r := range chain {
				keys = append(keys, refKey(r.Kind, r.Namespace, r.Name))
			}
		}
	}
	if app.Spec.Catalog != "" {
		keys = append(keys, refKey(layers.KindCatalog, catalogNamespace(app), app.Spec.Catalog))
	}
	return keys
}

// catalogNamespace is where an App's Catalog is, as the layers library
// looks for it.
func catalogNamespace(app *v1alpha1.App) string {
	if app.Spec.CatalogNamespace != "" {
		return app.Spec.CatalogNamespace
	}
	return layers.DefaultNamespace
}

// catalogRefs are the index keys of a Catalog's ConfigMap and Secret.
func catalogRefs(cat *v1alpha1.Catalog) []string {
	var keys []string
	for _, o := range []struct {
		kind string
		ref  v1alpha1.ObjectRef
	}{
		{layers.KindConfigMap, cat.Spec.Config.ConfigMap},
		{layers.KindSecret, cat.Spec.Config.Secret},
	} {
		if o.ref.Name != "" && o.ref.Namespace != "" {
			keys = append(keys, refKey(o.kind, o.ref.Namespace, o.ref.Name))
		}
	}
	return keys
}

func indexApp(o client.Object) []string {
	app, ok := o.(*v1alpha1.App)
	if !ok {
		return nil
	}
	return appRefs(app)
}

func indexCatalog(o client.Object) []string {
	cat, ok := o.(*v1alpha1.Catalog)
	if !ok {
		return nil
	}
	return catalogRefs(cat)
}

// mapper finds the Apps a changed object feeds.
type mapper struct {
	reader      client.Reader
	skipCatalog bool
}

// appsUsing returns the Apps that list kind namespace/name, directly or
// through their Catalog.
func (m mapper) appsUsing(ctx context.Context, kind, namespace, name string) ([]reconcile.Request, error) {
	seen := map[types.NamespacedName]bool{}
	var out []reconcile.Request
	add := func(key string) error {
		var apps v1alpha1.AppList
		if err := m.reader.List(ctx, &apps, client.MatchingFields{refsIndex: key}); err != nil {
			return err
		}
		for _, a := range apps.Items {
			n := types.NamespacedName{Namespace: a.Namespace, Name: a.Name}
			if !seen[n] {
				seen[n] = true
				out = append(out, reconcile.Request{NamespacedName: n})
			}
		}
		return nil
	}
	key := refKey(kind, namespace, name)
	switch {
	case kind == layers.KindCatalog && m.skipCatalog:
		return nil, nil
	case kind == layers.KindCatalog:
		if err := add(key); err != nil {
			return nil, err
		}
	default:
		if err := add(key); err != nil {
			return nil, err
		}
		if !m.skipCatalog {
			var cats v1alpha1.CatalogList
			if err := m.reader.List(ctx, &cats, client.MatchingFields{refsIndex: key}); err != nil {
				return nil, err
			}
			for _, c := range cats.Items {
				if err := add(refKey(layers.KindCatalog, c.Namespace, c.Name)); err != nil {
					return nil, err
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b reconcile.Request) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// dataChanged passes creations, deletions and updates that change a
// ConfigMap's or Secret's data: a layer's values are in its data, and
// resyncs or label edits need no reconcile.
func dataChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			switch o := e.ObjectOld.(type) {
			case *corev1.ConfigMap:
				n, ok := e.ObjectNew.(*corev1.ConfigMap)
				return !ok || !maps.Equal(o.Data, n.Data) || !maps.EqualFunc(o.BinaryData, n.BinaryData, bytes.Equal)
			case *corev1.Secret:
				n, ok := e.ObjectNew.(*corev1.Secret)
				return !ok || !maps.EqualFunc(o.Data, n.Data, bytes.Equal)
			}
			return true
		},
	}
}
