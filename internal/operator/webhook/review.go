package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/strata-dev/strata/internal/operator/hook"
)

// MaxReviewBytes bounds a review's body: the API server's own limit on a
// request is 3 MiB of object, and a ConversionReview carries a list.
const MaxReviewBytes = 32 << 20

// maxResponseMessage bounds a message taken from a hook's answer: the API
// server puts it in an error a user reads.
const maxResponseMessage = 4096

// A Runner runs the hook called hookID with one binding context (the
// webhook package fills Binding, BindingType, Type, Review and the
// versions; the runner adds the snapshots) and returns what the hook
// wrote to its response file, nil when it wrote nothing. The error is the
// hook's failure.
type Runner interface {
	RunWebhook(ctx context.Context, hookID string, bc hook.BindingContext) ([]byte, error)
}

// Validating is a kubernetesValidating binding of a hook.
type Validating struct {
	Hook    string // the hook, as the Runner knows it
	Binding *hook.ValidatingBinding
}

// Conversion is a kubernetesCustomResourceConversion binding of a hook.
type Conversion struct {
	Hook    string
	Binding *hook.ConversionBinding
}

// Bindings are the webhook bindings served.
type Bindings struct {
	Validating []Validating
	Conversion []Conversion
}

// ValidatingPath is the URL path of the validating webhook called name
// (shell-operator's /<configuration id>/<webhook>, configuration "hooks").
func ValidatingPath(name string) string { return "/hooks/" + name }

// ConversionPath is the URL path of the conversion webhook of a CRD
// (shell-operator's /<crd name>).
func ConversionPath(crd string) string { return "/" + crd }

// A ValidatingAnswer is what a hook writes to $VALIDATING_RESPONSE_PATH.
type ValidatingAnswer struct {
	Allowed  bool     `json:"allowed"`
	Message  string   `json:"message,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// ParseValidatingAnswer reads a hook's $VALIDATING_RESPONSE_PATH: one JSON
// object with allowed (required), message and warnings.
func ParseValidatingAnswer(data []byte) (*ValidatingAnswer, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the hook wrote no answer to $VALIDATING_RESPONSE_PATH; write {\"allowed\": true} or {\"allowed\": false, \"message\": \"...\"}")
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("$VALIDATING_RESPONSE_PATH is not a JSON object (%v); write {\"allowed\": true} or {\"allowed\": false, \"message\": \"...\"}", err)
	}
	for k := range raw {
		switch k {
		case "allowed", "message", "warnings":
		case "patch":
			return nil, errors.New("$VALIDATING_RESPONSE_PATH has a patch: a validating webhook cannot change the object (strata has no mutating webhooks)")
		default:
			return nil, fmt.Errorf("$VALIDATING_RESPONSE_PATH has an unknown field %q; the fields are allowed, message and warnings", k)
		}
	}
	if _, ok := raw["allowed"]; !ok {
		return nil, errors.New("$VALIDATING_RESPONSE_PATH has no \"allowed\"; write {\"allowed\": true} or {\"allowed\": false, \"message\": \"...\"}")
	}
	var a ValidatingAnswer
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("$VALIDATING_RESPONSE_PATH: %v; allowed is true or false, message a string, warnings a list of strings", err)
	}
	a.Message = truncate(a.Message)
	return &a, nil
}

// admissionReview is the part of an AdmissionReview the server reads
// (admission.k8s.io/v1 or v1beta1).
type admissionReview struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    *struct {
		UID       string `json:"uid"`
		Kind      struct{ Group, Version, Kind string }
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		Operation string `json:"operation"`
	} `json:"request"`
}

type admissionResponse struct {
	UID      string   `json:"uid"`
	Allowed  bool     `json:"allowed"`
	Status   *status  `json:"status,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

type status struct {
	Status  string `json:"status,omitempty"`
	Code    int    `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// readReview reads a review's body, bounded, checking its content type.
func readReview(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Method != http.MethodPost {
		http.Error(w, "reviews are POSTed", http.StatusMethodNotAllowed)
		return nil, false
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "the review must be application/json", http.StatusUnsupportedMediaType)
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxReviewBytes))
	if err != nil {
		http.Error(w, "reading the review: "+err.Error(), http.StatusRequestEntityTooLarge)
		return nil, false
	}
	return body, true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// serveValidating answers one AdmissionReview for webhook wh.
func (m *Manager) serveValidating(w http.ResponseWriter, r *http.Request) {
	body, ok := readReview(w, r)
	if !ok {
		return
	}
	var ar admissionReview
	if err := json.Unmarshal(body, &ar); err != nil || ar.Request == nil {
		http.Error(w, "the body is not an AdmissionReview with a request", http.StatusBadRequest)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, ValidatingPath(""))
	v, found := m.current().validating[name]
	start := time.Now()
	var resp admissionResponse
	outcome := "allowed"
	if !found {
		// The configuration on the cluster names a webhook no hook has
		// now (a module disabled, a hook changed): refuse rather than
		// let anything through unchecked.
		resp = admissionResponse{Allowed: false, Status: &status{Code: http.StatusInternalServerError, Message: fmt.Sprintf("strata operator: no hook serves the validating webhook %q now; its configuration is being updated", name)}}
		outcome = "unknown"
	} else {
		resp, outcome = m.validate(r.Context(), v, body)
	}
	resp.UID = ar.Request.UID
	apiVersion := ar.APIVersion
	if apiVersion == "" {
		apiVersion = "admission.k8s.io/v1"
	}
	m.observe("validating", name, outcome, time.Since(start))
	m.log.Info("validating review", "webhook", name, "hook", v.Hook, "uid", ar.Request.UID, "operation", ar.Request.Operation,
		"kind", ar.Request.Kind.Kind, "namespace", ar.Request.Namespace, "name", ar.Request.Name,
		"outcome", outcome, "duration", time.Since(start).Round(time.Millisecond).String())
	writeJSON(w, map[string]any{"apiVersion": apiVersion, "kind": "AdmissionReview", "response": resp})
}

// validate runs v's hook on the review and turns its answer, or its
// failure, into the response: a failed hook or a bad answer refuses the
// request under failurePolicy Fail and lets it through, with a warning,
// under Ignore.
func (m *Manager) validate(ctx context.Context, v Validating, review []byte) (admissionResponse, string) {
	ctx, cancel := context.WithTimeout(ctx, runBudget(v.Binding.TimeoutSeconds))
	defer cancel()
	bc := hook.BindingContext{BindingType: hook.KubernetesValidating, Binding: v.Binding.Name, Type: hook.TypeValidating, Group: v.Binding.Group, Review: review}
	out, err := m.runner.RunWebhook(ctx, v.Hook, bc)
	var a *ValidatingAnswer
	if err == nil {
		a, err = ParseValidatingAnswer(out)
	}
	if err != nil {
		msg := fmt.Sprintf("%s (webhook %s): %s", v.Hook, v.Binding.Name, oneLine(err.Error()))
		m.log.Error("validating webhook hook failed", "webhook", v.Binding.Name, "hook", v.Hook, "failurePolicy", m.failurePolicy(v.Binding), "error", err)
		if m.failurePolicy(v.Binding) == "Ignore" {
			return admissionResponse{Allowed: true, Warnings: []string{truncate("allowed by failurePolicy Ignore: " + msg)}}, "error-ignored"
		}
		return admissionResponse{Allowed: false, Status: &status{Status: "Failure", Code: http.StatusInternalServerError, Message: truncate("the hook failed: " + msg)}}, "error"
	}
	if a.Allowed {
		return admissionResponse{Allowed: true, Warnings: a.Warnings}, "allowed"
	}
	return admissionResponse{Allowed: false, Warnings: a.Warnings, Status: &status{Status: "Failure", Code: http.StatusForbidden, Message: a.Message}}, "denied"
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// truncate bounds a message at maxResponseMessage bytes, not cutting a
// character in two.
func truncate(s string) string {
	if len(s) > maxResponseMessage {
		return strings.ToValidUTF8(s[:maxResponseMessage], "") + "…"
	}
	return s
}

// failurePolicy is b's failure policy, the settings' default when b gives
// none.
func (m *Manager) failurePolicy(b *hook.ValidatingBinding) string {
	switch {
	case b.FailurePolicy != "":
		return b.FailurePolicy
	case m.s.FailurePolicy != "":
		return m.s.FailurePolicy
	}
	return hook.DefaultFailurePolicy
}

// runBudget is how long a validating hook may run: the webhook's
// timeoutSeconds less half a second (a quarter of a 1 s timeout), so that
// the answer to a hook that hangs, with its clear message, reaches the API
// server before it gives up on the call.
func runBudget(timeoutSeconds int32) time.Duration {
	t := time.Duration(timeoutSeconds) * time.Second
	if t <= time.Second {
		return t * 3 / 4
	}
	return t - 500*time.Millisecond
}
