package values

import (
	"fmt"
	"sort"

	"github.com/strata-dev/strata/internal/document"
)

// A Leaf is one entry of a flattened tree.
type Leaf struct {
	Path  document.Path
	Value any // a scalar, nil, or an empty map or list
}

// Flatten lists the leaves of tree in path order: scalars, nulls, and empty
// maps and lists, descending into lists by index. Unflatten inverts it.
func Flatten(tree map[string]any) []Leaf {
	var out []Leaf
	flatten(nil, tree, &out)
	sort.SliceStable(out, func(i, j int) bool { return ComparePaths(out[i].Path, out[j].Path) < 0 })
	return out
}

func flatten(p document.Path, v any, out *[]Leaf) {
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 && p != nil {
			*out = append(*out, Leaf{Path: p, Value: map[string]any{}})
			return
		}
		for k, e := range v {
			flatten(p.Append(document.Key(k)), e, out)
		}
	case []any:
		if len(v) == 0 {
			*out = append(*out, Leaf{Path: p, Value: []any{}})
			return
		}
		for i, e := range v {
			flatten(p.Append(document.Index(i)), e, out)
		}
	default:
		*out = append(*out, Leaf{Path: p, Value: v})
	}
}

// FlattenStrings is Flatten with paths written in --set notation.
func FlattenStrings(tree map[string]any) (keys []string, vals []any) {
	leaves := Flatten(tree)
	keys = make([]string, len(leaves))
	vals = make([]any, len(leaves))
	for i, l := range leaves {
		keys[i], vals[i] = l.Path.String(), l.Value
	}
	return keys, vals
}

// Unflatten builds a tree from leaves. Paths must start with a key; no two
// leaves may claim the same path, nor one a path inside the other's value.
// Lists are as long as their largest index; unset items are null.
func Unflatten(leaves []Leaf) (map[string]any, error) {
	sorted := make([]Leaf, len(leaves))
	copy(sorted, leaves)
	sort.SliceStable(sorted, func(i, j int) bool { return ComparePaths(sorted[i].Path, sorted[j].Path) < 0 })
	seen := make(map[string]bool, len(sorted))
	var root any = map[string]any{}
	for _, l := range sorted {
		key := l.Path.String()
		if len(l.Path) == 0 || l.Path[0].IsIndex {
			return nil, fmt.Errorf("%w %q: a flattened key must start with a map key", document.ErrBadPath, key)
		}
		if seen[key] {
			return nil, fmt.Errorf("key %q is given twice", key)
		}
		for n := 1; n < len(l.Path); n++ {
			if prefix := l.Path[:n].String(); seen[prefix] {
				return nil, fmt.Errorf("key %q lies inside the value of key %q", key, prefix)
			}
		}
		seen[key] = true
		var err error
		if root, err = put(root, l.Path, l.Value); err != nil {
			return nil, fmt.Errorf("key %q: %w", key, err)
		}
	}
	return root.(map[string]any), nil
}

// UnflattenStrings is Unflatten for keys in --set notation.
func UnflattenStrings(m map[string]any) (map[string]any, error) {
	leaves := make([]Leaf, 0, len(m))
	for k, v := range m {
		p, err := document.ParsePath(k)
		if err != nil {
			return nil, err
		}
		leaves = append(leaves, Leaf{Path: p, Value: v})
	}
	return Unflatten(leaves)
}

// put stores val at p inside cur and returns the new cur.
func put(cur any, p document.Path, val any) (any, error) {
	if len(p) == 0 {
		return val, nil
	}
	if s := p[0]; s.IsIndex {
		list, ok := cur.([]any)
		if !ok && cur != nil {
			return nil, fmt.Errorf("other keys use the parent as a map")
		}
		for len(list) <= s.Index {
			list = append(list, nil)
		}
		v, err := put(list[s.Index], p[1:], val)
		list[s.Index] = v
		return list, err
	}
	m, ok := cur.(map[string]any)
	if !ok {
		if cur != nil {
			return nil, fmt.Errorf("other keys use the parent as a list")
		}
		m = map[string]any{}
	}
	v, err := put(m[p[0].Key], p[1:], val)
	m[p[0].Key] = v
	return m, err
}
