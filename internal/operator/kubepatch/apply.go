package kubepatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/itchyny/gojq"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/operator/hook"
)

// Defaults of Applier.
const (
	DefaultTimeout    = 30 * time.Second
	DefaultDeleteWait = 60 * time.Second
	DefaultRetries    = 10
	DefaultManager    = "strata-operator"
	// deletePoll is how often a foreground Delete looks whether the
	// object is gone.
	deletePoll = 250 * time.Millisecond
)

// An Applier applies hooks' kubernetes patch operations to the API
// server. Every operation of a file is resolved and checked before any is
// applied; then they are applied in order, each failure reported and the
// next one applied all the same (as shell-operator does).
type Applier struct {
	Dynamic  dynamic.Interface
	Resolver *Resolver
	// FieldManager names the writer in managedFields; "" means
	// DefaultManager.
	FieldManager string
	// Timeout bounds each request; 0 means DefaultTimeout.
	Timeout time.Duration
	// DeleteWait bounds how long Delete (foreground propagation) waits
	// for the object to be gone; 0 means DefaultDeleteWait.
	DeleteWait time.Duration
	// Retries bounds the attempts of an update that conflicts with
	// another writer (CreateOrUpdate, JQPatch); 0 means DefaultRetries.
	Retries int
	// Log receives one line per operation applied, at debug level; nil
	// means slog.Default().
	Log *slog.Logger
}

// New returns an Applier for the cluster rc reaches.
func New(rc *rest.Config, log *slog.Logger) (*Applier, error) {
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes patches: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes patches: %w", err)
	}
	return &Applier{Dynamic: dyn, Resolver: NewResolver(dc), Log: log}, nil
}

// A step is an operation resolved and ready to apply.
type step struct {
	index int
	op    hook.KubeOperation
	desc  string
	res   Resource
	ns    string
	name  string
	sub   []string
	obj   *unstructured.Unstructured // Create*
	patch []byte                     // MergePatch, JSONPatch
	jq    *gojq.Code                 // JQPatch
}

// An OpError is the failure of one operation of a patch file.
type OpError struct {
	Index int    // the operation's index in the file, from 0
	Line  int    // the line of the file it starts on
	Desc  string // "MergePatch v1/ConfigMap ns/name"
	Field string // the member at fault, when known ("kind", "object.metadata.namespace")
	Err   error
}

func (e *OpError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "operation %d (%s", e.Index, e.Desc)
	if e.Line > 0 {
		fmt.Fprintf(&b, ", line %d", e.Line)
	}
	b.WriteString("): ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *OpError) Unwrap() error { return e.Err }

// Describe names an operation as errors do: "MergePatch v1/ConfigMap
// ns/name".
func Describe(op hook.KubeOperation) string {
	apiVersion, kind, ns, name := coords(op)
	gvk := kind
	if apiVersion != "" {
		gvk = apiVersion + "/" + kind
	}
	obj := name
	if ns != "" {
		obj = ns + "/" + name
	}
	s := string(op.Operation) + " " + gvk + " " + obj
	if op.Subresource != "" {
		s += " subresource " + strings.Trim(op.Subresource, "/")
	}
	return s
}

// coords are the object an operation is about: for Create*, its object's.
func coords(op hook.KubeOperation) (apiVersion, kind, ns, name string) {
	if op.Object != nil {
		u := unstructured.Unstructured{Object: op.Object}
		name = u.GetName()
		if name == "" && u.GetGenerateName() != "" {
			name = u.GetGenerateName() + "*"
		}
		return u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), name
	}
	return op.APIVersion, op.Kind, op.Namespace, op.Name
}

// Check resolves and checks every operation, applying none. The error
// names the first bad operation's index and field.
func (a *Applier) Check(ops []hook.KubeOperation) error {
	_, err := a.prepareAll(ops)
	return err
}

// prepareAll resolves and checks every operation.
func (a *Applier) prepareAll(ops []hook.KubeOperation) ([]step, error) {
	steps := make([]step, 0, len(ops))
	for i, op := range ops {
		s, err := a.prepare(i, op)
		if err != nil {
			return nil, err
		}
		steps = append(steps, s)
	}
	return steps, nil
}

func (a *Applier) prepare(i int, op hook.KubeOperation) (step, error) {
	apiVersion, kind, ns, name := coords(op)
	s := step{index: i, op: op, desc: Describe(op), ns: ns, name: name}
	fail := func(field string, err error) (step, error) {
		return s, &OpError{Index: i, Line: op.Line, Desc: s.desc, Field: field, Err: err}
	}
	prefix := ""
	if op.Object != nil {
		prefix = "object."
	}
	if sub := strings.Trim(op.Subresource, "/"); sub != "" {
		if strings.Contains(sub, "/") {
			return fail("subresource", fmt.Errorf("%q is not a subresource name such as status or scale", op.Subresource))
		}
		s.sub = []string{sub}
	}
	res, err := a.Resolver.Resolve(apiVersion, kind, op.Subresource)
	if err != nil {
		field := prefix + "kind"
		if strings.Contains(err.Error(), "subresource") {
			field = "subresource"
		}
		return fail(field, err)
	}
	s.res = res
	nsField := "namespace"
	if op.Object != nil {
		nsField = "object.metadata.namespace"
	}
	switch {
	case res.Namespaced && ns == "":
		return fail(nsField, fmt.Errorf("%s is namespaced: give the object's namespace", res.Kind))
	case !res.Namespaced && ns != "":
		return fail(nsField, fmt.Errorf("%s is not namespaced: drop the namespace %q", res.Kind, ns))
	}
	switch op.Operation {
	case hook.KubeCreate, hook.KubeCreateOrUpdate, hook.KubeCreateIfNotExists:
		u := &unstructured.Unstructured{Object: op.Object}
		if op.Operation != hook.KubeCreate && u.GetName() == "" {
			return fail("object.metadata.name", fmt.Errorf("%s needs a name (generateName makes a new object each time)", op.Operation))
		}
		obj, err := toUnstructured(op.Object)
		if err != nil {
			return fail("object", err)
		}
		s.obj = obj
	case hook.KubeMergePatch:
		if s.patch, err = json.Marshal(op.MergePatch); err != nil {
			return fail("mergePatch", err)
		}
	case hook.KubeJSONPatch:
		if s.patch, err = json.Marshal(op.JSONPatch.Maps()); err != nil {
			return fail("jsonPatch", err)
		}
	case hook.KubeJQPatch:
		q, err := gojq.Parse(op.JQFilter)
		if err != nil {
			return fail("jqFilter", fmt.Errorf("jq program %q does not parse: %v", document.Clip(op.JQFilter, 80), err))
		}
		if s.jq, err = gojq.Compile(q); err != nil {
			return fail("jqFilter", fmt.Errorf("jq program %q does not compile: %v", document.Clip(op.JQFilter, 80), err))
		}
	case hook.KubeDelete, hook.KubeDeleteInBackground, hook.KubeDeleteNonCascading:
	default:
		return fail("operation", fmt.Errorf("unknown operation %q", op.Operation))
	}
	return s, nil
}

// toUnstructured copies a value tree (package document's types) into an
// object the API machinery can send, through JSON.
func toUnstructured(v map[string]any) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return u, nil
}

// Apply checks every operation, then applies them in order. hookLabel
// names the hook in the log. The error lists every operation that
// failed, each naming its index.
func (a *Applier) Apply(ctx context.Context, hookLabel string, ops []hook.KubeOperation) error {
	steps, err := a.prepareAll(ops)
	if err != nil {
		return fmt.Errorf("%w; no operation was applied", err)
	}
	var errs []error
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			errs = append(errs, fmt.Errorf("operation %d and the rest not applied: %w", s.index, err))
			break
		}
		if err := a.apply(ctx, s); err != nil {
			errs = append(errs, &OpError{Index: s.index, Line: s.op.Line, Desc: s.desc, Err: err})
			continue
		}
		a.log().Debug("kubernetes patch operation applied", "hook", hookLabel, "operation", s.index, "what", s.desc)
	}
	return errors.Join(errs...)
}

func (a *Applier) log() *slog.Logger {
	if a.Log == nil {
		return slog.Default()
	}
	return a.Log
}

func (a *Applier) timeout() time.Duration {
	if a.Timeout <= 0 {
		return DefaultTimeout
	}
	return a.Timeout
}

func (a *Applier) retries() int {
	if a.Retries <= 0 {
		return DefaultRetries
	}
	return a.Retries
}

func (a *Applier) manager() string {
	if a.FieldManager == "" {
		return DefaultManager
	}
	return a.FieldManager
}

// call runs one request bounded by the Applier's timeout.
func call[T any](ctx context.Context, a *Applier, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout())
	defer cancel()
	return f(ctx)
}

func (a *Applier) apply(ctx context.Context, s step) error {
	api := a.Dynamic.Resource(s.res.GVR).Namespace(s.ns)
	switch s.op.Operation {
	case hook.KubeCreate, hook.KubeCreateIfNotExists, hook.KubeCreateOrUpdate:
		return a.create(ctx, api, s)
	case hook.KubeDelete, hook.KubeDeleteInBackground, hook.KubeDeleteNonCascading:
		return a.delete(ctx, api, s)
	case hook.KubeMergePatch, hook.KubeJSONPatch:
		pt := types.MergePatchType
		if s.op.Operation == hook.KubeJSONPatch {
			pt = types.JSONPatchType
		}
		_, err := call(ctx, a, func(ctx context.Context) (*unstructured.Unstructured, error) {
			return api.Patch(ctx, s.name, pt, s.patch, metav1.PatchOptions{FieldManager: a.manager()}, s.sub...)
		})
		if apierrors.IsNotFound(err) && s.op.IgnoreMissingObject {
			return nil
		}
		return err
	case hook.KubeJQPatch:
		return a.jqPatch(ctx, api, s)
	}
	return fmt.Errorf("unknown operation %q", s.op.Operation)
}

func (a *Applier) create(ctx context.Context, api dynamic.ResourceInterface, s step) error {
	for range a.retries() {
		_, err := call(ctx, a, func(ctx context.Context) (*unstructured.Unstructured, error) {
			return api.Create(ctx, s.obj.DeepCopy(), metav1.CreateOptions{FieldManager: a.manager()}, s.sub...)
		})
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
		switch s.op.Operation {
		case hook.KubeCreateIfNotExists:
			return nil
		case hook.KubeCreate:
			return err
		}
		// CreateOrUpdate: replace it, with the resourceVersion read.
		cur, err := call(ctx, a, func(ctx context.Context) (*unstructured.Unstructured, error) {
			return api.Get(ctx, s.name, metav1.GetOptions{}, s.sub...)
		})
		if apierrors.IsNotFound(err) {
			continue // deleted meanwhile: create it again
		}
		if err != nil {
			return err
		}
		up := s.obj.DeepCopy()
		up.SetResourceVersion(cur.GetResourceVersion())
		_, err = call(ctx, a, func(ctx context.Context) (*unstructured.Unstructured, error) {
			return api.Update(ctx, up, metav1.UpdateOptions{FieldManager: a.manager()}, s.sub...)
		})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue
		}
		return err
	}
	return fmt.Errorf("the object kept changing; gave up after %d attempts", a.retries())
}

func (a *Applier) delete(ctx context.Context, api dynamic.ResourceInterface, s step) error {
	policy := metav1.DeletePropagationForeground
	switch s.op.Operation {
	case hook.KubeDeleteInBackground:
		policy = metav1.DeletePropagationBackground
	case hook.KubeDeleteNonCascading:
		policy = metav1.DeletePropagationOrphan
	}
	cur, err := call(ctx, a, func(ctx context.Context) (*unstructured.Unstructured, error) {
		return api.Get(ctx, s.name, metav1.GetOptions{})
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	uid := cur.GetUID()
	_, err = call(ctx, a, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, api.Delete(ctx, s.name, metav1.DeleteOptions{
			PropagationPolicy: &policy,
			Preconditions:     &metav1.Preconditions{UID: &uid},
		}, s.sub...)
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if apierrors.IsConflict(err) {
		return nil // the precondition failed: that object is gone, another took its name
	}
	if err != nil || policy != metav1.DeletePropagationForeground {
		return err
	}
	// Foreground: the object goes once its dependents are gone; wait.
	wait := a.DeleteWait
	if wait <= 0 {
		wait = DefaultDeleteWait
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	t := time.NewTicker(deletePoll)
	defer t.Stop()
	for {
		cur, err := call(wctx, a, func(ctx context.Context) (*unstructured.Unstructured, error) {
			return api.Get(ctx, s.name, metav1.GetOptions{})
		})
		switch {
		case apierrors.IsNotFound(err), err == nil && cur.GetUID() != uid:
			return nil
		case err != nil && wctx.Err() == nil:
			return err
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fin := ""
			if cur != nil {
				fin = strings.Join(cur.GetFinalizers(), ", ")
			}
			return fmt.Errorf("deleted with foreground propagation, but still there after %s (finalizers: %s); its dependents or finalizers hold it", wait, fin)
		case <-t.C:
		}
	}
}

// jqPatch reads the object, runs the jq program on it and writes the
// result back with the resourceVersion read, again on a conflict.
func (a *Applier) jqPatch(ctx context.Context, api dynamic.ResourceInterface, s step) error {
	for range a.retries() {
		cur, err := call(ctx, a, func(ctx context.Context) (*unstructured.Unstructured, error) {
			return api.Get(ctx, s.name, metav1.GetOptions{})
		})
		if apierrors.IsNotFound(err) && s.op.IgnoreMissingObject {
			return nil
		}
		if err != nil {
			return err
		}
		next, err := call(ctx, a, func(ctx context.Context) (*unstructured.Unstructured, error) {
			return RunJQ(ctx, s.jq, cur) // a program that runs forever ends with the timeout
		})
		if err != nil {
			return fmt.Errorf("jqFilter: %w", err)
		}
		if equality.Semantic.DeepEqual(cur.Object, next.Object) {
			return nil
		}
		next.SetResourceVersion(cur.GetResourceVersion())
		_, err = call(ctx, a, func(ctx context.Context) (*unstructured.Unstructured, error) {
			return api.Update(ctx, next, metav1.UpdateOptions{FieldManager: a.manager()}, s.sub...)
		})
		if apierrors.IsConflict(err) {
			continue
		}
		if apierrors.IsNotFound(err) && s.op.IgnoreMissingObject {
			return nil
		}
		return err
	}
	return fmt.Errorf("the object kept changing; gave up after %d attempts", a.retries())
}

// RunJQ runs a compiled jq program on an object and returns its first
// result, which must be an object.
func RunJQ(ctx context.Context, code *gojq.Code, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var in any
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil {
		return nil, err
	}
	iter := code.RunWithContext(ctx, in)
	v, ok := iter.Next()
	if !ok {
		return nil, errors.New("the program gave no result; it must give the whole object, changed")
	}
	if err, ok := v.(error); ok {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the program gave %s; it must give the whole object, changed", document.Describe(v))
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(out); err != nil {
		return nil, fmt.Errorf("the program's result is not a Kubernetes object: %w", err)
	}
	return u, nil
}
