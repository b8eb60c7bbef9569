package kubebind

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/itchyny/gojq"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/manifest"
	"github.com/strata-dev/strata/internal/operator/hook"
	"github.com/strata-dev/strata/internal/values"
)

// hookFile is the file a LocalSource records for an object a hook's
// $KUBERNETES_PATCH_PATH created: it lives in memory only.
const hookFile = "(created by a hook)"

// jqPatchTimeout bounds one JQPatch program.
const jqPatchTimeout = 10 * time.Second

// Apply applies the operations a hook wrote to $KUBERNETES_PATCH_PATH to
// the source's objects, in memory, as the API server would to a
// cluster's, and sends the changes to the watchers: a hook that creates
// an object feeds the bindings that watch its kind. Create fails for an
// object that exists; CreateOrUpdate replaces it; CreateIfNotExists keeps
// it; the three deletes remove the object (a missing one is no error);
// JQPatch, MergePatch and JSONPatch change it (a missing one is an error
// unless ignoreMissingObject). The object files are never written: an
// object a hook created or changed stays so until its file changes. A
// failed operation does not stop the next ones; every failure is
// reported, naming the operation's index and line.
func (s *LocalSource) Apply(ctx context.Context, hookLabel string, ops []hook.KubeOperation) error {
	st := s.st
	if st == nil {
		return errors.New("kubebind: LocalSource.Apply before Start")
	}
	var errs []error
	for i, op := range ops {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := s.applyOne(st, hookLabel, op); err != nil {
			errs = append(errs, fmt.Errorf("operation %d (line %d, %s %s): %w", i, op.Line, op.Operation, opID(op), err))
		}
	}
	return errors.Join(errs...)
}

// opID names the object of an operation: kind namespace/name.
func opID(op hook.KubeOperation) string {
	kind, ns, name := op.Kind, op.Namespace, op.Name
	if op.Object != nil {
		kind, _ = op.Object["kind"].(string)
		meta, _ := op.Object["metadata"].(map[string]any)
		if n, _ := meta["name"].(string); n != "" {
			name = n
		}
		if n, _ := meta["namespace"].(string); n != "" {
			ns = n
		}
	}
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

// applyOne applies one operation and sends its change.
func (s *LocalSource) applyOne(st *localState, hookLabel string, op hook.KubeOperation) error {
	switch op.Operation {
	case hook.KubeCreate, hook.KubeCreateOrUpdate, hook.KubeCreateIfNotExists:
		obj, err := newObject(op.Object, op.Namespace)
		if err != nil {
			return err
		}
		return s.change(st, func() string { return objectKey(obj) }, func(cur *Object) (*Object, error) {
			switch {
			case cur == nil:
				return obj, nil
			case op.Operation == hook.KubeCreate:
				return nil, errors.New("the object already exists (use CreateOrUpdate to replace it)")
			case op.Operation == hook.KubeCreateIfNotExists:
				return cur, nil
			}
			return obj, nil
		})
	case hook.KubeDelete, hook.KubeDeleteInBackground, hook.KubeDeleteNonCascading:
		return s.change(st, keyOf(st, op), func(*Object) (*Object, error) { return nil, nil })
	}
	return s.change(st, keyOf(st, op), func(cur *Object) (*Object, error) {
		if cur == nil {
			if op.IgnoreMissingObject {
				return nil, nil
			}
			return nil, errors.New("the object does not exist (set ignoreMissingObject: true to skip it)")
		}
		var next map[string]any
		var err error
		switch op.Operation {
		case hook.KubeJQPatch:
			next, err = jqPatch(op.JQFilter, cur)
		case hook.KubeMergePatch:
			next, _ = mergePatch(values.DeepCopy(cur.Value), op.MergePatch).(map[string]any)
		case hook.KubeJSONPatch:
			var p *values.JSONPatch
			if p, err = values.NewJSONPatch(op.JSONPatch.Maps(), hookLabel, nil); err == nil {
				next, err = p.Apply(cur.Value)
			}
		default:
			return nil, fmt.Errorf("unknown operation %q", op.Operation)
		}
		if err != nil {
			return nil, err
		}
		obj, err := newObject(next, cur.Namespace)
		if err != nil {
			return nil, fmt.Errorf("the patched object: %w", err)
		}
		if objectKey(obj) != objectKey(cur) {
			return nil, errors.New("the patch changes the object's apiVersion, kind, namespace or name, which the API server refuses")
		}
		return obj, nil
	})
}

// keyOf returns the key of the object an operation names, found with
// st.mu held. Without an apiVersion (optional in these operations) the
// object of any version with that kind, namespace and name is meant.
func keyOf(st *localState, op hook.KubeOperation) func() string {
	return func() string {
		want := &Object{APIVersion: op.APIVersion, Kind: op.Kind, Namespace: op.Namespace, Name: op.Name}
		if op.APIVersion != "" {
			return objectKey(want)
		}
		var found []string
		for k, lo := range st.objects {
			if o := lo.obj; o.Kind == op.Kind && o.Namespace == op.Namespace && o.Name == op.Name {
				found = append(found, k)
			}
		}
		if len(found) == 0 {
			return objectKey(want)
		}
		slices.Sort(found)
		return found[0]
	}
}

// change replaces the object at key() by what fn returns for it (nil: the
// object is deleted, or stays absent) and sends the change.
func (s *LocalSource) change(st *localState, key func() string, fn func(cur *Object) (*Object, error)) error {
	st.mu.Lock()
	k := key()
	lo := st.objects[k]
	var cur *Object
	if lo != nil {
		cur = lo.obj
	}
	next, err := fn(cur)
	if err != nil {
		st.mu.Unlock()
		return err
	}
	var c *Change
	switch {
	case cur == nil && next == nil:
	case next == nil:
		delete(st.objects, k)
		st.files[lo.file] = slices.DeleteFunc(st.files[lo.file], func(x string) bool { return x == k })
		c = &Change{Event: hook.Deleted, Object: cur}
	case cur == nil:
		st.objects[k] = &localObject{obj: next, file: hookFile}
		st.files[hookFile] = append(st.files[hookFile], k)
		c = &Change{Event: hook.Added, Object: next}
	case string(cur.JSON) != string(next.JSON):
		lo.obj = next
		c = &Change{Event: hook.Modified, Object: next}
	}
	var fns []func(Change)
	if c != nil {
		ids := make([]int, 0, len(st.subs))
		for id := range st.subs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			if sub := st.subs[id]; sub.wants(c.Object) {
				fns = append(fns, sub.fn)
			}
		}
	}
	st.mu.Unlock()
	for _, f := range fns {
		f(*c)
	}
	return nil
}

// newObject makes an Object of a value tree; ns is the namespace of an
// object that names none.
func newObject(v map[string]any, ns string) (*Object, error) {
	if v == nil {
		return nil, errors.New("no object")
	}
	v, _ = values.DeepCopy(v).(map[string]any)
	meta, _ := v["metadata"].(map[string]any)
	if n, _ := meta["namespace"].(string); n == "" && ns != "" && meta != nil {
		meta["namespace"] = ns
	}
	if _, isList := manifest.ListItems(v); isList {
		return nil, errors.New("a List is not one object; write one operation an object")
	}
	api, _ := v["apiVersion"].(string)
	kind, _ := v["kind"].(string)
	name, _ := meta["name"].(string)
	switch {
	case api == "":
		return nil, errors.New("the object has no apiVersion")
	case kind == "":
		return nil, errors.New("the object has no kind")
	case name == "":
		return nil, errors.New("the object has no metadata.name")
	}
	var out []*Object
	if err := collect(&out, v, hookFile, 0, "the object", 0); err != nil {
		return nil, err
	}
	if len(out) != 1 {
		return nil, errors.New("a List is not one object")
	}
	return out[0], nil
}

// jqPatch runs a JQPatch program on an object; its first result is the
// new object.
func jqPatch(program string, cur *Object) (map[string]any, error) {
	q, err := gojq.Parse(program)
	if err != nil {
		return nil, fmt.Errorf("jqFilter: %w", err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, fmt.Errorf("jqFilter: %w", err)
	}
	res, err := applyFilter(code, cur.JSON, jqPatchTimeout)
	if err != nil {
		return nil, fmt.Errorf("jqFilter: %w", err)
	}
	tree, _, err := document.Loader{}.ParseAny(res, "the jqFilter's result")
	if err != nil {
		return nil, fmt.Errorf("jqFilter: %w", err)
	}
	m, ok := tree.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("jqFilter gave %s; it must give the whole object, changed", document.Describe(tree))
	}
	return m, nil
}

// mergePatch applies an RFC 7386 JSON merge patch to target.
func mergePatch(target any, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return values.DeepCopy(patch)
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}
