package controller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/layers"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
)

// Names, labels and keys of the outputs.
const (
	// ValuesSuffix and SecretsSuffix follow the App's name in the names of
	// the output ConfigMap and Secret.
	ValuesSuffix  = "-chart-values"
	SecretsSuffix = "-chart-secrets"
	// ValuesKey is the data key of both outputs.
	ValuesKey = "values"
	// LabelManagedBy is set on both outputs to ManagedBy.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "strata-layers-controller"
	// LabelApp is set on both outputs to the App's name, when the name is
	// a valid label value (63 characters at most).
	LabelApp = "layers.strata.dev/app"
)

// maxOutputBytes bounds an output's values: the API server stores objects
// of up to 1.5 MiB, and kubelets mount ConfigMaps and Secrets of up to 1 MiB.
const maxOutputBytes = 1 << 20

// DefaultMaxRenderCost bounds the memory the parsed layers of one App may
// take (layers.Renderer.MaxCost), about 131,000 values: with the default
// concurrency of 4, and the merged copies, a few hundred MiB at most of
// the Deployment's 512Mi, whatever the tenants write.
const DefaultMaxRenderCost = 32 << 20

// eventRecorder is the part of controller-runtime's recorder the
// reconciler uses.
type eventRecorder interface {
	Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// reconciler merges an App's values and writes them to its outputs.
type reconciler struct {
	client      client.Client // reads from the cache, writes to the API server
	scheme      *runtime.Scheme
	source      layers.Source
	recorder    eventRecorder
	metrics     *metrics
	skipCatalog bool
	namespaces  layers.Namespaces
	maxCost     int64 // layers.Renderer.MaxCost
	now         func() time.Time
}

var _ reconcile.Reconciler = (*reconciler)(nil)

// outputError is a failure to write an output.
type outputError struct {
	reason    string
	transient bool
	err       error
}

func (e *outputError) Error() string { return e.err.Error() }
func (e *outputError) Unwrap() error { return e.err }

// Reconcile implements reconcile.Reconciler.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res reconcile.Result, err error) {
	result := resultUnchanged
	defer func() { r.metrics.reconciles.WithLabelValues(result).Inc() }()

	var app v1alpha1.App
	if err := r.client.Get(ctx, req.NamespacedName, &app); err != nil {
		if apierrors.IsNotFound(err) {
			r.metrics.forget(req.Namespace, req.Name)
			return reconcile.Result{}, nil
		}
		result = resultRetry
		return reconcile.Result{}, fmt.Errorf("reading App %s: %w", req, err)
	}
	if !app.DeletionTimestamp.IsZero() {
		// The outputs go with the App: the garbage collector deletes them.
		return reconcile.Result{}, nil
	}
	logger := log.FromContext(ctx)

	start := time.Now()
	rendered, renderErr := (&layers.Renderer{Source: r.source, SkipCatalog: r.skipCatalog, Namespaces: r.namespaces,
		MaxCost: r.maxCost}).Render(ctx, &app, nil)
	r.metrics.observeRender(time.Since(start), renderErr)
	if renderErr != nil {
		reason, transient := classify(renderErr)
		if transient {
			result = resultRetry
			return reconcile.Result{}, fmt.Errorf("reading the layers of App %s: %w", req, renderErr)
		}
		result = resultFailure
		return reconcile.Result{}, r.fail(ctx, &app, reason, renderErr)
	}
	for _, m := range rendered.Missing {
		logger.V(1).Info("optional layer is missing: left out", "layer", m.String(), "field", m.Field)
	}

	written, err := r.writeOutputs(ctx, &app, rendered)
	if err != nil {
		var oe *outputError
		if errors.As(err, &oe) && oe.transient {
			result = resultRetry
			return reconcile.Result{}, err
		}
		result = resultFailure
		reason := ReasonWriteFailed
		if oe != nil {
			reason = oe.reason
		}
		if ferr := r.fail(ctx, &app, reason, err); ferr != nil {
			return reconcile.Result{}, ferr
		}
		if reason == ReasonWriteFailed {
			// Retried with backoff: the API server may accept it later.
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, nil
	}

	result = resultSuccess
	msg := fmt.Sprintf("ConfigMap %s and Secret %s hold the values merged from %s",
		app.Name+ValuesSuffix, app.Name+SecretsSuffix, describeLayers(rendered))
	wasReady := meta.IsStatusConditionTrue(app.Status.Conditions, ConditionReady)
	if err := r.setStatus(ctx, &app, metav1.ConditionTrue, ReasonValuesMerged, msg); err != nil {
		return reconcile.Result{}, err
	}
	cms, secs := merged(rendered)
	r.metrics.succeeded(app.Namespace, app.Name, cms, secs, r.now())
	if len(written) > 0 || !wasReady {
		note := "Wrote " + strings.Join(written, " and ") + ": " + msg
		if len(written) == 0 {
			note = "Recovered: " + msg
		}
		r.recorder.Eventf(&app, nil, corev1.EventTypeNormal, ReasonValuesUpdated, "MergeValues", "%s", truncate(note, maxEventNote))
		logger.Info("values merged", "written", written, "layers", describeLayers(rendered))
	}
	return reconcile.Result{}, nil
}

// merged counts the layers of each chain that were merged.
func merged(r *layers.Rendered) (configMaps, secrets int) {
	configMaps, secrets = len(r.Plan.ConfigMaps), len(r.Plan.Secrets)
	for _, m := range r.Missing {
		if m.Kind == layers.KindSecret {
			secrets--
		} else {
			configMaps--
		}
	}
	return configMaps, secrets
}

// describeLayers says what was merged: "3 ConfigMap layers and 1 Secret
// layer (1 optional layer left out: missing)".
func describeLayers(r *layers.Rendered) string {
	cms, secs := merged(r)
	s := plural(cms, "ConfigMap layer") + " and " + plural(secs, "Secret layer")
	if n := len(r.Missing); n > 0 {
		s += " (" + plural(n, "optional layer") + " left out: missing)"
	}
	return s
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// fail records a failure: condition Ready False, a Warning Event when the
// condition changes, the outputs untouched.
func (r *reconciler) fail(ctx context.Context, app *v1alpha1.App, reason string, cause error) error {
	msg := truncate(cause.Error(), maxConditionMessage)
	prev := meta.FindStatusCondition(app.Status.Conditions, ConditionReady)
	changed := prev == nil || prev.Status != metav1.ConditionFalse || prev.Reason != reason || prev.Message != msg
	r.metrics.failed(app.Namespace, app.Name)
	if err := r.setStatus(ctx, app, metav1.ConditionFalse, reason, msg); err != nil {
		return err
	}
	if changed {
		r.recorder.Eventf(app, nil, corev1.EventTypeWarning, reason, "MergeValues", "%s", truncate(msg, maxEventNote))
		log.FromContext(ctx).Info("values not merged: the last good outputs are kept", "reason", reason, "error", cause.Error())
	}
	return nil
}

// setStatus sets the Ready condition and observedGeneration, and patches
// the status when they changed.
func (r *reconciler) setStatus(ctx context.Context, app *v1alpha1.App, status metav1.ConditionStatus, reason, msg string) error {
	orig := app.DeepCopy()
	meta.SetStatusCondition(&app.Status.Conditions, metav1.Condition{
		Type: ConditionReady, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: app.Generation,
	})
	app.Status.ObservedGeneration = app.Generation
	if equality.Semantic.DeepEqual(orig.Status, app.Status) {
		return nil
	}
	if err := r.client.Status().Patch(ctx, app, client.MergeFrom(orig)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("updating the status of App %s: %w", layers.AppName(app), err)
	}
	return nil
}

// writeOutputs writes the merged ConfigMap chain and Secret chain, and
// returns the outputs it created or changed.
func (r *reconciler) writeOutputs(ctx context.Context, app *v1alpha1.App, res *layers.Rendered) ([]string, error) {
	cmData, err := encodeValues(res.ConfigMapValues, "ConfigMap chain")
	if err != nil {
		return nil, err
	}
	secData, err := encodeValues(res.SecretValues, "Secret chain")
	if err != nil {
		return nil, err
	}
	for _, suffix := range []string{ValuesSuffix, SecretsSuffix} {
		if name := app.Name + suffix; len(name) > validation.DNS1123SubdomainMaxLength {
			return nil, &outputError{reason: ReasonInvalidSpec, err: fmt.Errorf(
				"metadata.name of App %s: the output %s would be longer than %d characters: shorten the App's name",
				layers.AppName(app), name, validation.DNS1123SubdomainMaxLength)}
		}
	}
	var written []string
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = app.Namespace, app.Name+ValuesSuffix
	changed, err := r.apply(ctx, app, cm, func() bool {
		want := map[string]string{ValuesKey: string(cmData)}
		if maps.Equal(cm.Data, want) && cm.BinaryData == nil {
			return false
		}
		cm.Data, cm.BinaryData = want, nil
		return true
	})
	if err != nil {
		return nil, err
	}
	if changed {
		written = append(written, "ConfigMap "+cm.Name)
	}
	sec := &corev1.Secret{}
	sec.Namespace, sec.Name = app.Namespace, app.Name+SecretsSuffix
	changed, err = r.apply(ctx, app, sec, func() bool {
		if sec.Type == "" {
			sec.Type = corev1.SecretTypeOpaque
		}
		if len(sec.Data) == 1 && bytes.Equal(sec.Data[ValuesKey], secData) && len(sec.StringData) == 0 {
			return false
		}
		sec.Data, sec.StringData = map[string][]byte{ValuesKey: secData}, nil
		return true
	})
	if err != nil {
		return nil, err
	}
	if changed {
		written = append(written, "Secret "+sec.Name)
	}
	return written, nil
}

func encodeValues(v map[string]any, what string) ([]byte, error) {
	if v == nil {
		v = map[string]any{}
	}
	if document.SizeExceeds(v, maxOutputBytes) || yamlSizeExceeds(v, maxOutputBytes) {
		// Known before encoding, which would cost many times the text.
		return nil, &outputError{reason: ReasonMergeFailed, err: fmt.Errorf(
			"the merged %s is more than %d bytes of YAML, more than a ConfigMap or Secret can hold: move values out of the layers",
			what, maxOutputBytes)}
	}
	var b bytes.Buffer
	if err := document.Encode(&b, v, document.YAML); err != nil {
		return nil, &outputError{reason: ReasonMergeFailed, err: fmt.Errorf("encoding the %s: %w", what, err)}
	}
	if b.Len() > maxOutputBytes {
		return nil, &outputError{reason: ReasonMergeFailed, err: fmt.Errorf(
			"the merged %s is %d bytes of YAML, more than the %d a ConfigMap or Secret can hold: move values out of the layers",
			what, b.Len(), maxOutputBytes)}
	}
	return b.Bytes(), nil
}

// yamlSizeExceeds reports whether v, written as YAML in block style, takes
// more than max bytes, counting a lower bound of what the encoder writes
// ("- " and a line break a list item, ": " and a line break a key, the
// text of scalars; no indentation), without building anything: a list of
// 480,000 one-digit numbers is 960 KB of JSON but 2.9 MB of YAML, which
// the encoder would build as a tree of hundreds of MB first.
func yamlSizeExceeds(v any, max int64) bool {
	n := int64(0)
	var walk func(v any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				n += int64(len(k)) + 3
				if n > max || walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range v {
				n += 3
				if n > max || walk(e) {
					return true
				}
			}
		case string:
			n += int64(len(v))
		case int64:
			n += int64(len(strconv.FormatInt(v, 10)))
		case float64:
			n += int64(len(strconv.FormatFloat(v, 'g', -1, 64)))
		case bool:
			n += 4
		case nil:
			n += 4 // null
		default:
			n++
		}
		return n > max
	}
	return walk(v)
}

// apply creates obj, or updates it when mutate changes it. obj holds the
// namespace and name; mutate sets the content on the object as read (or
// on the empty object) and reports whether it changed anything. An object
// of that name the App does not control is left alone.
func (r *reconciler) apply(ctx context.Context, app *v1alpha1.App, obj client.Object, mutate func() bool) (bool, error) {
	kind := "ConfigMap"
	if _, ok := obj.(*corev1.Secret); ok {
		kind = "Secret"
	}
	id := kind + " " + obj.GetNamespace() + "/" + obj.GetName()
	err := r.client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	switch {
	case apierrors.IsNotFound(err):
		mutate()
		setLabels(obj, app.Name)
		if err := controllerutil.SetControllerReference(app, obj, r.scheme); err != nil {
			return false, &outputError{reason: ReasonWriteFailed, err: fmt.Errorf("%s: %w", id, err)}
		}
		if err := r.client.Create(ctx, obj); err != nil {
			return false, writeError(id, "creating", err)
		}
		r.metrics.writes.WithLabelValues(kind).Inc()
		return true, nil
	case err != nil:
		return false, &outputError{transient: true, err: fmt.Errorf("reading %s: %w", id, err)}
	}
	if !metav1.IsControlledBy(obj, app) {
		owner := "no controller"
		if ref := metav1.GetControllerOf(obj); ref != nil {
			owner = "controller " + ref.Kind + " " + ref.Name
		}
		return false, &outputError{reason: ReasonOutputConflict, err: fmt.Errorf(
			"%s exists and is not controlled by App %s (it has %s): delete or rename it, and the controller writes its own",
			id, layers.AppName(app), owner)}
	}
	changed := mutate()
	if setLabels(obj, app.Name) {
		changed = true
	}
	if !changed {
		return false, nil
	}
	if err := r.client.Update(ctx, obj); err != nil {
		return false, writeError(id, "updating", err)
	}
	r.metrics.writes.WithLabelValues(kind).Inc()
	return true, nil
}

// setLabels sets the outputs' labels, and reports whether it changed any.
func setLabels(obj client.Object, app string) bool {
	want := map[string]string{LabelManagedBy: ManagedBy}
	if len(validation.IsValidLabelValue(app)) == 0 {
		want[LabelApp] = app
	}
	labels := obj.GetLabels()
	changed := false
	for k, v := range want {
		if labels[k] != v {
			if labels == nil {
				labels = map[string]string{}
			}
			labels[k] = v
			changed = true
		}
	}
	obj.SetLabels(labels)
	return changed
}

// writeError classifies a refused write: a conflict with a concurrent
// writer or a stale cache is retried quietly, anything else is reported.
func writeError(id, verb string, err error) error {
	e := fmt.Errorf("%s %s: %w", verb, id, err)
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return &outputError{transient: true, err: e}
	}
	return &outputError{reason: ReasonWriteFailed, err: e}
}
