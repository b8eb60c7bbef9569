package values

import "github.com/strata-dev/strata/internal/document"

// A Layer is one source of values in a stack: a values file, a ConfigMap, a
// --set flag, a JSON patch. Layers merge bottom (first) to top (last).
type Layer struct {
	// Name identifies the layer in explain output ("values.yaml",
	// "--set image.tag=v2", "ConfigMap default/base").
	Name string
	// Source is the file the values came from, when there is one.
	Source string
	// Priority is shown in explain output when the layer has one.
	Priority *int
	// Sensitive layers have their values redacted in every explanation.
	Sensitive bool

	// Values are merged over the layers below with Helm's semantics.
	Values map[string]any
	// Pos holds the positions of Values' nodes, when known.
	Pos *document.Pos

	// Op, when set, transforms the tree merged so far instead of merging
	// Values: a --set assignment, a JSON patch, a merge patch.
	Op Op
}

// An Op transforms a tree. Apply may modify maps of tree in place, but must
// not modify any []any it finds there: lists can be shared with other layers.
type Op interface {
	Apply(tree map[string]any) (map[string]any, error)
}
