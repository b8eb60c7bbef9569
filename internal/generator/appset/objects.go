package appset

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/manifest"
)

// Query selects objects of one resource in one namespace, as a list call
// to the API server does.
type Query struct {
	APIVersion string // "v1", "cluster.open-cluster-management.io/v1beta1"
	Resource   string // the plural resource name: "secrets", "placementdecisions"
	Namespace  string
	// LabelSelector in Kubernetes syntax ("a=b,c in (d)"); empty selects all.
	LabelSelector string
	// Name, when not empty, selects the object of that name only.
	Name string
}

// ObjectLister lists objects as the ApplicationSet controller reads them
// from its cluster: cluster Secrets for the clusters generator, a
// ConfigMap and duck-typed resources for clusterDecisionResource. Objects
// reads them from manifest files; a Kubernetes client from the cluster.
type ObjectLister interface {
	List(ctx context.Context, q Query) ([]map[string]any, error)
}

// Objects is an ObjectLister over manifests read from files, standing in
// for the objects of the Argo CD namespace.
type Objects struct {
	objs  []localObject
	index map[[4]string]string // apiVersion, kind, namespace, name -> file:line
}

var _ ObjectLister = (*Objects)(nil)

type localObject struct {
	apiVersion, kind, namespace, name string
	labels                            map[string]string
	tree                              map[string]any
	where                             string // file:line
}

// Load reads the manifests of data (YAML documents separated by ---, or
// kind: List). Every document must be an object with apiVersion, kind and
// metadata.name.
func (o *Objects) Load(data []byte, source string) error {
	docs, err := manifest.Parse(data, source, manifest.Limits{MaxBytes: fileLimits.MaxBytes, MaxDepth: fileLimits.MaxDepth, MaxNodes: fileLimits.MaxNodes})
	if err != nil {
		return err
	}
	for _, d := range docs {
		if err := o.add(d.Value, d.Pos, source, 0); err != nil {
			return err
		}
	}
	return nil
}

func (o *Objects) add(tree any, pos *document.Pos, source string, depth int) error {
	m, ok := tree.(map[string]any)
	if !ok {
		return invalidf(source, pos, "expected a Kubernetes object, found %s", document.Describe(tree))
	}
	kind, _ := m["kind"].(string)
	apiVersion, _ := m["apiVersion"].(string)
	if kind == "List" && depth == 0 {
		items, _ := m["items"].([]any)
		for i, it := range items {
			if err := o.add(it, pos.Key("items").Item(i), source, 1); err != nil {
				return err
			}
		}
		return nil
	}
	meta, _ := m["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if kind == "" || apiVersion == "" || name == "" {
		return invalidf(source, pos, "an object needs apiVersion, kind and metadata.name")
	}
	ns, _ := meta["namespace"].(string)
	lbls := map[string]string{}
	if l, ok := meta["labels"].(map[string]any); ok {
		for k, v := range l {
			s, ok := v.(string)
			if !ok {
				return invalidf(source, pos.Lookup(document.Path{document.Key("metadata"), document.Key("labels"), document.Key(k)}), "%s %q: metadata.labels.%s is %s; label values are strings: quote it", kind, name, k, document.Describe(v))
			}
			lbls[k] = s
		}
	}
	where := fmt.Sprintf("%s:%d", source, lineOf(pos))
	key := [4]string{apiVersion, kind, ns, name}
	if prev, dup := o.index[key]; dup {
		return invalidf(source, pos, "%s %q is given twice (first at %s)", kind, name, prev)
	}
	if o.index == nil {
		o.index = map[[4]string]string{}
	}
	o.index[key] = where
	o.objs = append(o.objs, localObject{apiVersion: apiVersion, kind: kind, namespace: ns, name: name, labels: lbls, tree: m, where: where})
	return nil
}

// resourceOf reports whether resource (a plural resource name, as a
// ConfigMap of the clusterDecisionResource generator gives it) names kind:
// the kind in lower case, plural with s, es, or y turned to ies, or as it is.
func resourceOf(resource, kind string) bool {
	k := strings.ToLower(kind)
	r := strings.ToLower(resource)
	switch r {
	case k, k + "s", k + "es":
		return true
	}
	return strings.HasSuffix(k, "y") && r == k[:len(k)-1]+"ies"
}

// List implements ObjectLister: the objects of q's apiVersion and resource
// in q's namespace (a manifest without a namespace is in every one),
// sorted by name as the API server lists them.
func (o *Objects) List(_ context.Context, q Query) ([]map[string]any, error) {
	sel, err := labels.Parse(q.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("label selector %q: %w", q.LabelSelector, err)
	}
	var out []localObject
	for _, obj := range o.objs {
		if obj.apiVersion != q.APIVersion || !resourceOf(q.Resource, obj.kind) {
			continue
		}
		if obj.namespace != "" && obj.namespace != q.Namespace {
			continue
		}
		if q.Name != "" && obj.name != q.Name {
			continue
		}
		if !sel.Matches(labels.Set(obj.labels)) {
			continue
		}
		out = append(out, obj)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].name < out[j].name })
	res := make([]map[string]any, len(out))
	for i, obj := range out {
		res[i] = obj.tree
	}
	return res, nil
}
