package appset

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/strata-dev/strata/internal/document"
)

// The clusters and clusterDecisionResource generators, as Argo CD's: the
// clusters Argo CD knows are its cluster Secrets (label
// argocd.argoproj.io/secret-type: cluster) in its namespace, and the
// in-cluster entry when none of them is for
// https://kubernetes.default.svc.

// DefaultNamespace is the Argo CD namespace a zero Renderer.Namespace means.
const DefaultNamespace = "argocd"

const (
	secretTypeLabel   = "argocd.argoproj.io/secret-type"
	inClusterName     = "in-cluster"
	inClusterServer   = "https://kubernetes.default.svc"
	clusterSecretType = "cluster"
)

type clustersDoc struct {
	Selector *labelSelectorDoc `json:"selector"`
	Values   map[string]string `json:"values"`
	FlatList bool              `json:"flatList"`
	Template *templateDoc      `json:"template"`
}

type clusterDecisionDoc struct {
	ConfigMapRef        string            `json:"configMapRef"`
	Name                string            `json:"name"`
	LabelSelector       *labelSelectorDoc `json:"labelSelector"`
	Values              map[string]string `json:"values"`
	RequeueAfterSeconds *int64            `json:"requeueAfterSeconds"`
	Template            *templateDoc      `json:"template"`
}

// ErrNoObjects is wrapped when a generator needs objects of the cluster
// and the Renderer has no ObjectLister.
var ErrNoObjects = errors.New("no cluster objects given")

// clusterSecret is a cluster Secret as the generators read it.
type clusterSecret struct {
	secretName          string
	name, server        string
	project             string
	hasProject          bool
	labels, annotations map[string]string
}

func (x *run) namespace() string {
	if x.r.Namespace != "" {
		return x.r.Namespace
	}
	return DefaultNamespace
}

// toLabelSelector converts a selector as written to the API's type.
func toLabelSelector(d *labelSelectorDoc) *metav1.LabelSelector {
	s := &metav1.LabelSelector{}
	if d == nil {
		return s
	}
	s.MatchLabels = d.MatchLabels
	for _, e := range d.MatchExpressions {
		s.MatchExpressions = append(s.MatchExpressions, metav1.LabelSelectorRequirement{Key: e.Key, Operator: metav1.LabelSelectorOperator(e.Operator), Values: e.Values})
	}
	return s
}

// clusterSecrets lists the cluster Secrets the label selector selects.
func (x *run) clusterSecrets(ctx context.Context, sel *labelSelectorDoc, path string) ([]clusterSecret, error) {
	if x.r.Objects == nil {
		return nil, fmt.Errorf("%s: %w: the generator reads Argo CD's cluster Secrets (a clusterDecisionResource generator also its ConfigMap and duck-typed resources); pass them as manifests with --secret FILE (and --objects FILE), or read them from the cluster with --kubeconfig", path, ErrNoObjects)
	}
	ls := metav1.AddLabelToSelector(toLabelSelector(sel), secretTypeLabel, clusterSecretType)
	s, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("%s.selector: %w", path, err)
	}
	objs, err := x.r.Objects.List(ctx, Query{APIVersion: "v1", Resource: "secrets", Namespace: x.namespace(), LabelSelector: s.String()})
	if err != nil {
		return nil, fmt.Errorf("%s: listing cluster Secrets: %w", path, err)
	}
	out := make([]clusterSecret, 0, len(objs))
	for _, o := range objs {
		cs, err := decodeClusterSecret(o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, cs)
	}
	return out, nil
}

func stringMapOf(v any) map[string]string {
	m, _ := v.(map[string]any)
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		out[k] = formatValue(e)
	}
	return out
}

// decodeClusterSecret reads a Secret object: data base64-encoded (as the
// API server gives it), stringData (in manifests) as it is.
func decodeClusterSecret(o map[string]any) (clusterSecret, error) {
	meta, _ := o["metadata"].(map[string]any)
	cs := clusterSecret{labels: stringMapOf(meta["labels"]), annotations: stringMapOf(meta["annotations"])}
	cs.secretName, _ = meta["name"].(string)
	data := map[string]string{}
	if d, ok := o["data"].(map[string]any); ok {
		for k, v := range d {
			s, _ := v.(string)
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return cs, fmt.Errorf("cluster Secret %q: data.%s is not base64; put plain text under stringData instead", cs.secretName, k)
			}
			data[k] = string(b)
		}
	}
	if d, ok := o["stringData"].(map[string]any); ok {
		for k, v := range d {
			data[k] = formatValue(v)
		}
	}
	cs.name, cs.server = data["name"], data["server"]
	cs.project, cs.hasProject = data["project"]
	return cs, nil
}

func (x *run) clustersParams(ctx context.Context, g *generator) ([]map[string]any, error) {
	d := g.clusters
	secrets, err := x.clusterSecrets(ctx, d.Selector, g.path)
	if err != nil {
		return nil, err
	}
	// The controller keys the Secrets by cluster name: of two with one
	// name, the one listed last (by Secret name) wins.
	byName := map[string]clusterSecret{}
	for _, s := range secrets {
		if prev, dup := byName[s.name]; dup {
			x.warnf("%s: cluster Secrets %q and %q both name the cluster %q; the controller keeps one (%q), the other generates nothing", g.path, prev.secretName, s.secretName, s.name, s.secretName)
		}
		byName[s.name] = s
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var sets []map[string]any
	hasInCluster := false
	for _, n := range names {
		s := byName[n]
		if s.server == inClusterServer {
			hasInCluster = true
		}
		p := map[string]any{"name": s.name, "nameNormalized": sanitizeName(s.name), "server": s.server, "project": s.project}
		if x.a.GoTemplate {
			meta := map[string]any{}
			if len(s.annotations) > 0 {
				meta["annotations"] = s.annotations
			}
			if len(s.labels) > 0 {
				meta["labels"] = s.labels
			}
			p["metadata"] = meta
		} else {
			for k, v := range s.annotations {
				p["metadata.annotations."+k] = v
			}
			for k, v := range s.labels {
				p["metadata.labels."+k] = v
			}
		}
		if err := x.appendValues(g, d.Values, p, len(sets)); err != nil {
			return nil, err
		}
		sets = append(sets, p)
	}
	selecting := d.Selector != nil && (len(d.Selector.MatchLabels) > 0 || len(d.Selector.MatchExpressions) > 0)
	if !selecting && !hasInCluster {
		p := map[string]any{"name": inClusterName, "nameNormalized": inClusterName, "server": inClusterServer, "project": ""}
		if err := x.appendValues(g, d.Values, p, len(sets)); err != nil {
			return nil, err
		}
		sets = append(sets, p)
	}
	if d.FlatList {
		list := make([]any, len(sets))
		for i, s := range sets {
			list[i] = s
		}
		return []map[string]any{{"clusters": list}}, nil
	}
	return sets, nil
}

// argoClusters lists the clusters Argo CD knows, by name and server: its
// cluster Secrets, and in-cluster when no Secret is for its server.
func (x *run) argoClusters(ctx context.Context, path string) ([]clusterSecret, error) {
	secrets, err := x.clusterSecrets(ctx, nil, path)
	if err != nil {
		return nil, err
	}
	for _, s := range secrets {
		if s.server == inClusterServer {
			return secrets, nil
		}
	}
	return append(secrets, clusterSecret{name: inClusterName, server: inClusterServer}), nil
}

func (x *run) clusterDecisionParams(ctx context.Context, g *generator) ([]map[string]any, error) {
	d := g.decision
	clusters, err := x.argoClusters(ctx, g.path)
	if err != nil {
		return nil, err
	}
	ns := x.namespace()
	cms, err := x.r.Objects.List(ctx, Query{APIVersion: "v1", Resource: "configmaps", Namespace: ns, Name: d.ConfigMapRef})
	if err != nil {
		return nil, fmt.Errorf("%s.configMapRef: reading ConfigMap %q: %w", g.path, d.ConfigMapRef, err)
	}
	if len(cms) == 0 {
		return nil, fmt.Errorf("%s.configMapRef: ConfigMap %q not found in namespace %s; pass it with --objects FILE (or --kubeconfig for the cluster's)", g.path, d.ConfigMapRef, ns)
	}
	data := stringMapOf(cms[0]["data"])
	apiVersion, kind := data["apiVersion"], data["kind"]
	slash := strings.Index(apiVersion, "/")
	if kind == "" || slash < 1 {
		return nil, fmt.Errorf("%s: ConfigMap %q must give the duck-typed resource as data.apiVersion GROUP/VERSION and data.kind, its plural resource name (it has apiVersion %q, kind %q)", g.path, d.ConfigMapRef, apiVersion, kind)
	}
	hasSelector := d.LabelSelector != nil && (d.LabelSelector.MatchLabels != nil || d.LabelSelector.MatchExpressions != nil)
	if (d.Name == "") == !hasSelector {
		return nil, fmt.Errorf("%s: give either name or labelSelector (one of them, not both)", g.path)
	}
	q := Query{APIVersion: apiVersion, Resource: kind, Namespace: ns}
	if d.Name != "" {
		q.Name = d.Name
	} else {
		s, err := metav1.LabelSelectorAsSelector(toLabelSelector(d.LabelSelector))
		if err != nil {
			return nil, fmt.Errorf("%s.labelSelector: %w", g.path, err)
		}
		q.LabelSelector = s.String()
	}
	resources, err := x.r.Objects.List(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("%s: listing %s %s: %w", g.path, apiVersion, kind, err)
	}
	if len(resources) == 0 {
		return nil, fmt.Errorf("%s: no %s (%s) found in namespace %s by %s; the controller fails the same way (pass them with --objects FILE)", g.path, kind, apiVersion, ns, describeQuery(q))
	}
	listKey := data["statusListKey"]
	if listKey == "" {
		listKey = "clusters"
	}
	matchKey := data["matchKey"]
	if matchKey == "" {
		x.warnf("%s: ConfigMap %q has no data.matchKey: the controller generates nothing", g.path, d.ConfigMapRef)
		return nil, nil
	}
	var decisions []map[string]any
	for _, res := range resources {
		meta, _ := res["metadata"].(map[string]any)
		rname, _ := meta["name"].(string)
		status, _ := res["status"].(map[string]any)
		if len(status) == 0 {
			continue
		}
		list, ok := status[listKey].([]any)
		if !ok {
			return nil, fmt.Errorf("%s: %s %q: status.%s is %s, not a list of decisions (the controller fails on it); check the ConfigMap's statusListKey", g.path, kind, rname, listKey, describeJSON(status[listKey]))
		}
		for i, e := range list {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: %s %q: status.%s[%d] is %s, not a map (the controller fails on it)", g.path, kind, rname, listKey, i, describeJSON(e))
			}
			if !x.v.atLeast(3, 5, 0) {
				for k, v := range m {
					if _, str := v.(string); !str {
						return nil, fmt.Errorf("%s: %s %q: status.%s[%d].%s is %s; Argo CD %d.%d fails on a decision value that is not a string (3.5 formats it)", g.path, kind, rname, listKey, i, k, describeJSON(v), x.v.Major, x.v.Minor)
					}
				}
			}
			decisions = append(decisions, m)
		}
	}
	var sets []map[string]any
	for _, dec := range decisions {
		mv, ok := dec[matchKey]
		if !ok || mv == nil || formatValue(mv) == "" {
			continue
		}
		want := formatValue(mv)
		var found *clusterSecret
		for i := range clusters {
			if clusters[i].name == want {
				found = &clusters[i]
				break
			}
		}
		if found == nil {
			continue
		}
		p := map[string]any{"name": found.name, "server": found.server}
		for k, v := range dec {
			p[k] = formatValue(v)
		}
		if len(d.Values) > 0 {
			if x.a.GoTemplate {
				vals := make(map[string]string, len(d.Values))
				for k, v := range d.Values {
					vals[k] = v
				}
				p["values"] = vals
			} else {
				for k, v := range d.Values {
					p["values."+k] = v
				}
			}
		}
		sets = append(sets, p)
	}
	return sets, nil
}

func describeQuery(q Query) string {
	if q.Name != "" {
		return "name " + q.Name
	}
	return "label selector " + q.LabelSelector
}

func describeJSON(v any) string {
	if v == nil {
		return "missing"
	}
	return document.Describe(v)
}
