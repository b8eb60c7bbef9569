package kubebind

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/strata-dev/strata/internal/operator/hook"
)

// bindingWatch serves one WatchBinding call: it holds the binding's
// subscriptions and, from one goroutine, passes their changes to fn.
type bindingWatch struct {
	src *ClusterSource
	b   *hook.KubernetesBinding
	fn  func(Change)
	sel selection
	q   changeQueue

	m     mapping
	subs  map[string][]*subscription // by namespace ("" for all)
	nsSub *subscription              // the namespaces, with sel.nsDynamic
	// held are the names of the objects passed on per namespace, with
	// sel.nsDynamic: when a namespace goes they become Deleted changes.
	held map[string]map[string]struct{}
	// nsRetry is the backoff of namespaces whose watches failed to open.
	nsRetry map[string]time.Duration
}

func (s *ClusterSource) watchBinding(ctx context.Context, b *hook.KubernetesBinding, fn func(Change)) ([]*Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sel, err := selectionOf(b)
	if err != nil {
		return nil, err
	}
	if sel.none {
		return nil, nil
	}
	bw := &bindingWatch{src: s, b: b, fn: fn, sel: sel, q: changeQueue{wake: make(chan struct{}, 1)},
		subs: map[string][]*subscription{}, held: map[string]map[string]struct{}{}, nsRetry: map[string]time.Duration{}}
	m, err := s.resolve(b.APIVersion, b.Kind)
	if errors.Is(err, errNotServed) {
		s.setWaiting(bw, true)
		s.report(fmt.Errorf("binding %s: the API server serves no %s (yet; a CRD not installed?): the binding starts with no objects and tries again; the objects come as Added events when the kind appears", b.Name, kindName(b.APIVersion, b.Kind)))
		go bw.loop(ctx, true)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("resolving %s through discovery: %w", kindName(b.APIVersion, b.Kind), err)
	}
	objs, err := bw.open(ctx, m)
	if err != nil {
		bw.closeAll()
		return nil, err
	}
	go bw.loop(ctx, false)
	return objs, nil
}

func (s *ClusterSource) setWaiting(bw *bindingWatch, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.waiting[bw] = bw.b.Name + ": " + kindName(bw.b.APIVersion, bw.b.Kind)
	} else {
		delete(s.waiting, bw)
	}
}

// open starts the binding's watches for mapping m and returns the objects
// they hold.
func (bw *bindingWatch) open(ctx context.Context, m mapping) ([]*Object, error) {
	bw.m = m
	if !m.namespaced && bw.b.Namespace != nil {
		return nil, nil // a namespace selector selects no cluster-wide object
	}
	if !bw.sel.nsDynamic {
		nss := bw.sel.nsNames
		if nss == nil || !m.namespaced {
			nss = []string{""}
		}
		var out []*Object
		for _, ns := range nss {
			objs, err := bw.openNamespace(ctx, ns)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
		return out, nil
	}
	bw.nsSub = bw.src.subscribe(watchKey{gvr: namespacesResource, labels: bw.sel.nsLabels}, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, false, true, bw)
	nss, err := bw.nsSub.wait(ctx)
	if err != nil {
		return nil, fmt.Errorf("watching namespaces: %w", err)
	}
	var out []*Object
	for _, ns := range nss {
		if bw.sel.nsNames != nil && !slices.Contains(bw.sel.nsNames, ns.Name) {
			continue
		}
		objs, err := bw.openNamespace(ctx, ns.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// openNamespace starts the watches of one namespace ("" for all) and
// returns their objects.
func (bw *bindingWatch) openNamespace(ctx context.Context, ns string) ([]*Object, error) {
	names := bw.sel.names
	if names == nil {
		names = []string{""}
	}
	var out []*Object
	for _, name := range names {
		key := watchKey{gvr: bw.m.gvr, namespace: ns, labels: bw.sel.labels, fields: bw.sel.fieldsFor(name)}
		sub := bw.src.subscribe(key, bw.m.gvk, bw.b.KeepFullObjectsInMemory, bw.b.KeepFullObjectsInMemory, bw)
		bw.subs[ns] = append(bw.subs[ns], sub)
		objs, err := sub.wait(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", key, err)
		}
		out = append(out, objs...)
	}
	for _, o := range out {
		bw.track(Change{Event: hook.Added, Object: o})
	}
	return out, nil
}

// closeNamespace stops the watches of one namespace.
func (bw *bindingWatch) closeNamespace(ns string) {
	for _, sub := range bw.subs[ns] {
		bw.src.unsubscribe(sub)
	}
	delete(bw.subs, ns)
}

func (bw *bindingWatch) closeAll() {
	for ns := range bw.subs {
		bw.closeNamespace(ns)
	}
	if bw.nsSub != nil {
		bw.src.unsubscribe(bw.nsSub)
		bw.nsSub = nil
	}
	clear(bw.held)
}

// loop passes changes to fn until ctx is done; with pending it first waits
// for the binding's kind to appear.
func (bw *bindingWatch) loop(ctx context.Context, pending bool) {
	defer func() {
		bw.closeAll()
		bw.src.setWaiting(bw, false)
	}()
	if pending {
		objs, ok := bw.waitKind(ctx)
		if !ok {
			return
		}
		for _, o := range objs {
			bw.fn(Change{Event: hook.Added, Object: o})
		}
	}
	for {
		it, ok := bw.q.pop(ctx)
		if !ok {
			return
		}
		if it.sub.closed.Load() {
			continue // a namespace that went, or a retry's leftover
		}
		if it.sub == bw.nsSub {
			bw.namespaceChanged(ctx, it.change)
			continue
		}
		bw.track(it.change)
		bw.fn(it.change)
	}
}

// waitKind tries the binding's kind again with backoff until the API
// server serves it, then opens its watches.
func (bw *bindingWatch) waitKind(ctx context.Context) ([]*Object, bool) {
	s := bw.src
	lo, hi := s.retryBounds()
	delay := lo
	for {
		select {
		case <-ctx.Done():
			return nil, false
		case <-time.After(delay):
		}
		delay = min(2*delay, hi)
		m, err := s.resolve(bw.b.APIVersion, bw.b.Kind)
		if errors.Is(err, errNotServed) {
			s.logger().Debug("kubernetes binding still waits for its kind", "binding", bw.b.Name, "kind", kindName(bw.b.APIVersion, bw.b.Kind))
			continue
		}
		if err != nil {
			s.report(fmt.Errorf("binding %s: resolving %s through discovery: %w", bw.b.Name, kindName(bw.b.APIVersion, bw.b.Kind), err))
			continue
		}
		objs, err := bw.open(ctx, m)
		if err != nil {
			bw.closeAll()
			if ctx.Err() == nil {
				s.report(fmt.Errorf("binding %s: %w", bw.b.Name, err))
			}
			continue
		}
		s.setWaiting(bw, false)
		s.logger().Info("kubernetes binding: its kind appeared; its objects come as Added events", "binding", bw.b.Name, "kind", kindName(bw.b.APIVersion, bw.b.Kind), "objects", len(objs))
		return objs, true
	}
}

// namespaceChanged starts the watches of a namespace that appeared (or
// came to match) and stops those of one that went: its objects become
// Added, then Deleted changes.
func (bw *bindingWatch) namespaceChanged(ctx context.Context, c Change) {
	ns := c.Object.Name
	if c.Event == hook.Deleted {
		bw.closeNamespace(ns)
		delete(bw.nsRetry, ns)
		names := make([]string, 0, len(bw.held[ns]))
		for n := range bw.held[ns] {
			names = append(names, n)
		}
		slices.Sort(names)
		delete(bw.held, ns)
		for _, n := range names {
			bw.fn(Change{Event: hook.Deleted, Object: identityObject(bw.m.gvk, ns, n)})
		}
		return
	}
	if _, open := bw.subs[ns]; open {
		return
	}
	if bw.sel.nsNames != nil && !slices.Contains(bw.sel.nsNames, ns) {
		return
	}
	if !bw.nsSub.w.has(ns) {
		return // gone since: a stale change, or a retry too late
	}
	objs, err := bw.openNamespace(ctx, ns)
	if err != nil {
		bw.closeNamespace(ns)
		delete(bw.held, ns)
		if ctx.Err() != nil {
			return
		}
		// Tried again later, with backoff, as long as the namespace is
		// there.
		lo, hi := bw.src.retryBounds()
		delay := min(max(2*bw.nsRetry[ns], lo), hi)
		bw.nsRetry[ns] = delay
		bw.src.report(fmt.Errorf("binding %s: namespace %s: %w (retrying in %s)", bw.b.Name, ns, err, delay))
		sub := bw.nsSub
		time.AfterFunc(delay, func() { bw.q.push(queued{sub: sub, change: Change{Event: hook.Added, Object: c.Object}}) })
		return
	}
	delete(bw.nsRetry, ns)
	for _, o := range objs {
		bw.fn(Change{Event: hook.Added, Object: o})
	}
}

// track records, with a namespace labelSelector, which objects the
// binding was given in each namespace.
func (bw *bindingWatch) track(c Change) {
	if !bw.sel.nsDynamic {
		return
	}
	o := c.Object
	if c.Event == hook.Deleted {
		delete(bw.held[o.Namespace], o.Name)
		return
	}
	if bw.held[o.Namespace] == nil {
		bw.held[o.Namespace] = map[string]struct{}{}
	}
	bw.held[o.Namespace][o.Name] = struct{}{}
}
