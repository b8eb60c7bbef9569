package values

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/strata-dev/strata/internal/document"
)

// ErrPatch is wrapped by errors applying a patch.
var ErrPatch = errors.New("patch failed")

// JSONPatch is an RFC 6902 JSON patch, usable as a layer's Op.
type JSONPatch struct {
	ops jsonpatch.Patch
	raw []any
	// IgnoreMissingRemove makes "remove" of a path that does not exist a
	// no-op instead of an error.
	IgnoreMissingRemove bool
}

var _ Op = (*JSONPatch)(nil)

var patchOps = map[string][]string{ // op -> required members besides op
	"add":     {"path", "value"},
	"remove":  {"path"},
	"replace": {"path", "value"},
	"move":    {"from", "path"},
	"copy":    {"from", "path"},
	"test":    {"path", "value"},
}

// ParseJSONPatch parses a JSON patch from YAML or JSON: a list of operations.
// Each operation is checked before anything is applied; errors name the
// operation by its index and line.
func ParseJSONPatch(data []byte, source string) (*JSONPatch, error) {
	v, pos, err := document.Loader{Positions: true}.ParseAny(data, source)
	if err != nil {
		return nil, err
	}
	list, ok := v.([]any)
	if !ok {
		line, col := pos.At()
		return nil, &document.LoadError{Source: source, Line: line, Column: col, Err: document.ErrNotMap,
			Msg: fmt.Sprintf("a JSON patch is a list of operations, but this is %s", document.Describe(v))}
	}
	return NewJSONPatch(list, source, pos)
}

// NewJSONPatch checks operations already decoded and makes a patch of them.
// pos may be nil.
func NewJSONPatch(ops []any, source string, pos *document.Pos) (*JSONPatch, error) {
	for i, o := range ops {
		bad := func(format string, args ...any) error {
			line, _ := pos.Item(i).At()
			return &document.LoadError{Source: source, Line: line, Err: document.ErrSyntax,
				Msg: fmt.Sprintf("operation %d: ", i) + fmt.Sprintf(format, args...)}
		}
		m, ok := o.(map[string]any)
		if !ok {
			return nil, bad("an operation is a map with op and path, not %s", document.Describe(o))
		}
		name, _ := m["op"].(string)
		need, ok := patchOps[name]
		if !ok {
			return nil, bad("op %v is not one of add, remove, replace, move, copy, test", m["op"])
		}
		for _, f := range need {
			v, ok := m[f]
			if !ok {
				return nil, bad("%s needs %q", name, f)
			}
			if f == "value" {
				continue
			}
			s, ok := v.(string)
			if !ok {
				return nil, bad("%q must be a JSON pointer string", f)
			}
			if s != "" && s[0] != '/' {
				return nil, bad("%q %q must be empty or start with /", f, s)
			}
		}
		for f := range m {
			if f != "op" && !contains(need, f) {
				return nil, bad("unknown member %q for %s", f, name)
			}
		}
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	p, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return &JSONPatch{ops: p, raw: ops}, nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// Operations returns the operations of the patch as decoded.
func (p *JSONPatch) Operations() []any { return p.raw }

// Apply applies the patch to tree; on error nothing is changed.
func (p *JSONPatch) Apply(tree map[string]any) (map[string]any, error) {
	doc, err := json.Marshal(tree)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPatch, err)
	}
	opts := jsonpatch.NewApplyOptions()
	opts.AllowMissingPathOnRemove = p.IgnoreMissingRemove
	out, err := p.ops.ApplyWithOptions(doc, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPatch, err)
	}
	return decodeJSONMap(out)
}

// MergePatch is an RFC 7386 JSON merge patch, usable as a layer's Op.
type MergePatch struct {
	raw []byte
}

var _ Op = (*MergePatch)(nil)

// NewMergePatch makes a merge patch of a decoded document.
func NewMergePatch(patch map[string]any) (*MergePatch, error) {
	raw, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	return &MergePatch{raw: raw}, nil
}

// Apply applies the merge patch to tree.
func (p *MergePatch) Apply(tree map[string]any) (map[string]any, error) {
	doc, err := json.Marshal(tree)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPatch, err)
	}
	out, err := jsonpatch.MergePatch(doc, p.raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPatch, err)
	}
	return decodeJSONMap(out)
}

func decodeJSONMap(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPatch, err)
	}
	m, ok := document.FromJSON(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: the patched document is %s, not a map", ErrPatch, document.Describe(v))
	}
	return m, nil
}
