package kubebind

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

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
	drc.Timeout = s.listTimeout()
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

// watchKey identifies a watch: bindings that ask the same share it,
// except those that keep no full objects (own > 0: a watch of their own).
type watchKey struct {
	gvr       schema.GroupVersionResource
	namespace string
	labels    string
	fields    string
	own       int
}

func (k watchKey) String() string {
	var b strings.Builder
	b.WriteString(k.gvr.Resource)
	if k.gvr.Group != "" {
		b.WriteString("." + k.gvr.Group)
	}
	b.WriteString("/" + k.gvr.Version)
	if k.namespace != "" {
		b.WriteString(" in namespace " + k.namespace)
	}
	if k.labels != "" {
		b.WriteString(" labels " + k.labels)
	}
	if k.fields != "" {
		b.WriteString(" fields " + k.fields)
	}
	return b.String()
}

// storedItem is what a watch keeps of an object: its identity and
// resourceVersion, and its JSON only in a shared watch.
type storedItem struct {
	namespace, name string
	rv              string
	json            []byte
}

// sharedWatch is one reflector and the store it fills: it keeps what it
// must to tell changes apart (and, when shared, the objects for bindings
// that join later) and passes each change to its subscribers' queues.
type sharedWatch struct {
	src    *ClusterSource
	key    watchKey
	gvk    schema.GroupVersionKind
	keep   bool
	cancel context.CancelFunc

	mu     sync.Mutex
	items  map[string]*storedItem // by namespace/name
	subs   map[*subscription]struct{}
	synced bool
}

var _ cache.ReflectorStore = (*sharedWatch)(nil)

// subscription is one binding's use of a watch.
type subscription struct {
	w       *sharedWatch
	bw      *bindingWatch
	closed  atomic.Bool
	ready   chan struct{} // closed once initial is set
	errc    chan error    // a failed first list
	initial []*Object
	live    bool // initial handed over: changes go to the queue (w.mu)
}

// subscribe joins the watch of key (starting it if none runs) for bw.
// A watch that keeps objects (keep) is shared; one that does not is the
// binding's own, unless share: then bindings that join it later get the
// objects' identities alone (enough for namespaces).
func (s *ClusterSource) subscribe(key watchKey, gvk schema.GroupVersionKind, keep, share bool, bw *bindingWatch) *subscription {
	sub := &subscription{bw: bw, ready: make(chan struct{}), errc: make(chan error, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !keep && !share {
		s.nextOwn++
		key.own = s.nextOwn
	}
	w := s.watches[key]
	if w == nil {
		ctx, cancel := context.WithCancel(context.Background())
		w = &sharedWatch{src: s, key: key, gvk: gvk, keep: keep, cancel: cancel, items: map[string]*storedItem{}, subs: map[*subscription]struct{}{}}
		s.watches[key] = w
		go w.run(ctx)
	}
	sub.w = w
	w.mu.Lock()
	w.subs[sub] = struct{}{}
	if w.synced {
		sub.initial = w.objectsLocked()
		sub.live = true
		close(sub.ready)
	}
	w.mu.Unlock()
	return sub
}

// unsubscribe leaves the watch; the last to leave stops it. Changes
// already queued for sub are dropped by the binding's loop.
func (s *ClusterSource) unsubscribe(sub *subscription) {
	sub.closed.Store(true)
	w := sub.w
	s.mu.Lock()
	defer s.mu.Unlock()
	w.mu.Lock()
	delete(w.subs, sub)
	empty := len(w.subs) == 0
	w.mu.Unlock()
	if empty && s.watches[w.key] == w {
		delete(s.watches, w.key)
		w.cancel()
	}
}

// wait waits for the subscription's initial objects.
func (sub *subscription) wait(ctx context.Context) ([]*Object, error) {
	select {
	case <-sub.ready:
		objs := sub.initial
		sub.initial = nil
		return objs, nil
	case err := <-sub.errc:
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run lists and watches until ctx is done: after a failure or the end of
// a watch the reflector lists again (the store reports what changed
// meanwhile), with backoff after failures.
func (w *sharedWatch) run(ctx context.Context) {
	s := w.src
	ri := s.dyn.Resource(w.key.gvr)
	var rc dynamic.ResourceInterface = ri
	if w.key.namespace != "" {
		rc = ri.Namespace(w.key.namespace)
	}
	labels, flds := w.key.labels, w.key.fields
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector, opts.FieldSelector = labels, flds
			ctx, cancel := context.WithTimeout(ctx, s.listTimeout())
			defer cancel()
			return rc.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector, opts.FieldSelector = labels, flds
			return rc.Watch(ctx, opts)
		},
	}
	// The reflector logs to the source's logger (its V levels become
	// slog's debug levels), not to klog's stderr.
	logger := logr.FromSlogHandler(s.logger().Handler())
	ctx = klog.NewContext(ctx, logger)
	r := cache.NewReflectorWithOptions(lw, &unstructured.Unstructured{}, w, cache.ReflectorOptions{
		Name: "strata kubernetes binding " + w.key.String(), TypeDescription: w.gvk.String(), Logger: &logger})
	lo, hi := s.retryBounds()
	delay := lo
	for {
		err := r.ListAndWatchWithContext(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			w.failed(err)
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				err = nil // the watch fell behind: list again, as usual
			} else {
				s.report(fmt.Errorf("watching %s: %w (retrying in %s)", w.key, err, delay))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		if err != nil {
			delay = min(2*delay, hi)
		} else {
			delay = lo
		}
	}
}

// has reports whether the watch knows the object with this ID.
func (w *sharedWatch) has(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.items[id]
	return ok
}

// failed tells the subscribers still waiting for their objects that the
// list failed.
func (w *sharedWatch) failed(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.synced {
		return
	}
	for sub := range w.subs {
		select {
		case sub.errc <- err:
		default:
		}
	}
}

func (w *sharedWatch) Add(obj any) error    { return w.upsert(obj) }
func (w *sharedWatch) Update(obj any) error { return w.upsert(obj) }
func (w *sharedWatch) Resync() error        { return nil }

func (w *sharedWatch) upsert(obj any) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("watching %s: got %T", w.key, obj)
	}
	o, err := w.object(u)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	id := o.ID()
	prev, had := w.items[id]
	ev := hook.Added
	if had {
		if prev.rv == u.GetResourceVersion() {
			return nil // seen: the bindings hold prev's bytes
		}
		ev = hook.Modified
	}
	w.items[id] = w.itemOf(o, u)
	w.pushLocked(Change{Event: ev, Object: o})
	return nil
}

func (w *sharedWatch) Delete(obj any) error {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("watching %s: got %T", w.key, obj)
	}
	o, err := w.object(u)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, had := w.items[o.ID()]; !had {
		return nil
	}
	delete(w.items, o.ID())
	w.pushLocked(Change{Event: hook.Deleted, Object: o})
	return nil
}

// Replace takes a full list: the first one gives the subscribers their
// objects; a later one (a relist) is compared with what was known, so
// that only objects added, changed (another resourceVersion) or gone
// make changes.
func (w *sharedWatch) Replace(list []any, _ string) error {
	next := make(map[string]*storedItem, len(list))
	objs := make([]*Object, 0, len(list))
	for _, it := range list {
		u, ok := it.(*unstructured.Unstructured)
		if !ok {
			return fmt.Errorf("watching %s: got %T", w.key, it)
		}
		o, err := w.object(u)
		if err != nil {
			return err
		}
		next[o.ID()] = w.itemOf(o, u)
		objs = append(objs, o)
	}
	sortObjects(objs)
	w.mu.Lock()
	defer w.mu.Unlock()
	prev := w.items
	for id, it := range next {
		if old, ok := prev[id]; ok && old.rv == it.rv {
			// Unchanged: keep the bytes the bindings hold, so that a
			// relist does not double what is kept.
			next[id] = old
		}
	}
	w.items = next
	if !w.synced {
		w.synced = true
		for sub := range w.subs {
			sub.initial = objs
			sub.live = true
			close(sub.ready)
		}
		return nil
	}
	gone := make([]string, 0)
	for id := range prev {
		if _, ok := next[id]; !ok {
			gone = append(gone, id)
		}
	}
	slices.Sort(gone)
	for _, id := range gone {
		w.pushLocked(Change{Event: hook.Deleted, Object: w.lastSeen(prev[id])})
	}
	for _, o := range objs {
		old, had := prev[o.ID()]
		switch {
		case !had:
			w.pushLocked(Change{Event: hook.Added, Object: o})
		case old.rv != next[o.ID()].rv:
			w.pushLocked(Change{Event: hook.Modified, Object: o})
		}
	}
	return nil
}

func (w *sharedWatch) pushLocked(c Change) {
	for sub := range w.subs {
		if sub.live {
			sub.bw.q.push(queued{sub: sub, change: c})
		}
	}
}

// object converts what the reflector got.
func (w *sharedWatch) object(u *unstructured.Unstructured) (*Object, error) {
	if u.GetAPIVersion() == "" {
		u.SetAPIVersion(w.gvk.GroupVersion().String())
	}
	if u.GetKind() == "" {
		u.SetKind(w.gvk.Kind)
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("watching %s: encoding %s: %w", w.key, u.GetName(), err)
	}
	return &Object{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), Value: u.Object, JSON: data}, nil
}

// itemOf is what the watch keeps of o: the JSON (the same bytes the
// bindings hold) only when shared.
func (w *sharedWatch) itemOf(o *Object, u *unstructured.Unstructured) *storedItem {
	it := &storedItem{namespace: o.Namespace, name: o.Name, rv: u.GetResourceVersion()}
	if w.keep {
		it.json = o.JSON
	}
	return it
}

// lastSeen is the object an item stands for: decoded from its JSON, or
// (a watch that keeps no objects) its identity alone.
func (w *sharedWatch) lastSeen(it *storedItem) *Object {
	if it.json != nil {
		if o, err := decodeObject(it.json); err == nil {
			return o
		}
	}
	return identityObject(w.gvk, it.namespace, it.name)
}

// objectsLocked returns the objects a shared watch keeps, sorted.
func (w *sharedWatch) objectsLocked() []*Object {
	objs := make([]*Object, 0, len(w.items))
	for _, it := range w.items {
		objs = append(objs, w.lastSeen(it))
	}
	sortObjects(objs)
	return objs
}

func sortObjects(objs []*Object) {
	slices.SortFunc(objs, func(a, b *Object) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

func decodeObject(data []byte) (*Object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	o := &Object{Value: v, JSON: data}
	o.APIVersion, _ = v["apiVersion"].(string)
	o.Kind, _ = v["kind"].(string)
	md, _ := v["metadata"].(map[string]any)
	o.Name, _ = md["name"].(string)
	o.Namespace, _ = md["namespace"].(string)
	return o, nil
}

// identityObject is an object known by its identity alone.
func identityObject(gvk schema.GroupVersionKind, namespace, name string) *Object {
	md := map[string]any{"name": name}
	if namespace != "" {
		md["namespace"] = namespace
	}
	v := map[string]any{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind, "metadata": md}
	data, _ := json.Marshal(v)
	return &Object{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: namespace, Name: name, Value: v, JSON: data}
}

// queued is a change waiting for its binding's loop.
type queued struct {
	sub    *subscription
	change Change
}

// changeQueue is a binding's FIFO of changes: watches push without
// waiting; the binding's loop takes them one by one, in order.
type changeQueue struct {
	mu    sync.Mutex
	items []queued
	wake  chan struct{}
}

func (q *changeQueue) push(it queued) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *changeQueue) pop(ctx context.Context) (queued, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			it := q.items[0]
			q.items[0] = queued{}
			q.items = q.items[1:]
			if len(q.items) == 0 {
				q.items = nil
			}
			q.mu.Unlock()
			return it, true
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-ctx.Done():
			return queued{}, false
		}
	}
}

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
