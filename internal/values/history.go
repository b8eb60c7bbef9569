package values

import (
	"reflect"

	"github.com/strata-dev/strata/internal/document"
)

// The provenance of a merge is kept apart from the values, in a tree of
// hnodes mirroring the maps of the result. Each write to a path appends an
// event to one arena; events at the same node are chained through prev, so
// recording costs no allocation per event beyond the arena's growth.

type evKind uint8

const (
	evSet    evKind = iota // a scalar or a list was written
	evDelete               // a null removed the key
	evMap                  // a map was created where there was none
)

type event struct {
	value any
	prev  int32 // previous event at the same node, or -1
	layer int32
	line  int32
	col   int32
	kind  evKind
}

type hnode struct {
	last int32 // latest event at this node, or -1
	kids map[string]*hnode
}

// Events live in fixed-size chunks, so the arena grows without copying.
const chunkBits = 12

type history struct {
	chunks [][]event
	n      int32 // events recorded
	root   *hnode
	slab   []hnode
}

func (h *history) ev(i int32) *event {
	return &h.chunks[i>>chunkBits][i&(1<<chunkBits-1)]
}

func newHistory() *history {
	h := &history{}
	h.root = h.node()
	return h
}

func (h *history) rootNode() *hnode {
	if h == nil {
		return nil
	}
	return h.root
}

func (h *history) node() *hnode {
	if len(h.slab) == 0 {
		h.slab = make([]hnode, 256)
	}
	n := &h.slab[0]
	h.slab = h.slab[1:]
	n.last = -1
	return n
}

func (h *history) child(n *hnode, k string) *hnode {
	if c, ok := n.kids[k]; ok {
		return c
	}
	if n.kids == nil {
		n.kids = make(map[string]*hnode)
	}
	c := h.node()
	n.kids[k] = c
	return c
}

func (h *history) record(n *hnode, layer int32, pos *document.Pos, kind evKind, v any) {
	e := event{value: v, prev: n.last, layer: layer, kind: kind}
	if pos != nil {
		e.line, e.col = int32(pos.Line), int32(pos.Column)
	}
	if int(h.n>>chunkBits) == len(h.chunks) {
		h.chunks = append(h.chunks, make([]event, 1<<chunkBits))
	}
	*h.ev(h.n) = e
	n.last = h.n
	h.n++
}

// diff records what an Op layer changed between before and after.
func (h *history) diff(layer int32, before, after map[string]any, n *hnode) {
	for k, bv := range before {
		av, ok := after[k]
		if !ok {
			h.record(h.child(n, k), layer, nil, evDelete, nil)
			continue
		}
		h.diffValue(layer, bv, av, h.child(n, k))
	}
	for k, av := range after {
		if _, ok := before[k]; !ok {
			h.diffValue(layer, nil, av, h.child(n, k))
		}
	}
}

func (h *history) diffValue(layer int32, before, after any, n *hnode) {
	am, aIsMap := after.(map[string]any)
	bm, bIsMap := before.(map[string]any)
	switch {
	case aIsMap && bIsMap:
		h.diff(layer, bm, am, n)
	case aIsMap:
		h.record(n, layer, nil, evMap, nil)
		h.diff(layer, nil, am, n)
	case !sameLeaf(before, after):
		h.record(n, layer, nil, evSet, after)
	}
}

func sameLeaf(a, b any) bool {
	switch a.(type) {
	case []any:
		return reflect.DeepEqual(a, b)
	case map[string]any:
		return false
	}
	return a == b
}
