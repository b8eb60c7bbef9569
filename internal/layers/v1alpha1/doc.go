// Package v1alpha1 holds the application.giantswarm.io/v1alpha1 App and
// Catalog types that strata's layered values read: the App's config,
// userConfig and extraConfigs references, and the Catalog's config.
//
// The types are real Kubernetes API types (TypeMeta, ObjectMeta, DeepCopy)
// so that a controller can watch them; the CRD manifests under deploy/crds
// are generated from them with controller-gen (make generate-layers).
//
// +kubebuilder:object:generate=true
// +groupName=application.giantswarm.io
package v1alpha1
