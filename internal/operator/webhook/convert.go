package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/strata-dev/strata/internal/operator/hook"
)

// conversionTimeout bounds one ConversionReview: the API server waits 30 s
// for a conversion webhook.
const conversionTimeout = 30 * time.Second

// A ConversionAnswer is what a hook writes to $CONVERSION_RESPONSE_PATH.
type ConversionAnswer struct {
	ConvertedObjects []json.RawMessage `json:"convertedObjects"`
	FailedMessage    string            `json:"failedMessage"`
}

// ParseConversionAnswer reads a hook's $CONVERSION_RESPONSE_PATH:
// {"convertedObjects": [...]} or {"failedMessage": "..."}.
func ParseConversionAnswer(data []byte) (*ConversionAnswer, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the hook wrote no answer to $CONVERSION_RESPONSE_PATH; write {\"convertedObjects\": [...]} or {\"failedMessage\": \"...\"}")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("$CONVERSION_RESPONSE_PATH is not a JSON object (%v); write {\"convertedObjects\": [...]} or {\"failedMessage\": \"...\"}", err)
	}
	for k := range raw {
		if k != "convertedObjects" && k != "failedMessage" {
			return nil, fmt.Errorf("$CONVERSION_RESPONSE_PATH has an unknown field %q; the fields are convertedObjects and failedMessage", k)
		}
	}
	var a ConversionAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("$CONVERSION_RESPONSE_PATH: %v; convertedObjects is a list of objects, failedMessage a string", err)
	}
	if a.FailedMessage == "" && a.ConvertedObjects == nil {
		return nil, errors.New("$CONVERSION_RESPONSE_PATH has neither convertedObjects nor failedMessage")
	}
	for i, o := range a.ConvertedObjects {
		if t := bytes.TrimSpace(o); len(t) == 0 || t[0] != '{' {
			return nil, fmt.Errorf("$CONVERSION_RESPONSE_PATH: convertedObjects[%d] is not an object", i)
		}
	}
	a.FailedMessage = truncate(a.FailedMessage)
	return &a, nil
}

// VersionsMatch reports whether two versions of a conversion rule name the
// same version: equal, or one without a group (v1) and the other's version
// part (stable.example.com/v1). Different groups never match.
func VersionsMatch(a, b string) bool {
	if a == b {
		return true
	}
	ia, ib := strings.IndexByte(a, '/'), strings.IndexByte(b, '/')
	switch {
	case ia < 0 && ib >= 0:
		return a == b[ib+1:]
	case ia >= 0 && ib < 0:
		return a[ia+1:] == b
	}
	return false
}

// A Step is one conversion of a chain: a hook's binding, its rule, and
// the apiVersion the objects have after it.
type Step struct {
	Conversion
	Rule hook.ConversionRule
	To   string
}

// Chain returns the shortest sequence of conversions that takes objects of
// apiVersion from to apiVersion to, using bindings (all of one CRD), in
// the order the hooks and rules are written; nil when none does. A rule's
// version without a group keeps the group of the objects.
func Chain(bindings []Conversion, from, to string) []Step {
	type node struct {
		version string
		path    []Step
	}
	seen := map[string]bool{from: true}
	queue := []node{{version: from}}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, b := range bindings {
			for _, r := range b.Binding.Conversions {
				if !VersionsMatch(r.FromVersion, n.version) {
					continue
				}
				next := r.ToVersion
				if !strings.Contains(next, "/") {
					if i := strings.IndexByte(n.version, '/'); i >= 0 {
						next = n.version[:i+1] + next
					}
				}
				if seen[next] {
					continue
				}
				seen[next] = true
				path := append(slices.Clip(n.path), Step{Conversion: b, Rule: r, To: next})
				if next == to {
					return path
				}
				queue = append(queue, node{version: next, path: path})
			}
		}
	}
	return nil
}

type conversionReview struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    *struct {
		UID               string            `json:"uid"`
		DesiredAPIVersion string            `json:"desiredAPIVersion"`
		Objects           []json.RawMessage `json:"objects"`
	} `json:"request"`
}

type conversionResponse struct {
	UID              string            `json:"uid"`
	ConvertedObjects []json.RawMessage `json:"convertedObjects"`
	Result           status            `json:"result"`
}

func apiVersionOf(obj json.RawMessage) string {
	var tm struct {
		APIVersion string `json:"apiVersion"`
	}
	_ = json.Unmarshal(obj, &tm)
	return tm.APIVersion
}

// serveConversion answers one ConversionReview for the CRD of the path.
func (m *Manager) serveConversion(w http.ResponseWriter, r *http.Request) {
	body, ok := readReview(w, r)
	if !ok {
		return
	}
	var cr conversionReview
	if err := json.Unmarshal(body, &cr); err != nil || cr.Request == nil {
		http.Error(w, "the body is not a ConversionReview with a request", http.StatusBadRequest)
		return
	}
	crd := strings.TrimPrefix(r.URL.Path, "/")
	start := time.Now()
	ctx, cancel := context.WithTimeout(r.Context(), conversionTimeout)
	defer cancel()
	objs, err := m.convert(ctx, crd, cr.APIVersion, cr.Request.UID, cr.Request.DesiredAPIVersion, cr.Request.Objects)
	resp := conversionResponse{UID: cr.Request.UID, ConvertedObjects: objs, Result: status{Status: "Success"}}
	outcome := "converted"
	if err != nil {
		outcome = "error"
		resp.ConvertedObjects = nil
		resp.Result = status{Status: "Failure", Message: truncate(oneLine(err.Error()))}
		m.log.Error("conversion webhook failed", "crd", crd, "uid", cr.Request.UID, "desiredAPIVersion", cr.Request.DesiredAPIVersion, "error", err)
	}
	if resp.ConvertedObjects == nil {
		resp.ConvertedObjects = []json.RawMessage{}
	}
	m.observe("conversion", crd, outcome, time.Since(start))
	m.log.Info("conversion review", "crd", crd, "uid", cr.Request.UID, "objects", len(cr.Request.Objects),
		"desiredAPIVersion", cr.Request.DesiredAPIVersion, "outcome", outcome, "duration", time.Since(start).Round(time.Millisecond).String())
	apiVersion := cr.APIVersion
	if apiVersion == "" {
		apiVersion = "apiextensions.k8s.io/v1"
	}
	writeJSON(w, map[string]any{"apiVersion": apiVersion, "kind": "ConversionReview", "response": resp})
}

// convert converts objs to desired, each group of objects of one
// apiVersion through its chain of hooks; the objects keep their order.
func (m *Manager) convert(ctx context.Context, crd, reviewAPIVersion, uid, desired string, objs []json.RawMessage) ([]json.RawMessage, error) {
	bindings := m.current().conversion[crd]
	if len(bindings) == 0 {
		return nil, fmt.Errorf("strata operator: no hook converts %s now; its conversion is being updated", crd)
	}
	out := slices.Clone(objs)
	var order []string
	groups := map[string][]int{}
	for i, o := range objs {
		v := apiVersionOf(o)
		if v == desired {
			continue
		}
		if _, ok := groups[v]; !ok {
			order = append(order, v)
		}
		groups[v] = append(groups[v], i)
	}
	if reviewAPIVersion == "" {
		reviewAPIVersion = "apiextensions.k8s.io/v1"
	}
	for _, from := range order {
		idx := groups[from]
		steps := Chain(bindings, from, desired)
		if steps == nil {
			return nil, fmt.Errorf("no hook converts %s from %s to %s; the hooks' conversions are %s", crd, from, desired, describeRules(bindings))
		}
		cur := make([]json.RawMessage, len(idx))
		for j, i := range idx {
			cur[j] = objs[i]
		}
		for _, s := range steps {
			review, err := json.Marshal(map[string]any{
				"apiVersion": reviewAPIVersion,
				"kind":       "ConversionReview",
				"request":    map[string]any{"uid": uid, "desiredAPIVersion": s.To, "objects": cur},
			})
			if err != nil {
				return nil, err
			}
			bc := hook.BindingContext{BindingType: hook.KubernetesConversion, Binding: s.Binding.Name, Type: hook.TypeConversion, Group: s.Binding.Group,
				FromVersion: s.Rule.FromVersion, ToVersion: s.Rule.ToVersion, Review: review}
			data, err := m.runner.RunWebhook(ctx, s.Hook, bc)
			if err != nil {
				return nil, fmt.Errorf("%s (binding %s) failed to convert %s to %s: %w", s.Hook, s.Binding.Name, crd, s.To, err)
			}
			a, err := ParseConversionAnswer(data)
			if err != nil {
				return nil, fmt.Errorf("%s (binding %s): %w", s.Hook, s.Binding.Name, err)
			}
			if a.FailedMessage != "" {
				return nil, errors.New(a.FailedMessage)
			}
			if len(a.ConvertedObjects) != len(cur) {
				return nil, fmt.Errorf("%s (binding %s) returned %d objects for %d; convertedObjects must hold every object of the request, in order", s.Hook, s.Binding.Name, len(a.ConvertedObjects), len(cur))
			}
			for j, o := range a.ConvertedObjects {
				if v := apiVersionOf(o); v != s.To {
					return nil, fmt.Errorf("%s (binding %s) returned convertedObjects[%d] with apiVersion %q; the rule %s -> %s converts to %s", s.Hook, s.Binding.Name, j, v, s.Rule.FromVersion, s.Rule.ToVersion, s.To)
				}
			}
			cur = a.ConvertedObjects
		}
		for j, i := range idx {
			out[i] = cur[j]
		}
	}
	return out, nil
}

func describeRules(bs []Conversion) string {
	var parts []string
	for _, b := range bs {
		for _, r := range b.Binding.Conversions {
			parts = append(parts, r.FromVersion+" -> "+r.ToVersion+" ("+b.Hook+")")
		}
	}
	return strings.Join(parts, ", ")
}
