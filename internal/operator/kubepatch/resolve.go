package kubepatch

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
)

// A Resource is what an operation's apiVersion and kind resolve to.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
}

// A Resolver maps apiVersion and kind to the API server's resources
// through discovery, cached; a miss resets the cache and asks again once,
// so that a kind whose CRD was installed since is found.
type Resolver struct {
	disc   discovery.CachedDiscoveryInterface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

// NewResolver returns a Resolver over a discovery client.
func NewResolver(dc discovery.DiscoveryInterface) *Resolver {
	cached := memory.NewMemCacheClient(dc)
	return &Resolver{disc: cached, mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached)}
}

// Resolve maps apiVersion (empty: the kind's preferred group and version)
// and kind (as written in objects; a resource name, singular or plural,
// is taken too, as shell-operator does) to a resource; with subresource,
// the resource must serve it.
func (r *Resolver) Resolve(apiVersion, kind, subresource string) (Resource, error) {
	res, err := r.resolve(apiVersion, kind, subresource)
	if err != nil {
		r.mapper.Reset() // a CRD may have been installed since the cache was filled
		res, err = r.resolve(apiVersion, kind, subresource)
	}
	return res, err
}

func (r *Resolver) resolve(apiVersion, kind, subresource string) (Resource, error) {
	var gv schema.GroupVersion
	if apiVersion != "" {
		var err error
		if gv, err = schema.ParseGroupVersion(apiVersion); err != nil {
			return Resource{}, fmt.Errorf("apiVersion %q: %w", apiVersion, err)
		}
	}
	var m *meta.RESTMapping
	var err error
	if apiVersion != "" {
		m, err = r.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: kind}, gv.Version)
	}
	if apiVersion == "" || meta.IsNoMatchError(err) {
		// The kind in lower case is the resource's singular name.
		gvk, kerr := r.mapper.KindFor(schema.GroupVersionResource{Group: gv.Group, Version: gv.Version, Resource: strings.ToLower(kind)})
		if kerr == nil {
			m, err = r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		} else if err == nil {
			err = kerr
		}
	}
	if err != nil {
		if meta.IsNoMatchError(err) || meta.IsAmbiguousError(err) {
			if apiVersion == "" {
				return Resource{}, fmt.Errorf("the API server serves no kind %s (no apiVersion given: any group); install its CRD first, or fix kind", kind)
			}
			return Resource{}, fmt.Errorf("the API server serves no kind %s in %s; install its CRD first, or fix apiVersion and kind", kind, apiVersion)
		}
		return Resource{}, fmt.Errorf("discovering kind %s: %w", kind, err)
	}
	res := Resource{GVR: m.Resource, Kind: m.GroupVersionKind.Kind, Namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace}
	if sub := strings.Trim(subresource, "/"); sub != "" {
		list, err := r.disc.ServerResourcesForGroupVersion(m.Resource.GroupVersion().String())
		if err != nil {
			return Resource{}, fmt.Errorf("discovering the subresources of %s: %w", m.Resource.Resource, err)
		}
		var subs []string
		for _, ar := range list.APIResources {
			if s, ok := strings.CutPrefix(ar.Name, m.Resource.Resource+"/"); ok {
				subs = append(subs, s)
			}
		}
		if !slices.Contains(subs, sub) {
			have := "none"
			if len(subs) > 0 {
				slices.Sort(subs)
				have = strings.Join(subs, ", ")
			}
			return Resource{}, fmt.Errorf("%s has no subresource %q (it has: %s)", m.Resource.Resource, sub, have)
		}
	}
	return res, nil
}
