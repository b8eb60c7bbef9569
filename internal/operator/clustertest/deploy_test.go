package clustertest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/strata-dev/strata/internal/kube/kubetest"
	"github.com/strata-dev/strata/internal/kustomize"
	"github.com/strata-dev/strata/internal/operator"
)

const (
	deployDir = "../../../deploy/operator"
	basicDir  = "../../../examples/operator/basic"
	deployNS  = "strata-addons"
	saUser    = "system:serviceaccount:" + deployNS + ":strata-addon-operator"
)

// access is one SubjectAccessReview's question.
type access struct {
	ns, group, resource, verb string
	path                      string // a non-resource URL instead
}

// TestDeployRBAC applies deploy/operator to the API server (which
// validates every object) and checks with SubjectAccessReviews that its
// ServiceAccount may do what the operator's own code does and what
// examples/operator/basic's charts and hooks need; then swaps the broad
// default for deploy/operator/narrow and checks that the narrow RBAC is
// still enough for the example, and denies the rest.
func TestDeployRBAC(t *testing.T) {
	c := kubetest.Shared(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*deadline)
	defer cancel()
	objs := apply(ctx, t, c, deployDir)
	kinds := map[string]bool{}
	for _, u := range objs {
		kinds[u.GetKind()] = true
	}
	for _, k := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "Service", "PodDisruptionBudget"} {
		if !kinds[k] {
			t.Errorf("deploy/operator has no %s", k)
		}
	}

	needed := operatorNeeds()
	needed = append(needed, exampleNeeds(ctx, t, c)...)
	for _, a := range needed {
		if !allowed(ctx, t, c, a) {
			t.Errorf("deploy/operator: the ServiceAccount may not %s", a)
		}
	}
	// The broad default: whatever a module's chart may hold.
	for _, a := range []access{
		{ns: "kube-system", group: "apps", resource: "daemonsets", verb: "create"},
		{group: "apiextensions.k8s.io", resource: "customresourcedefinitions", verb: "patch"},
		{group: "rbac.authorization.k8s.io", resource: "clusterroles", verb: "create"},
	} {
		if !allowed(ctx, t, c, a) {
			t.Errorf("deploy/operator (broad): the ServiceAccount may not %s", a)
		}
	}

	// narrow/: the broad binding goes, the narrow RBAC comes.
	if err := c.Client.RbacV1().ClusterRoleBindings().Delete(ctx, "strata-addon-operator", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	apply(ctx, t, c, deployDir+"/narrow")
	for _, a := range needed {
		if !allowed(ctx, t, c, a) {
			t.Errorf("deploy/operator/narrow: the ServiceAccount may not %s", a)
		}
	}
	for _, a := range []access{
		{ns: "kube-system", group: "", resource: "secrets", verb: "get"},
		{ns: "default", group: "", resource: "configmaps", verb: "update"},
		{ns: "default", group: "apps", resource: "deployments", verb: "create"},
		{ns: deployNS, group: "", resource: "pods", verb: "create"},
		{ns: deployNS, group: "apps", resource: "daemonsets", verb: "create"},
		{ns: "kube-system", group: "coordination.k8s.io", resource: "leases", verb: "update"},
		{group: "rbac.authorization.k8s.io", resource: "clusterroles", verb: "create"},
		{group: "apiextensions.k8s.io", resource: "customresourcedefinitions", verb: "create"},
	} {
		if allowed(ctx, t, c, a) {
			t.Errorf("deploy/operator/narrow: the ServiceAccount may %s", a)
		}
	}
}

func (a access) String() string {
	if a.path != "" {
		return a.verb + " " + a.path
	}
	where := "in every namespace"
	if a.ns != "" {
		where = "in " + a.ns
	}
	return a.verb + " " + schema.GroupResource{Group: a.group, Resource: a.resource}.String() + " " + where
}

// operatorNeeds is what the operator's own code does on a cluster, in its
// namespace: the config store, Helm's release storage, Events, the Lease,
// discovery.
func operatorNeeds() []access {
	var out []access
	for _, v := range []string{"get", "list", "watch", "create", "update", "patch"} {
		out = append(out, access{ns: deployNS, resource: "configmaps", verb: v})
	}
	for _, v := range []string{"get", "list", "watch", "create", "update", "patch", "delete"} {
		out = append(out, access{ns: deployNS, resource: "secrets", verb: v})
	}
	for _, g := range []string{"", "events.k8s.io"} {
		out = append(out, access{ns: deployNS, group: g, resource: "events", verb: "create"}, access{ns: deployNS, group: g, resource: "events", verb: "patch"})
	}
	for _, v := range []string{"get", "create", "update"} {
		out = append(out, access{ns: deployNS, group: "coordination.k8s.io", resource: "leases", verb: v})
	}
	for _, p := range []string{"/api", "/apis", "/apis/apps/v1", "/version"} {
		out = append(out, access{path: p, verb: "get"})
	}
	return out
}

// exampleNeeds is what examples/operator/basic needs: every kind its
// enabled modules' charts render, installed, upgraded, watched for
// auto-healing and uninstalled in the operator's namespace, and the
// ConfigMaps its echo-server hook watches in every namespace.
func exampleNeeds(ctx context.Context, t *testing.T, c *kubetest.Cluster) []access {
	t.Helper()
	s := operator.DefaultSettings()
	s.ModulesDir, s.GlobalHooksDir, s.ConfigFile = basicDir+"/modules", basicDir+"/global-hooks", basicDir+"/config.yaml"
	s.ObjectsDir, s.DebugUnixSocket, s.ListenPort, s.Namespace = basicDir+"/objects", "", "", deployNS
	res, err := operator.Render(ctx, s, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery()))
	seen := map[schema.GroupResource]bool{}
	var out []access
	for _, m := range res.Modules {
		for _, u := range decode(t, m.Manifests) {
			gvk := u.GroupVersionKind()
			mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Fatalf("module %s renders %s: %v", m.Name, gvk, err)
			}
			if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
				t.Fatalf("module %s renders the cluster-scoped %s: extend narrow/clusterrole.yaml and this test", m.Name, gvk)
			}
			gr := mapping.Resource.GroupResource()
			if seen[gr] {
				continue
			}
			seen[gr] = true
			for _, v := range []string{"get", "list", "watch", "create", "update", "patch", "delete"} {
				out = append(out, access{ns: deployNS, group: gr.Group, resource: gr.Resource, verb: v})
			}
		}
	}
	if len(seen) == 0 {
		t.Fatal("examples/operator/basic renders nothing")
	}
	// modules/001-echo-server/hooks/watch-configmaps.sh: ConfigMaps, no
	// namespace selector.
	for _, v := range []string{"list", "watch"} {
		out = append(out, access{resource: "configmaps", verb: v})
	}
	return out
}

// allowed asks the API server whether the operator's ServiceAccount may
// do a.
func allowed(ctx context.Context, t *testing.T, c *kubetest.Cluster, a access) bool {
	t.Helper()
	spec := authorizationv1.SubjectAccessReviewSpec{
		User:   saUser,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + deployNS, "system:authenticated"},
	}
	if a.path != "" {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: a.path, Verb: a.verb}
	} else {
		spec.ResourceAttributes = &authorizationv1.ResourceAttributes{Namespace: a.ns, Group: a.group, Resource: a.resource, Verb: a.verb}
	}
	sar, err := c.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// apply builds the kustomization in dir and creates its objects (the
// API server validates them), and returns them.
func apply(ctx context.Context, t *testing.T, c *kubetest.Cluster, dir string) []*unstructured.Unstructured {
	t.Helper()
	stream, err := (&kustomize.Build{}).Run(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	objs := decode(t, stream)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery()))
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk, u.GetName(), err)
		}
		var ri interface {
			Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error)
		} = c.Dynamic.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = c.Dynamic.Resource(mapping.Resource).Namespace(u.GetNamespace())
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = ri.Create(cctx, u, metav1.CreateOptions{})
		cancel()
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Errorf("creating %s %s from %s: %v", gvk.Kind, u.GetName(), dir, err)
		}
	}
	return objs
}

func decode(t *testing.T, stream []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out
}
