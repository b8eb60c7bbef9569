package kubebind

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/strata-dev/strata/internal/operator/hook"
)

// A ClusterSource is the BindingSource of kubernetes bindings on an API
// server: each binding's objects come from watches (client-go reflectors
// over the dynamic client), one per distinct query (resource, namespace,
// label selector, field selector), shared between the bindings that ask
// the same.
//
// apiVersion and kind are resolved through discovery (cached; the cache is
// dropped on a miss), as shell-operator resolves them: kind may be the
// kind, the resource name or a short name, in any case; an empty apiVersion
// is the preferred version of whichever group serves it. A kind the API server does not serve yet (a CRD a
// module installs later) is not an error: the binding starts with no
// objects, the source reports the miss to OnError and tries again with
// backoff (RetryMin doubling up to RetryMax), and when the kind appears its
// objects arrive as Added changes.
//
// Selection happens on the API server where Kubernetes offers it: the
// namespace, labelSelector (matchLabels and matchExpressions), fieldSelector,
// and nameSelector (one watch per name, by metadata.name). A namespace
// nameSelector is one watch per namespace; a namespace labelSelector
// watches the Namespaces that match (on the server) and starts a watch in
// each namespace as it appears or comes to match, and stops it (the
// objects it held become Deleted changes) when it goes.
//
// keepFullObjectsInMemory: false gives the binding a watch of its own that
// keeps only each object's identity and resourceVersion: the object
// passes through once (the monitor runs jqFilter on it and keeps the
// result) and is dropped. A watch shared by bindings that keep full objects
// keeps each object's JSON once, for bindings that join it later.
//
// A relist (after a watch expired or the API server restarted) reports
// only what changed: objects with the resourceVersion seen before make no
// change. Lists are bounded by ListTimeout; watches have no client-side
// timeout (the reflector asks the API server for one of 5 to 10 minutes
// and opens the next).
type ClusterSource struct {
	// Logger logs; nil is slog.Default().
	Logger *slog.Logger
	// OnError is told of kinds not found and of failed lists and watches
	// (the source retries them); nil logs them to Logger.
	OnError func(error)
	// ListTimeout bounds each list request; 0 is one minute. (Discovery
	// requests have a client timeout of one minute.)
	ListTimeout time.Duration
	// RetryMin and RetryMax bound the backoff between tries of a kind not
	// found and of a failed list; 0 is 1s and 30s.
	RetryMin, RetryMax time.Duration

	dyn     dynamic.Interface
	disc    discovery.CachedDiscoveryInterface
	mu      sync.Mutex
	watches map[watchKey]*sharedWatch
	nextOwn int
	waiting map[*bindingWatch]string // bindings whose kind is not found, and the kind
}

var _ BindingSource = (*ClusterSource)(nil)

// NewClusterSource returns a source over the API server of rc. rc should
// have no overall Timeout (watches are long requests); the source bounds
// its lists and discovery requests itself. Set the fields before the first
// Watch.
func NewClusterSource(rc *rest.Config) (*ClusterSource, error) {
	return newClusterSource(rc)
}

// Watch implements ObjectSource: every object of apiVersion and kind, in
// every namespace.
func (s *ClusterSource) Watch(ctx context.Context, apiVersion, kind string, fn func(Change)) ([]*Object, error) {
	return s.watchBinding(ctx, &hook.KubernetesBinding{Name: kindName(apiVersion, kind), APIVersion: apiVersion, Kind: kind, KeepFullObjectsInMemory: true}, fn)
}

// WatchBinding implements BindingSource.
func (s *ClusterSource) WatchBinding(ctx context.Context, b *hook.KubernetesBinding, fn func(Change)) ([]*Object, error) {
	return s.watchBinding(ctx, b, fn)
}

// SourceStats tells what a ClusterSource holds.
type SourceStats struct {
	// Watches is the number of watches open (one reflector each).
	Watches int
	// Objects is the number of objects they know (identity and
	// resourceVersion at least).
	Objects int
	// KeptObjects and KeptBytes count the objects whose JSON is kept
	// (by watches shared by bindings with keepFullObjectsInMemory), and
	// its size.
	KeptObjects int
	KeptBytes   int
	// Waiting lists the bindings whose kind the API server does not
	// serve (yet), as "binding: apiVersion kind", sorted.
	Waiting []string
}

// Stats returns what the source holds now.
func (s *ClusterSource) Stats() SourceStats {
	return s.stats()
}

// Waiting lists the bindings whose kind the API server does not serve
// (yet), as "binding: apiVersion kind", sorted.
func (s *ClusterSource) Waiting() []string {
	s.mu.Lock()
	out := make([]string, 0, len(s.waiting))
	for _, k := range s.waiting {
		out = append(out, k)
	}
	s.mu.Unlock()
	slices.Sort(out)
	return out
}
