package layers

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/strata-dev/strata/internal/kube"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

// ClusterSource reads the objects of a Source from an API server.
// Catalogs are decoded leniently (the API server has validated them against
// its CRD, which may know fields strata does not).
type ClusterSource struct {
	Client *kube.Client
}

var _ Source = ClusterSource{}

// ConfigMap implements Source.
func (s ClusterSource) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	cm, err := s.Client.ConfigMap(ctx, namespace, name)
	return cm, clusterErr(err)
}

// Secret implements Source.
func (s ClusterSource) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	sec, err := s.Client.Secret(ctx, namespace, name)
	return sec, clusterErr(err)
}

// Catalog implements Source.
func (s ClusterSource) Catalog(ctx context.Context, namespace, name string) (*v1alpha1.Catalog, error) {
	obj, err := s.Client.Object(ctx, v1alpha1.CatalogResource, namespace, name)
	if err != nil {
		return nil, clusterErr(err)
	}
	var c v1alpha1.Catalog
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &c); err != nil {
		return nil, fmt.Errorf("decoding Catalog %s/%s: %w", namespace, name, err)
	}
	return &c, nil
}

// App reads an App from the cluster, leniently.
func (s ClusterSource) App(ctx context.Context, namespace, name string) (*v1alpha1.App, error) {
	obj, err := s.Client.Object(ctx, v1alpha1.AppResource, namespace, name)
	if err != nil {
		return nil, clusterErr(err)
	}
	var a v1alpha1.App
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &a); err != nil {
		return nil, fmt.Errorf("decoding App %s/%s: %w", namespace, name, err)
	}
	return &a, nil
}

// clusterErr makes kube's not-found errors also ours.
func clusterErr(err error) error {
	if err != nil && errors.Is(err, kube.ErrNotFound) {
		return &notFoundError{msg: err.Error()}
	}
	return err
}
