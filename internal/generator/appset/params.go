package appset

import (
	"encoding/json"
	"fmt"
	"strconv"

	"dario.cat/mergo"
)

// jsonValue converts a tree value to the types the controller holds after
// decoding JSON: maps, lists, strings, bools, nil and float64 numbers. The
// result shares nothing with v.
func jsonValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = jsonValue(e)
		}
		return out
	case map[string]string:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = e
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = jsonValue(e)
		}
		return out
	case []map[string]any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = jsonValue(e)
		}
		return out
	case int64:
		return float64(v)
	case int:
		return float64(v)
	case int32:
		return float64(v)
	case uint64:
		return float64(v)
	case float32:
		return float64(v)
	case json.Number:
		if f, err := strconv.ParseFloat(string(v), 64); err == nil {
			return f
		}
		return string(v)
	}
	return v
}

// jsonMap is jsonValue for a map.
func jsonMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return jsonValue(m).(map[string]any)
}

// flatten flattens a parameter set the way the controller does for plain
// mode and for selectors: nested maps and lists become dotted keys ("a.b",
// "list.0"), empty maps and lists vanish, and every leaf is formatted with
// Go's %v. Maps of strings (a plugin's values in goTemplate mode) are
// flattened as maps with stringMaps, as since Argo CD 3.4, and kept as one
// leaf without, as before; a plugin's input parameters are always one leaf.
func flatten(m map[string]any, stringMaps bool) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		flattenInto(out, k, v, stringMaps, true)
	}
	return out
}

// flattenInto adds v at key. inMaps is whether every container above v is
// a map: 3.4's normalization reaches maps of strings only through maps.
func flattenInto(out map[string]string, key string, v any, stringMaps, inMaps bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			flattenInto(out, key+"."+k, e, stringMaps, inMaps)
		}
	case []any:
		for i, e := range v {
			flattenInto(out, key+"."+strconv.Itoa(i), e, stringMaps, false)
		}
	case map[string]string:
		if !stringMaps || !inMaps {
			out[key] = formatValue(v)
			return
		}
		for k, e := range v {
			out[key+"."+k] = e
		}
	default:
		out[key] = formatValue(v)
	}
}

// formatValue formats a leaf as the controller's fmt.Sprintf("%v") does.
func formatValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprintf("%v", v)
}

// stringMap formats every value of m with %v, as the controller's plain
// mode matrix and merge do.
func stringMap(m map[string]any) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = formatValue(v)
	}
	return out
}

// combineMatrix combines one set of each matrix child. In goTemplate mode
// the sets are deep-merged and the first child wins; in plain mode both are
// formatted as strings and a key with two different values is an error.
func combineMatrix(first, second map[string]any, goTemplate bool) (map[string]any, error) {
	if goTemplate {
		out := map[string]any{}
		if err := mergo.Merge(&out, copyMap(second), mergo.WithOverride); err != nil {
			return nil, fmt.Errorf("merging the parameter sets: %w", err)
		}
		if err := mergo.Merge(&out, copyMap(first), mergo.WithOverride); err != nil {
			return nil, fmt.Errorf("merging the parameter sets: %w", err)
		}
		return out, nil
	}
	a, b := stringMap(first), stringMap(second)
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if cur, ok := a[k]; ok && cur != v {
			return nil, fmt.Errorf("both children set the parameter %q, to %q and %q; in plain mode (goTemplate: false) a matrix cannot combine different values of one key: rename one of them", k, cur, v)
		}
		out[k] = v
	}
	return out, nil
}

// overrideSet merges an override set of a merge generator into a base set:
// goTemplate mode deep-merges with the override winning; plain mode copies
// the override's keys over the base's, values as they are, as the
// controller's maps.Copy does.
func overrideSet(base, override map[string]any, goTemplate bool) (map[string]any, error) {
	out := copyMap(base)
	if goTemplate {
		if err := mergo.Merge(&out, copyMap(override), mergo.WithOverride); err != nil {
			return nil, fmt.Errorf("merging the parameter sets: %w", err)
		}
		return out, nil
	}
	for k, v := range override {
		out[k] = copyParam(v)
	}
	return out, nil
}

// mergeKey is the identity of a parameter set under merge keys: the JSON of
// the values of the keys, as the controller computes it.
func mergeKey(set map[string]any, keys []string) (string, error) {
	k := make(map[string]any, len(keys))
	for _, key := range keys {
		k[key] = set[key]
	}
	data, err := json.Marshal(k)
	if err != nil {
		return "", fmt.Errorf("encoding the merge key: %w", err)
	}
	return string(data), nil
}

func copyMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return copyParam(m).(map[string]any)
}

// copyParam deep-copies a parameter value, keeping the Go types the
// controller holds (maps of strings, plugin parameters), so that merging
// copies behaves as merging the controller's values does.
func copyParam(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = copyParam(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyParam(e)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(v))
		for k, e := range v {
			out[k] = e
		}
		return out
	}
	return v
}

// rawJSON has the shape of the apiextensions JSON type the controller keeps
// each of a plugin generator's input parameters in: JSON text. Templates
// see it as the controller's do: printed, it is a struct of bytes
// ("{[34 100 101 118 34]}" for "dev"); toJson and toYaml give the value.
// It must have no String method, as the controller's type has none on
// values.
type rawJSON struct {
	Raw []byte
}

// MarshalJSON returns the JSON text, as the controller's type does.
func (j rawJSON) MarshalJSON() ([]byte, error) {
	if len(j.Raw) > 0 {
		return j.Raw, nil
	}
	return []byte("null"), nil
}

// pluginParameters is the controller's PluginParameters: a map of JSON texts.
type pluginParameters map[string]rawJSON

// newPluginParameters encodes each input parameter as the API server does
// (compact JSON, sorted keys, HTML characters escaped).
func newPluginParameters(in map[string]any) (pluginParameters, error) {
	if in == nil {
		return nil, nil
	}
	out := make(pluginParameters, len(in))
	for k, v := range in {
		data, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("input.parameters.%s: %w", k, err)
		}
		out[k] = rawJSON{Raw: data}
	}
	return out, nil
}
