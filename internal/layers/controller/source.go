package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/strata-dev/strata/internal/layers"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

// cacheSource serves the layers of Apps from controller-runtime's cache.
// The cache's reader copies every object it returns, as layers.Source
// requires.
type cacheSource struct {
	reader client.Reader
	// namespace is the only namespace the cache holds; "" for all.
	namespace string
}

var _ layers.Source = cacheSource{}

// ConfigMap implements layers.Source.
func (s cacheSource) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	var cm corev1.ConfigMap
	if err := s.get(ctx, layers.KindConfigMap, namespace, name, &cm); err != nil {
		return nil, err
	}
	return &cm, nil
}

// Secret implements layers.Source.
func (s cacheSource) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	var sec corev1.Secret
	if err := s.get(ctx, layers.KindSecret, namespace, name, &sec); err != nil {
		return nil, err
	}
	return &sec, nil
}

// Catalog implements layers.Source.
func (s cacheSource) Catalog(ctx context.Context, namespace, name string) (*v1alpha1.Catalog, error) {
	var c v1alpha1.Catalog
	if err := s.get(ctx, layers.KindCatalog, namespace, name, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

func (s cacheSource) get(ctx context.Context, kind, namespace, name string, obj client.Object) error {
	if s.namespace != "" && namespace != s.namespace {
		return &sourceError{Kind: kind, Namespace: namespace, Name: name,
			err: fmt.Errorf("it is outside namespace %s, the only one this controller watches: "+
				"move it there, or run the controller for all namespaces", s.namespace)}
	}
	err := s.reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return &sourceError{Kind: kind, Namespace: namespace, Name: name, notFound: true}
	}
	return &sourceError{Kind: kind, Namespace: namespace, Name: name, err: err, transient: true}
}

// sourceError is an object that could not be read. It wraps
// layers.ErrNotFound for an object that does not exist.
type sourceError struct {
	Kind, Namespace, Name string
	err                   error
	notFound              bool
	// transient errors are the cache's: the read is retried with backoff.
	transient bool
}

func (e *sourceError) Error() string {
	if e.notFound {
		return fmt.Sprintf("%s %s/%s: %v", e.Kind, e.Namespace, e.Name, layers.ErrNotFound)
	}
	return fmt.Sprintf("%s %s/%s: %v", e.Kind, e.Namespace, e.Name, e.err)
}

func (e *sourceError) Unwrap() error {
	if e.notFound {
		return layers.ErrNotFound
	}
	return e.err
}
