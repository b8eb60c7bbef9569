package hook

import (
	"encoding/json"
	"slices"
)

// ContextType is the "type" field of a binding context.
type ContextType string

// The types of binding contexts. A lifecycle binding's context has none.
const (
	TypeSynchronization ContextType = "Synchronization"
	TypeEvent           ContextType = "Event"
	TypeSchedule        ContextType = "Schedule"
	TypeGroup           ContextType = "Group"
)

// An ObjectResult is one object of a kubernetes binding: the object and
// the result of the binding's jqFilter, both as JSON.
type ObjectResult struct {
	// Object is the object as JSON; nil when it is not kept
	// (keepFullObjectsInMemory: false), and the "object" field is left
	// out.
	Object json.RawMessage
	// FilterResult is the jqFilter's output as JSON; nil when the binding
	// has no jqFilter, and the "filterResult" field is left out.
	FilterResult json.RawMessage
}

// A BindingContext is one reason to run a hook: an element of the JSON
// list in $BINDING_CONTEXT_PATH.
type BindingContext struct {
	// BindingType is the type of the binding that made the context. It is
	// not written to JSON (the hook sees Binding and Type).
	BindingType BindingType
	// Binding is the binding's name (a lifecycle binding's is its type).
	Binding string
	// Type is Synchronization or Event for a kubernetes binding, Schedule
	// for a schedule, "" for a lifecycle binding. A context with a Group
	// is written with type Group.
	Type ContextType
	// WatchEvent is the change of an Event context.
	WatchEvent WatchEvent
	// Objects are the objects of a Synchronization context, or the one
	// object of an Event (written as "object" and "filterResult").
	Objects []ObjectResult
	// Group is the group of the binding, "" for none.
	Group string
	// Snapshots are the snapshots of the hook's kubernetes bindings the
	// context includes, by binding name. nil leaves the "snapshots" field
	// out; an empty, non-nil map writes "snapshots": {}.
	Snapshots map[string][]ObjectResult
	// Filtered marks a context of a binding with a jqFilter, so that an
	// Event without an object still gets "filterResult".
	Filtered bool
	// Review is the AdmissionReview or ConversionReview of a webhook run
	// (type Validating or Conversion), written as "review".
	Review json.RawMessage
	// FromVersion and ToVersion are the conversion rule of a Conversion
	// context.
	FromVersion, ToVersion string
}

// EncodeContexts returns the JSON list of binding contexts for a hook of
// configVersion version ("v1" or "v0"), the way shell-operator writes it.
func EncodeContexts(version string, ctxs []BindingContext) ([]byte, error) {
	return encodeContexts(nil, version, ctxs)
}

// AppendContexts appends the encoding of EncodeContexts to buf.
func AppendContexts(buf []byte, version string, ctxs []BindingContext) ([]byte, error) {
	return encodeContexts(buf, version, ctxs)
}

// DecodeContexts reads a v1 JSON list of binding contexts, as
// EncodeContexts writes it: for tests of hooks and tools that replay
// contexts. BindingType is inferred (Kubernetes for Synchronization and
// Event, Schedule for Schedule, else the Binding name if it is a
// lifecycle binding type).
func DecodeContexts(data []byte) ([]BindingContext, error) {
	return decodeContexts(data)
}

// QueuedBytes returns the bytes of the objects and filter results the
// Event contexts of ctxs hold: what a queued run keeps in memory beyond
// the snapshots (read when it runs).
func QueuedBytes(ctxs []BindingContext) int {
	n := 0
	for _, c := range ctxs {
		if c.Type != TypeEvent {
			continue
		}
		for _, o := range c.Objects {
			n += len(o.Object) + len(o.FilterResult)
		}
	}
	return n
}

// LastStates folds the Event contexts of one object into the last of them,
// the last state of each object, for a run whose contexts hold more than
// budget bytes (QueuedBytes); below it ctxs is returned as it is, every
// event with its object, as shell-operator gives them. The kept context is
// at the place of the object's last change; it is an Added event when the
// object was added in between and then modified (the hook has not seen
// it), else the last change's event. Contexts whose object is not kept
// (keepFullObjectsInMemory: false) cannot be told apart and stay.
func LastStates(ctxs []BindingContext, budget int) []BindingContext {
	if QueuedBytes(ctxs) <= budget {
		return ctxs
	}
	seen := map[string]int{} // binding and object -> index of its last context
	drop := make([]bool, len(ctxs))
	out := slices.Clone(ctxs)
	for i := len(out) - 1; i >= 0; i-- {
		c := out[i]
		if c.Type != TypeEvent || c.Group != "" || len(c.Objects) != 1 {
			continue
		}
		id, ok := objectID(c.Objects[0].Object)
		if !ok {
			continue
		}
		key := c.Binding + "\x00" + id
		j, dup := seen[key]
		if !dup {
			seen[key] = i
			continue
		}
		drop[i] = true
		if c.WatchEvent == Added && out[j].WatchEvent == Modified {
			out[j].WatchEvent = Added
		}
	}
	kept := out[:0]
	for i, c := range out {
		if !drop[i] {
			kept = append(kept, c)
		}
	}
	return slices.Clip(kept)
}

// objectID identifies a Kubernetes object written as JSON: its
// apiVersion, kind, namespace and name.
func objectID(obj json.RawMessage) (string, bool) {
	if obj == nil {
		return "", false
	}
	var o struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(obj, &o); err != nil || o.Metadata.Name == "" {
		return "", false
	}
	return o.APIVersion + "/" + o.Kind + "/" + o.Metadata.Namespace + "/" + o.Metadata.Name, true
}

// Combine merges the contexts of consecutive queued runs of one hook into
// the contexts of one run, in order, dropping a context that is followed
// by one of the same group (shell-operator's rule: a group's run needs
// only the latest snapshots).
func Combine(ctxs []BindingContext) []BindingContext {
	out := make([]BindingContext, 0, len(ctxs))
	for i, c := range ctxs {
		if c.Group != "" && i+1 < len(ctxs) && ctxs[i+1].Group == c.Group {
			continue
		}
		out = append(out, c)
	}
	return out
}
