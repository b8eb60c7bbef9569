package values

import (
	"errors"
	"fmt"
	"sort"

	"github.com/strata-dev/strata/internal/document"
)

// Redacted replaces the values of sensitive layers in explanations.
const Redacted = "<redacted>"

var (
	// ErrNoProvenance is returned by Explain on a Result merged without provenance.
	ErrNoProvenance = errors.New("merged without provenance")
	// ErrNotFound is returned by Explain for a path no layer ever set.
	ErrNotFound = errors.New("no such key")
)

// Origin is a layer of the stack, as explanations show it.
type Origin struct {
	Layer     string
	Position  int // in the stack, 1 = bottom
	Source    string
	Line      int
	Column    int
	Priority  *int
	Sensitive bool
}

// A Setting is one write of a layer.
type Setting struct {
	Origin
	// Path is where the layer wrote, when it differs from the explained
	// path: an enclosing key replaced whole, or a nested key buried by it.
	Path    document.Path
	Value   any
	Deleted bool
}

// Explanation tells where the value at one path came from.
type Explanation struct {
	Path document.Path
	// Value is the final value, Redacted when the winning layer is
	// sensitive; nil when Deleted.
	Value any
	// Deleted is set when the key is absent because a layer removed it.
	Deleted bool
	// Winner is the write that decided the value.
	Winner Setting
	// Overrode lists the earlier writes it replaced, oldest first.
	Overrode []Setting
}

// ExplainOptions tune Explain.
type ExplainOptions struct {
	ShowSensitive bool // do not redact values of sensitive layers
}

// Explain tells, for every leaf under path (nil: the whole tree), the final
// value, the write that won and the writes it overrode. Leaves are scalars,
// lists and empty maps; keys removed by a null are listed as Deleted.
// Explanations are sorted by path.
func (r *Result) Explain(path document.Path, opts ExplainOptions) ([]Explanation, error) {
	if r.prov == nil {
		return nil, ErrNoProvenance
	}
	x := explainer{r: r, opts: opts}
	// Walk the history tree along the keys of path; it does not descend
	// into lists, which are replaced whole.
	chain := []*hnode{r.prov.root}
	var cur any = r.Values
	present := true
	for i, s := range path {
		if present {
			cur, present = step(cur, s)
		}
		n := chain[len(chain)-1]
		if s.IsIndex || len(chain) != i+1 {
			continue
		}
		if k, ok := n.kids[s.Key]; ok {
			chain = append(chain, k)
		}
	}
	inList := len(chain) != len(path)+1
	if !present {
		if inList || chain[len(chain)-1].last < 0 {
			return nil, fmt.Errorf("%w %q in the result", ErrNotFound, path.String())
		}
		return []Explanation{x.explain(path, chain, nil, true)}, nil
	}
	if inList {
		// The list was written whole: its writes explain the item.
		list := path[:len(chain)-1]
		e := x.explain(list, chain, cur, false)
		e.Path = path
		if e.Winner.Path == nil {
			e.Winner.Path = list
		}
		for i := range e.Overrode {
			if e.Overrode[i].Path == nil {
				e.Overrode[i].Path = list
			}
		}
		return []Explanation{e}, nil
	}
	x.walk(path, chain, cur)
	sort.Slice(x.out, func(i, j int) bool { return ComparePaths(x.out[i].Path, x.out[j].Path) < 0 })
	return x.out, nil
}

func step(v any, s document.Step) (any, bool) {
	if s.IsIndex {
		l, ok := v.([]any)
		if !ok || s.Index >= len(l) {
			return nil, false
		}
		return l[s.Index], true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	v, ok = m[s.Key]
	return v, ok
}

type explainer struct {
	r    *Result
	opts ExplainOptions
	out  []Explanation
}

func (x *explainer) walk(path document.Path, chain []*hnode, v any) {
	n := chain[len(chain)-1]
	m, isMap := v.(map[string]any)
	if !isMap || len(m) == 0 {
		x.out = append(x.out, x.explain(path, chain, v, false))
		return
	}
	for k, kv := range m {
		kn := n.kids[k]
		if kn == nil {
			// Written by no layer: cannot happen for merged trees; keep
			// the leaf with an empty origin rather than hide it.
			kn = &hnode{last: -1}
		}
		x.walk(path.Append(document.Key(k)), append(chain[:len(chain):len(chain)], kn), kv)
	}
	for k, kn := range n.kids {
		if _, ok := m[k]; ok || kn.last < 0 || x.r.prov.ev(kn.last).kind != evDelete {
			continue
		}
		x.out = append(x.out, x.explain(path.Append(document.Key(k)), append(chain[:len(chain):len(chain)], kn), nil, true))
	}
}

type indexed struct {
	idx  int32
	path document.Path
}

// explain builds the explanation of the node at the end of chain.
func (x *explainer) explain(path document.Path, chain []*hnode, v any, deleted bool) Explanation {
	h := x.r.prov
	n := chain[len(chain)-1]
	var evs []indexed
	// Writes to enclosing keys that replaced or removed them.
	for i, a := range chain[:len(chain)-1] {
		for e := a.last; e >= 0; e = h.ev(e).prev {
			if h.ev(e).kind != evMap {
				evs = append(evs, indexed{e, path[:i]})
			}
		}
	}
	// Writes to this key.
	for e := n.last; e >= 0; e = h.ev(e).prev {
		if h.ev(e).kind != evMap || e == n.last {
			evs = append(evs, indexed{e, nil})
		}
	}
	// Writes to keys below it, buried when it was replaced.
	x.below(n, path, &evs)
	// Oldest first: by layer, then by path (writes of one layer to several
	// keys have no order of their own; map iteration must not decide it).
	sort.Slice(evs, func(i, j int) bool {
		li, lj := h.ev(evs[i].idx).layer, h.ev(evs[j].idx).layer
		if li != lj {
			return li < lj
		}
		if c := ComparePaths(evs[i].path, evs[j].path); c != 0 {
			return c < 0
		}
		return evs[i].idx < evs[j].idx
	})

	// The winner is the latest write to this key; for an absent key, the
	// latest write to it or to a key enclosing it (a null, or a scalar
	// replacing the enclosing map).
	win := indexed{idx: n.last}
	if deleted {
		for _, e := range evs {
			if e.idx > win.idx && len(e.path) <= len(path) {
				win = e
			}
		}
	}
	ex := Explanation{Path: path, Value: v, Deleted: deleted}
	if win.idx >= 0 {
		ex.Winner = x.setting(win.idx, win.path)
	}
	for _, e := range evs {
		if e.idx >= win.idx {
			continue
		}
		ex.Overrode = append(ex.Overrode, x.setting(e.idx, e.path))
	}
	if n.last >= 0 && h.ev(n.last).kind == evMap {
		ex.Winner.Value = v
	}
	if ex.Winner.Sensitive && !x.opts.ShowSensitive && !deleted {
		ex.Value = Redacted
		ex.Winner.Value = Redacted
	}
	return ex
}

func (x *explainer) below(n *hnode, path document.Path, evs *[]indexed) {
	h := x.r.prov
	for k, kn := range n.kids {
		kp := path.Append(document.Key(k))
		for e := kn.last; e >= 0; e = h.ev(e).prev {
			if h.ev(e).kind != evMap {
				*evs = append(*evs, indexed{e, kp})
			}
		}
		x.below(kn, kp, evs)
	}
}

func (x *explainer) setting(idx int32, p document.Path) Setting {
	e := x.r.prov.ev(idx)
	l := x.r.layers[e.layer]
	name := l.Name
	redact := l.Sensitive && !x.opts.ShowSensitive
	if r, ok := l.Op.(interface{ RedactedName() string }); ok && redact {
		name = r.RedactedName()
	}
	s := Setting{
		Origin: Origin{
			Layer: name, Position: int(e.layer) + 1, Source: l.Source,
			Line: int(e.line), Column: int(e.col), Priority: l.Priority, Sensitive: l.Sensitive,
		},
		Path:    p,
		Value:   e.value,
		Deleted: e.kind == evDelete,
	}
	if redact && !s.Deleted {
		s.Value = Redacted
	}
	return s
}

// ComparePaths orders paths step by step: list indices before keys, indices
// numerically, keys bytewise, and a path before the paths under it. It is
// the order of Flatten and of explanations.
func ComparePaths(a, b document.Path) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		switch {
		case x.IsIndex && y.IsIndex:
			if x.Index != y.Index {
				if x.Index < y.Index {
					return -1
				}
				return 1
			}
		case x.IsIndex != y.IsIndex:
			if x.IsIndex {
				return -1
			}
			return 1
		case x.Key != y.Key:
			if x.Key < y.Key {
				return -1
			}
			return 1
		}
	}
	return len(a) - len(b)
}
