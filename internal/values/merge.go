package values

import (
	"fmt"

	"github.com/strata-dev/strata/internal/document"
)

// MergeOptions tune Merge.
type MergeOptions struct {
	// Provenance records, for every node, which layer set it and what it
	// overrode; Result.Explain needs it.
	Provenance bool
}

// Result is a merged tree and, when recorded, its provenance.
type Result struct {
	Values map[string]any

	layers []*Layer
	prov   *history // nil without provenance
}

// Merge merges layers in order, the later one winning, with Helm's semantics:
// maps merge deeply; lists and scalars are replaced whole; a null removes the
// key from the result (a later layer may set it again). Layers whose Op is set
// transform the tree merged so far.
//
// Every map of Result.Values is newly allocated; lists and scalars are shared
// with the layers. The layers are not modified.
func Merge(layers []*Layer, opts MergeOptions) (*Result, error) {
	res := &Result{Values: map[string]any{}, layers: layers}
	var h *history
	if opts.Provenance {
		h = newHistory()
		res.prov = h
	}
	for i, l := range layers {
		if l == nil {
			return nil, fmt.Errorf("layer %d is nil", i)
		}
		if l.Op != nil {
			if err := res.apply(i, l); err != nil {
				return nil, err
			}
			continue
		}
		m := merger{h: h, layer: int32(i)}
		m.merge(res.Values, l.Values, l.Pos, h.rootNode())
	}
	return res, nil
}

func (r *Result) apply(i int, l *Layer) error {
	name := l.Name
	if r.prov == nil {
		out, err := l.Op.Apply(r.Values)
		if err != nil {
			return fmt.Errorf("applying %s: %w", name, err)
		}
		r.Values = pruneNulls(ensureMap(out))
		return nil
	}
	before := r.Values
	out, err := l.Op.Apply(CopyMaps(before))
	if err != nil {
		return fmt.Errorf("applying %s: %w", name, err)
	}
	r.Values = pruneNulls(ensureMap(out))
	r.prov.diff(int32(i), before, r.Values, r.prov.root)
	return nil
}

// pruneNulls removes null map entries: in a merged tree, null means absent.
func pruneNulls(m map[string]any) map[string]any {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			pruneNulls(v)
		}
	}
	return m
}

func ensureMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

type merger struct {
	h     *history
	layer int32
}

// merge merges src into dst, which is owned by the result.
func (m *merger) merge(dst, src map[string]any, pos *document.Pos, node *hnode) {
	for k, sv := range src {
		var kn *hnode
		if node != nil {
			kn = m.h.child(node, k)
		}
		switch sv := sv.(type) {
		case nil:
			if kn != nil {
				m.h.record(kn, m.layer, pos.Key(k), evDelete, nil)
			}
			delete(dst, k)
		case map[string]any:
			dm, ok := dst[k].(map[string]any)
			if !ok {
				dm = make(map[string]any, len(sv))
				dst[k] = dm
				if kn != nil {
					m.h.record(kn, m.layer, pos.Key(k), evMap, nil)
				}
			}
			m.merge(dm, sv, pos.Key(k), kn)
		default:
			dst[k] = sv
			if kn != nil {
				m.h.record(kn, m.layer, pos.Key(k), evSet, sv)
			}
		}
	}
}

// CopyMaps returns a copy of tree in which every map is new; lists and
// scalars are shared.
func CopyMaps(tree map[string]any) map[string]any {
	out := make(map[string]any, len(tree))
	for k, v := range tree {
		if m, ok := v.(map[string]any); ok {
			v = CopyMaps(m)
		}
		out[k] = v
	}
	return out
}

// DeepCopy returns a copy of v sharing nothing mutable with it.
func DeepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = DeepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = DeepCopy(e)
		}
		return out
	}
	return v
}
