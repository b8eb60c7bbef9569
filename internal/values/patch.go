package values

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	jsonpatch "github.com/evanphx/json-patch/v5"
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
	v, pos, err := Loader{Positions: true}.ParseAny(data, source)
	if err != nil {
		return nil, err
	}
	list, ok := v.([]any)
	if !ok {
		return nil, &LoadError{Source: source, Line: lineOf(pos), Column: colOf(pos), Err: ErrNotMap,
			Msg: fmt.Sprintf("a JSON patch is a list of operations, but this is %s", Describe(v))}
	}
	return NewJSONPatch(list, source, pos)
}

// NewJSONPatch checks operations already decoded and makes a patch of them.
// pos may be nil.
func NewJSONPatch(ops []any, source string, pos *Pos) (*JSONPatch, error) {
	for i, o := range ops {
		bad := func(format string, args ...any) error {
			return &LoadError{Source: source, Line: lineOf(pos.Item(i)), Err: ErrSyntax,
				Msg: fmt.Sprintf("operation %d: ", i) + fmt.Sprintf(format, args...)}
		}
		m, ok := o.(map[string]any)
		if !ok {
			return nil, bad("an operation is a map with op and path, not %s", Describe(o))
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

func lineOf(p *Pos) int {
	if p == nil {
		return 0
	}
	return p.Line
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
	m, ok := FromJSON(v).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: the patched document is %s, not a map", ErrPatch, Describe(v))
	}
	return m, nil
}

// FromJSON converts a value decoded by encoding/json with UseNumber into the
// tree's types: integers as int64 (json.Number beyond its range), other
// numbers as float64.
func FromJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = FromJSON(e)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = FromJSON(e)
		}
		return v
	case json.Number:
		return Number(string(v))
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
			return int64(v)
		}
	}
	return v
}

// Number converts JSON number text to the tree's type for it.
func Number(s string) any {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return i
	}
	if isDecimal(s) {
		return json.Number(s)
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	return json.Number(s)
}
