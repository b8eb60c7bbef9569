package kubebind

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/itchyny/gojq"

	"github.com/strata-dev/strata/internal/operator/hook"
)

// Bounds of one jqFilter run: the program is the hook's, the objects
// untrusted.
const (
	filterTimeout    = 10 * time.Second
	maxFilterResults = 10_000
	maxFilterBytes   = 16 << 20
)

// entry is one object of a binding's snapshot.
type entry struct {
	namespace, name string
	result          hook.ObjectResult
	sum             [sha256.Size]byte // of the filter result, or of the object without a filter
}

type monitorState struct {
	mu       sync.Mutex
	entries  map[string]*entry  // the snapshot, by object ID
	all      map[string]*Object // every object of the kind, selected or not, by ID
	nsLabels map[string]map[string]string
	err      error
}

func newMonitorState() *monitorState {
	return &monitorState{entries: map[string]*entry{}, all: map[string]*Object{}, nsLabels: map[string]map[string]string{}}
}

func (s *monitorState) snapshot() []hook.ObjectResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sortedLocked()
}

func (s *monitorState) sortedLocked() []hook.ObjectResult {
	es := make([]*entry, 0, len(s.entries))
	for _, e := range s.entries {
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b *entry) int {
		if c := strings.Compare(a.namespace, b.namespace); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]hook.ObjectResult, len(es))
	for i, e := range es {
		out[i] = e.result
	}
	return out
}

func (s *monitorState) lastErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (m *Monitor) start(ctx context.Context, emit func(Event)) (hook.BindingContext, error) {
	b := m.binding
	st := m.state
	if !m.started.CompareAndSwap(false, true) {
		return hook.BindingContext{}, fmt.Errorf("binding %s: the monitor was started before; make a new one with NewMonitor or NewSet", b.Name)
	}
	// Held until the initial objects are in: changes the source sends
	// meanwhile wait for it.
	st.mu.Lock()
	locked := true
	defer func() {
		if locked {
			st.mu.Unlock()
		}
	}()
	bs, sourceSelects := m.source.(BindingSource)
	m.sourceSelects = sourceSelects
	if ns := b.Namespace; ns != nil && ns.LabelSelector != nil && !sourceSelects {
		nss, err := m.source.Watch(ctx, "v1", "Namespace", func(c Change) {
			st.mu.Lock()
			var evs []Event
			m.namespaceChangedLocked(c, func(e Event) { evs = append(evs, e) })
			st.mu.Unlock()
			send(emit, evs)
		})
		if err != nil {
			return hook.BindingContext{}, fmt.Errorf("binding %s: watching namespaces: %w", b.Name, err)
		}
		for _, o := range nss {
			st.nsLabels[o.Name] = labelsOf(o)
		}
	}
	changed := func(c Change) {
		start := time.Now()
		st.mu.Lock()
		var evs []Event
		m.changeLocked(c, func(e Event) { evs = append(evs, e) })
		st.mu.Unlock()
		if m.Timings != nil {
			m.Timings.Event(b, time.Since(start))
		}
		send(emit, evs)
	}
	var objs []*Object
	var err error
	if sourceSelects {
		objs, err = bs.WatchBinding(ctx, b, changed)
	} else {
		objs, err = m.source.Watch(ctx, b.APIVersion, b.Kind, changed)
	}
	if err != nil {
		return hook.BindingContext{}, fmt.Errorf("binding %s: watching %s: %w", b.Name, kindName(b.APIVersion, b.Kind), err)
	}
	for _, o := range objs {
		if !sourceSelects {
			st.all[o.ID()] = o
		}
		if !m.selected(o) {
			continue
		}
		e, err := m.entryOf(o)
		if err != nil {
			return hook.BindingContext{}, err
		}
		st.entries[o.ID()] = e
	}
	sync := hook.BindingContext{BindingType: hook.Kubernetes, Binding: b.Name, Type: hook.TypeSynchronization,
		Objects: st.sortedLocked(), Group: b.Group, Filtered: b.JqFilter != ""}
	locked = false
	st.mu.Unlock()
	return sync, nil
}

// send passes events to emit, outside the monitor's lock: emit may
// block (a full queue) while a run reads the snapshot.
func send(emit func(Event), evs []Event) {
	if emit == nil {
		return
	}
	for _, e := range evs {
		emit(e)
	}
}

func kindName(apiVersion, kind string) string {
	if apiVersion == "" {
		return kind
	}
	return apiVersion + " " + kind
}

// changeLocked applies one change of the watched kind; st.mu is held.
func (m *Monitor) changeLocked(c Change, emit func(Event)) {
	if !m.sourceSelects {
		id := c.Object.ID()
		if c.Event == hook.Deleted {
			delete(m.state.all, id)
		} else {
			m.state.all[id] = c.Object
		}
	}
	m.applyLocked(c.Event, c.Object, emit)
}

// applyLocked updates the snapshot for an object that was added, changed
// or deleted (or entered or left the selection) and emits the event the
// binding asks for.
func (m *Monitor) applyLocked(ev hook.WatchEvent, o *Object, emit func(Event)) {
	st := m.state
	id := o.ID()
	old, had := st.entries[id]
	if ev != hook.Deleted && !m.selected(o) {
		if !had {
			return
		}
		ev = hook.Deleted // it left the selection
	}
	var e *entry
	if ev == hook.Deleted {
		if !had {
			return
		}
		delete(st.entries, id)
		e = old
	} else {
		var err error
		e, err = m.entryOf(o)
		if err != nil {
			// As shell-operator: the change is dropped, the snapshot kept.
			st.err = err
			return
		}
		st.entries[id] = e
		if had && old.sum == e.sum {
			return // the filter result (or object) did not change
		}
		if had {
			ev = hook.Modified
		} else {
			ev = hook.Added
		}
	}
	if !m.binding.RunsOn(ev) || emit == nil {
		return
	}
	b := m.binding
	emit(Event{Binding: b, Context: hook.BindingContext{BindingType: hook.Kubernetes, Binding: b.Name, Type: hook.TypeEvent,
		WatchEvent: ev, Objects: []hook.ObjectResult{e.result}, Group: b.Group, Filtered: b.JqFilter != ""}})
}

// namespaceChangedLocked re-selects the objects of a namespace whose
// labels changed; st.mu is held.
func (m *Monitor) namespaceChangedLocked(c Change, emit func(Event)) {
	st := m.state
	ns := c.Object.Name
	if c.Event == hook.Deleted {
		delete(st.nsLabels, ns)
	} else {
		st.nsLabels[ns] = labelsOf(c.Object)
	}
	ids := make([]string, 0)
	for id, o := range st.all {
		if o.Namespace == ns {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		m.applyLocked(hook.Modified, st.all[id], emit)
	}
}

// selected reports whether o matches the binding's selectors; st.mu is
// held (namespace labels). A BindingSource selected o already.
func (m *Monitor) selected(o *Object) bool {
	if m.sourceSelects {
		return true
	}
	b := m.binding
	if b.NameSelector != nil && !slices.Contains(b.NameSelector, o.Name) {
		return false
	}
	if b.LabelSelector != nil && !b.LabelSelector.Matches(labelsOf(o)) {
		return false
	}
	for _, r := range b.FieldSelector {
		if !r.Matches(fieldOf(o.Value, r.Field)) {
			return false
		}
	}
	if ns := b.Namespace; ns != nil {
		if o.Namespace == "" {
			return false
		}
		if ns.NameSelector != nil && !slices.Contains(ns.NameSelector, o.Namespace) {
			return false
		}
		if ns.LabelSelector != nil {
			labels, ok := m.state.nsLabels[o.Namespace]
			if !ok || !ns.LabelSelector.Matches(labels) {
				return false
			}
		}
	}
	return true
}

// labelsOf returns metadata.labels with string values.
func labelsOf(o *Object) map[string]string {
	meta, _ := o.Value["metadata"].(map[string]any)
	raw, _ := meta["labels"].(map[string]any)
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// fieldOf reads a dotted field path as the API server compares it: a
// string, a number or boolean as text, "" when absent.
func fieldOf(tree map[string]any, path string) string {
	var v any = tree
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[k]
	}
	switch v := v.(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case json.Number:
		return v.String()
	}
	return ""
}

// entryOf applies the binding's filter to o.
func (m *Monitor) entryOf(o *Object) (*entry, error) {
	b := m.binding
	e := &entry{namespace: o.Namespace, name: o.Name}
	if b.KeepFullObjectsInMemory {
		e.result.Object = o.JSON
	}
	code := b.Filter()
	if code == nil {
		e.sum = sha256.Sum256(o.JSON)
		return e, nil
	}
	start := time.Now()
	res, err := applyFilter(code, o.JSON, filterTimeout)
	if m.Timings != nil {
		m.Timings.Filter(b, time.Since(start))
	}
	if err != nil {
		return nil, fmt.Errorf("binding %s: jqFilter %q on %s %s: %w", b.Name, b.JqFilter, o.Kind, o.ID(), err)
	}
	e.result.FilterResult = res
	e.sum = sha256.Sum256(res)
	return e, nil
}

// applyFilter runs code on the object and returns its output as JSON:
// null for no output, the value for one, a list for several (as
// shell-operator).
func applyFilter(code *gojq.Code, obj json.RawMessage, timeout time.Duration) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	var in any
	if err := dec.Decode(&in); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	iter := code.RunWithContext(ctx, in)
	var results []any
	for {
		v, ok := iter.Next()
		if !ok {
			break
		}
		if err, ok := v.(error); ok {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				break
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("ran longer than %s", timeout)
			}
			return nil, err
		}
		if len(results) >= maxFilterResults {
			return nil, fmt.Errorf("gave more than %d results", maxFilterResults)
		}
		results = append(results, v)
	}
	var out []byte
	var err error
	switch len(results) {
	case 0:
		return json.RawMessage("null"), nil
	case 1:
		out, err = gojq.Marshal(results[0])
	default:
		out, err = gojq.Marshal(results)
	}
	if err != nil {
		return nil, err
	}
	if len(out) > maxFilterBytes {
		return nil, fmt.Errorf("result is larger than %d bytes", maxFilterBytes)
	}
	return out, nil
}

func (s *Set) start(ctx context.Context, emit func(Event)) ([]hook.BindingContext, error) {
	out := make([]hook.BindingContext, 0, len(s.monitors))
	for _, m := range s.monitors {
		c, err := m.Start(ctx, emit)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func (s *Set) fill(ctxs []hook.BindingContext) []hook.BindingContext {
	cache := map[string][]hook.ObjectResult{}
	get := func(name string) []hook.ObjectResult {
		if objs, ok := cache[name]; ok {
			return objs
		}
		objs := []hook.ObjectResult{}
		if m := s.Monitor(name); m != nil {
			objs = m.Snapshot()
		}
		cache[name] = objs
		return objs
	}
	out := make([]hook.BindingContext, len(ctxs))
	for i, c := range ctxs {
		names := s.config.SnapshotsFor(c.BindingType, c.Binding)
		c.Snapshots = nil
		if names != nil {
			c.Snapshots = make(map[string][]hook.ObjectResult, len(names))
			for _, n := range names {
				c.Snapshots[n] = get(n)
			}
		}
		if c.BindingType == hook.Kubernetes && c.Type == hook.TypeSynchronization && c.Group == "" {
			c.Objects = get(c.Binding)
		}
		out[i] = c
	}
	return out
}
