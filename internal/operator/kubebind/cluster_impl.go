package kubebind

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/strata-dev/strata/internal/operator/hook"
)

var namespacesResource = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

func newClusterSource(rc *rest.Config) (*ClusterSource, error) {
	s := &ClusterSource{watches: map[watchKey]*sharedWatch{}, waiting: map[*bindingWatch]string{}}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes bindings: %w", err)
	}
	// Discovery requests are short: bounded by a client timeout of
	// their own (the caller's config has none, for the watches).
	drc := rest.CopyConfig(rc)
	drc.Timeout = time.Minute
	dc, err := discovery.NewDiscoveryClientForConfig(drc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes bindings: %w", err)
	}
	s.dyn = dyn
	s.disc = memory.NewMemCacheClient(dc)
	return s, nil
}

func (s *ClusterSource) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

func (s *ClusterSource) report(err error) {
	if s.OnError != nil {
		s.OnError(err)
		return
	}
	s.logger().Warn("kubernetes bindings", "error", err)
}

func (s *ClusterSource) listTimeout() time.Duration {
	if s.ListTimeout <= 0 {
		return time.Minute
	}
	return s.ListTimeout
}

func (s *ClusterSource) retryBounds() (time.Duration, time.Duration) {
	lo, hi := s.RetryMin, s.RetryMax
	if lo <= 0 {
		lo = time.Second
	}
	if hi <= 0 {
		hi = 30 * time.Second
	}
	return lo, max(lo, hi)
}

// mapping is a binding's apiVersion and kind resolved.
type mapping struct {
	gvr        schema.GroupVersionResource
	gvk        schema.GroupVersionKind
	namespaced bool
}

// errNotServed is the error of a kind the API server does not serve.
var errNotServed = errors.New("not served by the API server")

// resolve maps apiVersion and kind to a resource through discovery, as
// shell-operator does: kind matches, in any case, a resource's kind, its
// name (plural) or one of its short names; an empty apiVersion searches
// the preferred version of every group. On a miss the discovery cache is
// dropped and the lookup tried once more; a kind still not found is an
// error wrapping errNotServed.
func (s *ClusterSource) resolve(apiVersion, kind string) (mapping, error) {
	m, err := s.lookup(apiVersion, kind)
	if errors.Is(err, errNotServed) {
		s.disc.Invalidate()
		m, err = s.lookup(apiVersion, kind)
	}
	return m, err
}

func (s *ClusterSource) lookup(apiVersion, kind string) (mapping, error) {
	var lists []*metav1.APIResourceList
	if apiVersion == "" {
		var err error
		lists, err = s.disc.ServerPreferredResources()
		if err != nil && len(lists) == 0 {
			return mapping{}, err
		}
		// Some groups failed (an aggregated API down): search the others.
	} else {
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil {
			return mapping{}, fmt.Errorf("apiVersion %q: %w; write group/version, or v1 for the core group", apiVersion, err)
		}
		list, err := s.disc.ServerResourcesForGroupVersion(gv.String())
		switch {
		case apierrors.IsNotFound(err) || errors.Is(err, memory.ErrCacheNotFound):
			return mapping{}, fmt.Errorf("%s: %w", kindName(apiVersion, kind), errNotServed)
		case err != nil:
			return mapping{}, err
		}
		lists = []*metav1.APIResourceList{list}
	}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if len(r.Verbs) == 0 || strings.Contains(r.Name, "/") {
				continue // not listable, or a subresource
			}
			if !strings.EqualFold(kind, r.Kind) && !strings.EqualFold(kind, r.Name) && !slices.ContainsFunc(r.ShortNames, func(n string) bool { return strings.EqualFold(kind, n) }) {
				continue
			}
			return mapping{gvr: gv.WithResource(r.Name), gvk: gv.WithKind(r.Kind), namespaced: r.Namespaced}, nil
		}
	}
	return mapping{}, fmt.Errorf("%s: %w", kindName(apiVersion, kind), errNotServed)
}

// selection is what a binding's selectors ask of the API server.
type selection struct {
	labels   string   // label selector, "" for all
	fields   string   // field selector without the names, "" for all
	names    []string // one watch per name; nil: any name
	nsNames  []string // one watch per namespace; nil: any namespace
	nsLabels string   // label selector of the namespaces, with nsDynamic
	// nsDynamic: watch the namespaces matching nsLabels (and nsNames)
	// and the objects in each.
	nsDynamic bool
	none      bool // the selectors select nothing
}

// selectionOf turns b's selectors into label and field selectors for
// the API server.
func selectionOf(b *hook.KubernetesBinding) (selection, error) {
	var sel selection
	var err error
	if b.LabelSelector != nil {
		if sel.labels, err = labelSelectorString(b.LabelSelector); err != nil {
			return sel, fmt.Errorf("binding %s: labelSelector: %w", b.Name, err)
		}
	}
	var fs []fields.Selector
	for i, r := range b.FieldSelector {
		if r.Field == "" {
			return sel, fmt.Errorf("binding %s: fieldSelector.matchExpressions[%d]: field is empty", b.Name, i)
		}
		switch r.Operator {
		case "=", "==", "Equals", "":
			fs = append(fs, fields.OneTermEqualSelector(r.Field, r.Value))
		case "!=", "NotEquals":
			fs = append(fs, fields.OneTermNotEqualSelector(r.Field, r.Value))
		default:
			return sel, fmt.Errorf("binding %s: fieldSelector.matchExpressions[%d]: operator %q; use =, ==, Equals, != or NotEquals", b.Name, i, r.Operator)
		}
	}
	if len(fs) > 0 {
		sel.fields = fields.AndSelectors(fs...).String()
	}
	if b.NameSelector != nil {
		sel.names = uniqueSorted(b.NameSelector)
		sel.none = sel.none || len(sel.names) == 0
	}
	if ns := b.Namespace; ns != nil {
		if ns.NameSelector != nil {
			sel.nsNames = uniqueSorted(ns.NameSelector)
			sel.none = sel.none || len(sel.nsNames) == 0
		}
		if ns.LabelSelector != nil {
			sel.nsDynamic = true
			if sel.nsLabels, err = labelSelectorString(ns.LabelSelector); err != nil {
				return sel, fmt.Errorf("binding %s: namespace.labelSelector: %w", b.Name, err)
			}
		}
	}
	return sel, nil
}

// fieldsFor is the field selector of the watch of one name ("" for any).
func (sel selection) fieldsFor(name string) string {
	if name == "" {
		return sel.fields
	}
	byName := fields.OneTermEqualSelector("metadata.name", name).String()
	if sel.fields == "" {
		return byName
	}
	return sel.fields + "," + byName
}

func labelSelectorString(ls *hook.LabelSelector) (string, error) {
	m := &metav1.LabelSelector{MatchLabels: ls.MatchLabels}
	for _, r := range ls.MatchExpressions {
		m.MatchExpressions = append(m.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: r.Key, Operator: metav1.LabelSelectorOperator(r.Operator), Values: r.Values})
	}
	sel, err := metav1.LabelSelectorAsSelector(m)
	if err != nil {
		return "", err
	}
	return sel.String(), nil
}

func uniqueSorted(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return slices.Compact(out)
}

func (s *ClusterSource) stats() SourceStats {
	st := SourceStats{Waiting: s.Waiting()}
	s.mu.Lock()
	ws := make([]*sharedWatch, 0, len(s.watches))
	for _, w := range s.watches {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	st.Watches = len(ws)
	for _, w := range ws {
		w.mu.Lock()
		st.Objects += len(w.items)
		for _, it := range w.items {
			if it.json != nil {
				st.KeptObjects++
				st.KeptBytes += len(it.json)
			}
		}
		w.mu.Unlock()
	}
	return st
}
