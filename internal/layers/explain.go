package layers

import (
	"fmt"
	"sort"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/values"
)

// Explain tells, for every leaf under p (nil: all), the final value of the
// merged values, the layer that set it and every value it overrode,
// oldest first. The Secret chain's layers are numbered after the ConfigMap
// chain's, and a Secret value overrides what the ConfigMap chain set at its
// path (or above or below it). Values of Secret layers are redacted unless
// opts.ShowSensitive. Render must have run with Provenance.
func (r *Rendered) Explain(p document.Path, opts values.ExplainOptions) ([]values.Explanation, error) {
	if r.cm == nil || r.sec == nil {
		return nil, values.ErrNoProvenance
	}
	cmExps, err := r.cm.Explain(nil, opts)
	if err != nil {
		return nil, err
	}
	secExps, err := r.sec.Explain(nil, opts)
	if err != nil {
		return nil, err
	}
	// An empty tree explains itself as one empty map at the root: leave
	// that out.
	cmExps, secExps = dropRoot(cmExps), dropRoot(secExps)
	all := compose(cmExps, secExps, r.SecretValues, r.cmCount)
	if len(p) == 0 {
		return all, nil
	}
	var out []values.Explanation
	for _, e := range all {
		if hasPrefix(e.Path, p) {
			out = append(out, e)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	// p may lie inside a leaf: a list, written whole.
	for _, e := range all {
		if !hasPrefix(p, e.Path) || e.Deleted {
			continue
		}
		v, ok := stepInto(e.Value, p[len(e.Path):])
		if !ok {
			break
		}
		inner := e
		inner.Path, inner.Value = p, v
		inner.Winner = withPath(e.Winner, e.Path)
		inner.Overrode = make([]values.Setting, len(e.Overrode))
		for i, s := range e.Overrode {
			inner.Overrode[i] = withPath(s, e.Path)
		}
		return []values.Explanation{inner}, nil
	}
	return nil, fmt.Errorf("%w %q in the result", values.ErrNotFound, p.String())
}

func stepInto(v any, p document.Path) (any, bool) {
	if v == values.Redacted {
		return v, true
	}
	for _, s := range p {
		switch c := v.(type) {
		case []any:
			if !s.IsIndex || s.Index >= len(c) {
				return nil, false
			}
			v = c[s.Index]
		case map[string]any:
			if s.IsIndex {
				return nil, false
			}
			var ok bool
			if v, ok = c[s.Key]; !ok {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return v, true
}

func dropRoot(exps []values.Explanation) []values.Explanation {
	if len(exps) == 1 && len(exps[0].Path) == 0 {
		return nil
	}
	return exps
}

func isEmptyMap(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}

func withPath(s values.Setting, p document.Path) values.Setting {
	if s.Path == nil {
		s.Path = p
	}
	return s
}

// compose builds the explanations of the Secret chain merged over the
// ConfigMap chain from the explanations of each; secret layers are
// renumbered after the cmCount ConfigMap layers.
func compose(cm, sec []values.Explanation, secVals map[string]any, cmCount int) []values.Explanation {
	byPath := make(map[string]int, len(cm))
	for i, e := range cm {
		byPath[e.Path.String()] = i
	}
	consumed := make([]bool, len(cm))
	out := make([]values.Explanation, 0, len(cm)+len(sec))

	// below returns the range of cm entries at or below p.
	below := func(p document.Path) (int, int) {
		lo := sort.Search(len(cm), func(i int) bool { return values.ComparePaths(cm[i].Path, p) >= 0 })
		hi := lo
		for hi < len(cm) && hasPrefix(cm[hi].Path, p) {
			hi++
		}
		return lo, hi
	}
	var deleted []values.Explanation
	for _, s := range sec {
		s = shifted(s, cmCount)
		if s.Deleted {
			deleted = append(deleted, s)
			continue
		}
		lo, hi := below(s.Path)
		if v, _ := stepInto(secVals, s.Path); isEmptyMap(v) {
			// An empty map merges into what the ConfigMaps set below it.
			if hi > lo && (hi-lo > 1 || len(cm[lo].Path) > len(s.Path)) {
				continue
			}
		}
		var over []values.Setting
		// A ConfigMap leaf above the path, replaced by the Secret's map.
		for k := 0; k < len(s.Path); k++ {
			i, ok := byPath[s.Path[:k].String()]
			if !ok || cm[i].Deleted {
				continue
			}
			consumed[i] = true
			if isEmptyMap(cm[i].Value) {
				continue
			}
			over = append(over, history(cm[i], s.Path)...)
		}
		// ConfigMap leaves at or below the path.
		for i := lo; i < hi; i++ {
			consumed[i] = true
			over = append(over, history(cm[i], s.Path)...)
		}
		s.Overrode = append(over, s.Overrode...)
		out = append(out, s)
	}
	for _, s := range deleted {
		// A null in a Secret removes the key from the Secret chain only:
		// what the ConfigMaps set there stays.
		lo, hi := below(s.Path)
		shadowed := false
		for i := lo; i < hi; i++ {
			if !consumed[i] {
				shadowed = true
			}
		}
		for k := 0; k < len(s.Path) && !shadowed; k++ {
			if i, ok := byPath[s.Path[:k].String()]; ok && !consumed[i] && !cm[i].Deleted {
				shadowed = true
			}
		}
		if !shadowed {
			out = append(out, s)
		}
	}
	for i, e := range cm {
		if !consumed[i] {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return values.ComparePaths(out[i].Path, out[j].Path) < 0 })
	return out
}

// history lists a ConfigMap explanation's writes, oldest first, as the
// writes a Secret value at p overrode.
func history(e values.Explanation, p document.Path) []values.Setting {
	out := make([]values.Setting, 0, len(e.Overrode)+1)
	for _, s := range append(e.Overrode[:len(e.Overrode):len(e.Overrode)], e.Winner) {
		if s.Path == nil && values.ComparePaths(e.Path, p) != 0 {
			s.Path = e.Path
		}
		out = append(out, s)
	}
	return out
}

// shifted renumbers a Secret explanation's layers after the ConfigMaps'.
func shifted(e values.Explanation, n int) values.Explanation {
	e.Winner.Position += n
	if len(e.Overrode) > 0 {
		o := make([]values.Setting, len(e.Overrode))
		for i, s := range e.Overrode {
			s.Position += n
			o[i] = s
		}
		e.Overrode = o
	}
	return e
}

func hasPrefix(p, prefix document.Path) bool {
	if len(prefix) > len(p) {
		return false
	}
	for i, s := range prefix {
		if s != p[i] {
			return false
		}
	}
	return true
}
