package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group and Version of the API.
const (
	Group   = "application.giantswarm.io"
	Version = "v1alpha1"
)

// GroupVersion is application.giantswarm.io/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// Resources of the API, for dynamic clients.
var (
	AppResource     = GroupVersion.WithResource("apps")
	CatalogResource = GroupVersion.WithResource("catalogs")
)

// SchemeBuilder registers the types of this API with a runtime.Scheme.
var SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

// AddToScheme adds App, AppList, Catalog and CatalogList to a scheme.
var AddToScheme = SchemeBuilder.AddToScheme

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &App{}, &AppList{}, &Catalog{}, &CatalogList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
