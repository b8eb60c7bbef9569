package kubebind

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/strata-dev/strata/internal/operator/hook"
)

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
	o, u, err := w.decode(obj)
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
	o, _, err := w.decode(obj)
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
		o, u, err := w.decode(it)
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
// decode turns what the reflector hands over into the binding's Object.
func (w *sharedWatch) decode(obj any) (*Object, *unstructured.Unstructured, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, nil, fmt.Errorf("watching %s: got %T", w.key, obj)
	}
	o, err := w.object(u)
	return o, u, err
}

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
