// Package kubebind feeds hooks' kubernetes bindings: it watches objects
// through an ObjectSource, keeps each binding's snapshot (objects that
// match its selectors, with their jqFilter results), and turns changes
// into binding contexts: one Synchronization with every object first,
// then an Event per change.
//
// A Monitor serves one binding: apiVersion/kind, nameSelector,
// labelSelector, fieldSelector and namespace selectors pick the objects;
// jqFilter (compiled once, by hook.ParseConfig) gives each its filter
// result; a Modified change whose filter result did not change is dropped,
// as shell-operator drops it; executeHookOnEvent picks the events that
// make contexts (the others still update the snapshot);
// keepFullObjectsInMemory: false keeps only filter results. A Set holds
// the monitors of one hook and fills contexts' snapshots at run time.
//
// The ObjectSource is the one backend interface: LocalSource reads
// Kubernetes YAML files from a directory (`--objects DIR`) and watches it
// with fsnotify, so that a file added, changed or removed becomes Added,
// Modified and Deleted changes of the objects in it. ClusterSource watches
// the API server; it is a BindingSource, which selects each binding's
// objects itself (on the server), so that the monitor keeps only its
// snapshot.
package kubebind

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"time"

	"github.com/strata-dev/strata/internal/operator/hook"
)

// An Object is one Kubernetes object, decoded and as JSON.
type Object struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	// Value is the object as a value tree (package document's types).
	// Read only: it is shared by every monitor that sees the object.
	Value map[string]any
	// JSON is the object encoded once, for binding contexts.
	JSON json.RawMessage
}

// ID returns namespace/name (name alone for a cluster-wide object).
func (o *Object) ID() string {
	if o.Namespace == "" {
		return o.Name
	}
	return o.Namespace + "/" + o.Name
}

// A Change is one change to the objects of a kind.
type Change struct {
	Event  hook.WatchEvent
	Object *Object // for Deleted: the object as it was last seen
}

// An ObjectSource supplies objects of one apiVersion and kind: those that
// exist now and, after them, every change.
type ObjectSource interface {
	// Watch returns the objects of apiVersion and kind that exist now and
	// then, until ctx is done, calls fn with each later change, in order,
	// from one goroutine per Watch. An empty apiVersion matches any
	// version of kind. Watch must not wait for fn: fn may block until the
	// caller has handled the objects Watch returned.
	Watch(ctx context.Context, apiVersion, kind string, fn func(Change)) ([]*Object, error)
}

// A BindingSource is an ObjectSource that selects a binding's objects
// itself: WatchBinding returns exactly the objects of b's apiVersion and
// kind that match its nameSelector, labelSelector, fieldSelector and
// namespace selectors (on the API server where it can), and then reports
// each change of that selection: Added when an object enters it (a
// namespace that appears or comes to match included), Deleted when one
// leaves it, Modified otherwise. A Deleted change may carry only the
// object's identity (apiVersion, kind, namespace, name) when the source
// did not keep the object. The rules of ObjectSource.Watch hold (one
// goroutine per call, in order, fn may block).
//
// A Monitor over a BindingSource keeps no copy of the objects the
// binding does not select and does no selection of its own, so the
// source decides what is held in memory (the ClusterSource keeps only
// identities for keepFullObjectsInMemory: false).
type BindingSource interface {
	ObjectSource
	WatchBinding(ctx context.Context, b *hook.KubernetesBinding, fn func(Change)) ([]*Object, error)
}

// An Event is a binding context a Monitor made from a change, with the
// binding it belongs to.
type Event struct {
	Binding *hook.KubernetesBinding
	Context hook.BindingContext
}

// A Monitor serves one kubernetes binding.
type Monitor struct {
	// Timings, when set before Start, is told how long the monitor's work
	// took (for metrics).
	Timings Timings

	binding *hook.KubernetesBinding
	source  ObjectSource
	state   *monitorState
	started atomic.Bool
	// sourceSelects is set when source is a BindingSource: it selects
	// the objects, the monitor keeps only its snapshot.
	sourceSelects bool
}

// Timings receives how long a monitor's work took. Its methods are called
// from the source's goroutines and must not block.
type Timings interface {
	// Filter is one jqFilter run on one object of binding b.
	Filter(b *hook.KubernetesBinding, d time.Duration)
	// Event is the handling of one change the source reported (selection,
	// filter, snapshot update, events made) by binding b's monitor.
	Event(b *hook.KubernetesBinding, d time.Duration)
}

// NewMonitor returns a monitor of binding b over src. Start it.
func NewMonitor(b *hook.KubernetesBinding, src ObjectSource) *Monitor {
	return &Monitor{binding: b, source: src, state: newMonitorState()}
}

// Start reads the objects that exist and returns the binding's
// Synchronization context (its objects sorted by namespace and name). A
// monitor starts once: cancel ctx to stop it, and make a new one to watch
// again;
// then, until ctx is done, each change that runs the hook is passed to
// emit as an Event (from the source's goroutine; emit must not block for
// long). A jqFilter that fails on an object is an error naming the
// binding and the object; at start it fails Start, later the change is
// dropped and reported to emit's caller through Err.
func (m *Monitor) Start(ctx context.Context, emit func(Event)) (hook.BindingContext, error) {
	return m.start(ctx, emit)
}

// Snapshot returns the binding's current objects, sorted by namespace and
// name.
func (m *Monitor) Snapshot() []hook.ObjectResult {
	return m.state.snapshot()
}

// Err returns the last error met after Start (a jqFilter that failed on
// a changed object), nil if none.
func (m *Monitor) Err() error {
	return m.state.lastErr()
}

// A Set holds the monitors of one hook's kubernetes bindings.
type Set struct {
	config   *hook.Config
	monitors []*Monitor
}

// NewSet returns the monitors of every kubernetes binding of cfg over src
// (none for a hook without kubernetes bindings: its Set still fills
// contexts).
func NewSet(cfg *hook.Config, src ObjectSource) *Set {
	s := &Set{config: cfg}
	for _, b := range cfg.Kubernetes {
		s.monitors = append(s.monitors, NewMonitor(b, src))
	}
	return s
}

// WithTimings sets the Timings of every monitor of s (before Start) and
// returns s.
func (s *Set) WithTimings(t Timings) *Set {
	for _, m := range s.monitors {
		m.Timings = t
	}
	return s
}

// Start starts every monitor, in the order of the bindings, and returns
// their Synchronization contexts in that order (snapshots filled: each
// sees the snapshots of the bindings started before it, as
// shell-operator's do). Later events go to emit.
func (s *Set) Start(ctx context.Context, emit func(Event)) ([]hook.BindingContext, error) {
	return s.start(ctx, emit)
}

// Monitor returns the monitor of the binding called name, or nil.
func (s *Set) Monitor(name string) *Monitor {
	for _, m := range s.monitors {
		if m.binding.Name == name {
			return m
		}
	}
	return nil
}

// Fill returns a copy of ctxs with their snapshots (and a
// Synchronization's objects) read fresh, just before the hook runs: each
// context gets the snapshots of hook.Config.SnapshotsFor, an empty list
// for a binding not started. Each snapshot is read once per call, so all
// contexts of a run see the same objects. A Set of a hook without
// kubernetes bindings fills lifecycle contexts with nothing.
func (s *Set) Fill(ctxs []hook.BindingContext) []hook.BindingContext {
	return s.fill(ctxs)
}
