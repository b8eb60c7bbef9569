package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// The JSON is written by hand, keys in the order encoding/json sorts a
// map's keys (which is what shell-operator's hooks get), the objects and
// filter results copied as they are: they were encoded once, when the
// objects were read.

func encodeContexts(buf []byte, version string, ctxs []BindingContext) ([]byte, error) {
	switch version {
	case "", "v1", "v0":
	default:
		return nil, fmt.Errorf("binding contexts: unknown configVersion %q", version)
	}
	buf = append(buf, '[')
	for i := range ctxs {
		if i > 0 {
			buf = append(buf, ',')
		}
		var err error
		if version == "v0" {
			buf = appendV0(buf, &ctxs[i])
		} else {
			buf, err = appendV1(buf, &ctxs[i])
		}
		if err != nil {
			return nil, err
		}
	}
	return append(buf, ']'), nil
}

// field writes "name": with the comma before it when needed.
type objWriter struct {
	buf   []byte
	first bool
}

func (w *objWriter) key(k string) {
	if !w.first {
		w.buf = append(w.buf, ',')
	}
	w.first = false
	w.buf = strconv.AppendQuote(w.buf, k) // keys are ASCII constants
	w.buf = append(w.buf, ':')
}

func (w *objWriter) str(k, v string) {
	w.key(k)
	w.buf = appendString(w.buf, v)
}

func (w *objWriter) raw(k string, v json.RawMessage) error {
	w.key(k)
	if len(v) == 0 {
		w.buf = append(w.buf, "null"...)
		return nil
	}
	if !json.Valid(v) {
		return fmt.Errorf("binding context field %s is not valid JSON", k)
	}
	w.buf = append(w.buf, v...)
	return nil
}

// appendString appends s as a JSON string, as encoding/json writes it.
func appendString(buf []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(buf, b...)
}

func appendV1(buf []byte, c *BindingContext) ([]byte, error) {
	w := &objWriter{buf: append(buf, '{'), first: true}
	// Keys in sorted order: binding, filterResult, groupName, object,
	// objects, snapshots, type, watchEvent.
	w.str("binding", c.Binding)
	if c.BindingType == OnStartup {
		return append(w.buf, '}'), nil
	}
	if c.BindingType == KubernetesValidating || c.BindingType == KubernetesConversion {
		return appendWebhook(w, c)
	}
	group := c.Group != ""
	kube := !group && c.BindingType == Kubernetes && c.Type != ""
	event := kube && c.Type == TypeEvent
	if event {
		if len(c.Objects) > 0 {
			o := c.Objects[0]
			if o.FilterResult != nil {
				if err := w.raw("filterResult", o.FilterResult); err != nil {
					return nil, err
				}
			}
		} else if c.Filtered {
			w.str("filterResult", "")
		}
	}
	if group {
		w.str("groupName", c.Group)
	}
	if event {
		if len(c.Objects) > 0 {
			if o := c.Objects[0]; o.Object != nil {
				if err := w.raw("object", o.Object); err != nil {
					return nil, err
				}
			}
		} else {
			w.key("object")
			w.buf = append(w.buf, "null"...)
		}
	}
	if kube && c.Type == TypeSynchronization {
		w.key("objects")
		var err error
		if w.buf, err = appendObjects(w.buf, c.Objects); err != nil {
			return nil, err
		}
	}
	if c.Snapshots != nil {
		if err := appendSnapshots(w, c.Snapshots); err != nil {
			return nil, err
		}
	}
	switch {
	case group:
		w.str("type", string(TypeGroup))
	case c.BindingType == Schedule:
		w.str("type", string(TypeSchedule))
	case kube:
		w.str("type", string(c.Type))
		if c.WatchEvent != "" {
			w.str("watchEvent", string(c.WatchEvent))
		}
	}
	return append(w.buf, '}'), nil
}

func appendObjects(buf []byte, objs []ObjectResult) ([]byte, error) {
	buf = append(buf, '[')
	for i, o := range objs {
		if i > 0 {
			buf = append(buf, ',')
		}
		w := &objWriter{buf: append(buf, '{'), first: true}
		if o.FilterResult != nil {
			if err := w.raw("filterResult", o.FilterResult); err != nil {
				return nil, err
			}
		}
		if o.Object != nil {
			if err := w.raw("object", o.Object); err != nil {
				return nil, err
			}
		}
		buf = append(w.buf, '}')
	}
	return append(buf, ']'), nil
}

// appendV0 writes the legacy shape: binding, and for a kubernetes event
// resourceEvent (add, update, delete) with the object's namespace, kind
// and name.
func appendV0(buf []byte, c *BindingContext) []byte {
	w := &objWriter{buf: append(buf, '{'), first: true}
	w.str("binding", c.Binding)
	if c.BindingType != Kubernetes {
		return append(w.buf, '}')
	}
	ev := ""
	switch c.WatchEvent {
	case Added:
		ev = "add"
	case Modified:
		ev = "update"
	case Deleted:
		ev = "delete"
	}
	var meta struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if len(c.Objects) > 0 && c.Objects[0].Object != nil {
		_ = json.Unmarshal(c.Objects[0].Object, &meta)
		// Keys sorted: binding, resourceEvent, resourceKind, resourceName, resourceNamespace.
		w.str("resourceEvent", ev)
		w.str("resourceKind", meta.Kind)
		w.str("resourceName", meta.Metadata.Name)
		w.str("resourceNamespace", meta.Metadata.Namespace)
		return append(w.buf, '}')
	}
	w.str("resourceEvent", ev)
	return append(w.buf, '}')
}

// maxDecodedContexts bounds DecodeContexts: its input is untrusted.
const maxDecodedContexts = 100_000

func decodeContexts(data []byte) ([]BindingContext, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw []map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("binding contexts: %s", jsonErr(data, err, "a JSON list of binding contexts"))
	}
	if dec.More() {
		return nil, fmt.Errorf("binding contexts: more data after the list at offset %d", dec.InputOffset())
	}
	if len(raw) > maxDecodedContexts {
		return nil, fmt.Errorf("binding contexts: %d contexts, more than %d", len(raw), maxDecodedContexts)
	}
	out := make([]BindingContext, 0, len(raw))
	for i, m := range raw {
		c, err := decodeContext(m)
		if err != nil {
			return nil, fmt.Errorf("binding context %d: %w", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func decodeString(m map[string]json.RawMessage, k string) (string, bool, error) {
	v, ok := m[k]
	if !ok {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", true, fmt.Errorf("%s must be a string", k)
	}
	return s, true, nil
}

func decodeContext(m map[string]json.RawMessage) (BindingContext, error) {
	var c BindingContext
	for k := range m {
		switch k {
		case "binding", "type", "watchEvent", "object", "filterResult", "objects", "snapshots", "groupName", "review", "fromVersion", "toVersion":
		default:
			return c, fmt.Errorf("unknown field %q", k)
		}
	}
	binding, ok, err := decodeString(m, "binding")
	if err != nil {
		return c, err
	}
	if !ok {
		return c, fmt.Errorf("no binding field")
	}
	c.Binding = binding
	typ, _, err := decodeString(m, "type")
	if err != nil {
		return c, err
	}
	group, hasGroup, err := decodeString(m, "groupName")
	if err != nil {
		return c, err
	}
	we, hasWE, err := decodeString(m, "watchEvent")
	if err != nil {
		return c, err
	}
	switch ContextType(typ) {
	case "":
		c.BindingType = BindingType(binding)
		if !c.BindingType.Lifecycle() {
			return c, fmt.Errorf("a context without type is a lifecycle binding's, and %q is not one", binding)
		}
	case TypeSchedule:
		c.BindingType, c.Type = Schedule, TypeSchedule
	case TypeGroup:
		if !hasGroup || group == "" {
			return c, fmt.Errorf("a Group context needs groupName")
		}
		c.Group = group
		c.BindingType = Kubernetes // or Schedule: the JSON does not say
	case TypeSynchronization, TypeEvent:
		c.BindingType, c.Type = Kubernetes, ContextType(typ)
	case TypeValidating, TypeConversion:
		if err := decodeWebhookContext(&c, m); err != nil {
			return c, err
		}
	default:
		return c, fmt.Errorf("type %q is not Synchronization, Event, Schedule, Group, Validating or Conversion", typ)
	}
	if hasGroup && ContextType(typ) != TypeGroup {
		return c, fmt.Errorf("groupName belongs to a context of type Group only")
	}
	if c.Review == nil {
		for _, k := range []string{"review", "fromVersion", "toVersion"} {
			if _, ok := m[k]; ok {
				return c, fmt.Errorf("%s belongs to a Validating or Conversion context only", k)
			}
		}
	}
	if hasWE {
		if c.Type != TypeEvent {
			return c, fmt.Errorf("watchEvent belongs to an Event context only")
		}
		switch WatchEvent(we) {
		case Added, Modified, Deleted:
			c.WatchEvent = WatchEvent(we)
		default:
			return c, fmt.Errorf("watchEvent %q is not Added, Modified or Deleted", we)
		}
	}
	_, hasObj := m["object"]
	_, hasFilter := m["filterResult"]
	if (hasObj || hasFilter) && c.Type != TypeEvent {
		return c, fmt.Errorf("object and filterResult belong to an Event context only")
	}
	if c.Type == TypeEvent {
		var o ObjectResult
		if v, ok := m["object"]; ok && string(v) != "null" {
			o.Object = v
		}
		if hasFilter {
			o.FilterResult = m["filterResult"]
		}
		if string(m["filterResult"]) == `""` && o.Object == nil {
			c.Filtered = true
		} else if o.Object != nil || o.FilterResult != nil {
			c.Objects = []ObjectResult{o}
			c.Filtered = o.FilterResult != nil
		}
	}
	if v, ok := m["objects"]; ok {
		if c.Type != TypeSynchronization {
			return c, fmt.Errorf("objects belongs to a Synchronization context only")
		}
		objs, err := decodeObjects(v)
		if err != nil {
			return c, fmt.Errorf("objects: %w", err)
		}
		c.Objects = objs
	} else if c.Type == TypeSynchronization {
		return c, fmt.Errorf("a Synchronization context needs objects")
	}
	if v, ok := m["snapshots"]; ok {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(v, &raw); err != nil || raw == nil {
			return c, fmt.Errorf("snapshots must be a map of binding names to lists of objects")
		}
		c.Snapshots = make(map[string][]ObjectResult, len(raw))
		for n, rv := range raw {
			objs, err := decodeObjects(rv)
			if err != nil {
				return c, fmt.Errorf("snapshots.%s: %w", n, err)
			}
			c.Snapshots[n] = objs
		}
	}
	return c, nil
}

func decodeObjects(data json.RawMessage) ([]ObjectResult, error) {
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || (raw == nil && string(data) != "[]") {
		return nil, fmt.Errorf("must be a list of {object, filterResult}")
	}
	out := make([]ObjectResult, 0, len(raw))
	for i, m := range raw {
		var o ObjectResult
		for k, v := range m {
			switch k {
			case "object":
				o.Object = v
			case "filterResult":
				o.FilterResult = v
			default:
				return nil, fmt.Errorf("item %d: unknown field %q", i, k)
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// jsonErr describes a JSON syntax error with its line.
func jsonErr(data []byte, err error, want string) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case asErr(err, &se):
		return fmt.Sprintf("line %d: %v; the file must hold %s", lineAt(data, se.Offset), se, want)
	case asErr(err, &te):
		return fmt.Sprintf("line %d: found a JSON %s; the file must hold %s", lineAt(data, te.Offset), te.Value, want)
	}
	return err.Error() + "; the file must hold " + want
}

// lineAt returns the 1-based line of byte offset off.
func lineAt(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

func asErr[T error](err error, target *T) bool { return errors.As(err, target) }
