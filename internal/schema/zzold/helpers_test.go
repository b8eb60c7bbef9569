package schema_test

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// yamlTree decodes a YAML document into a value tree as internal/values
// holds it: int64, json.Number for integers beyond int64, float64 (NaN and
// infinities included, so tests can feed them), string, bool, nil, []any and
// map[string]any. An empty document is an empty tree.
func yamlTree(src string) (map[string]any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return map[string]any{}, nil
	}
	v, err := nodeValue(doc.Content[0], 0)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("document is %T, not a mapping", v)
	}
	return m, nil
}

var decimal = regexp.MustCompile(`^[-+]?[0-9]+$`)

func nodeValue(n *yaml.Node, depth int) (any, error) {
	if depth > 200 {
		return nil, fmt.Errorf("too deep")
	}
	switch n.Kind {
	case yaml.AliasNode:
		return nil, fmt.Errorf("aliases are not supported in test input")
	case yaml.SequenceNode:
		list := []any{}
		for _, c := range n.Content {
			v, err := nodeValue(c, depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		return list, nil
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := nodeValue(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	}
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		err := n.Decode(&b)
		return b, err
	case "!!int", "!!float":
		if n.ShortTag() == "!!int" || decimal.MatchString(n.Value) {
			var b big.Int
			if _, ok := b.SetString(strings.TrimPrefix(n.Value, "+"), 0); ok {
				if b.IsInt64() {
					return b.Int64(), nil
				}
				return json.Number(b.String()), nil
			}
		}
		var f float64
		err := n.Decode(&f)
		return f, err
	}
	return n.Value, nil
}

// dump writes a tree deterministically, showing leaf types: floats always
// carry a point or exponent, json.Number is marked.
func dump(v any) string {
	var b strings.Builder
	dumpTo(&b, v, "")
	return b.String()
}

func dumpTo(b *strings.Builder, v any, ind string) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			b.WriteString("{}\n")
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.WriteString(ind + strconv.Quote(k) + ":")
			writeChild(b, x[k], ind)
		}
	case []any:
		if len(x) == 0 {
			b.WriteString("[]\n")
			return
		}
		for _, e := range x {
			b.WriteString(ind + "-")
			writeChild(b, e, ind)
		}
	default:
		b.WriteString(leaf(v) + "\n")
	}
}

func writeChild(b *strings.Builder, v any, ind string) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 {
			b.WriteString("\n")
			dumpTo(b, v, ind+"  ")
			return
		}
	case []any:
		if len(x) > 0 {
			b.WriteString("\n")
			dumpTo(b, v, ind+"  ")
			return
		}
	}
	b.WriteString(" ")
	dumpTo(b, v, ind+"  ")
}

func leaf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(x)
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eIN") {
			s += ".0"
		}
		return s
	case json.Number:
		return string(x) + " (json.Number)"
	}
	return fmt.Sprint(v)
}
