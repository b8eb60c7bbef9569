package document

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Format is an output format for trees.
type Format string

// Output formats.
const (
	YAML Format = "yaml"
	JSON Format = "json"
)

// ParseFormat checks a user's -o value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case YAML, JSON:
		return f, nil
	}
	return "", fmt.Errorf("unknown output format %q: use yaml or json", s)
}

// Encode writes v (a tree or any value of one) in format f. Map keys are
// sorted; integers are written exactly.
func Encode(w io.Writer, v any, f Format) error {
	switch f {
	case JSON:
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("encoding JSON: %w", err)
		}
		return nil
	case YAML, "":
		n, err := yamlNode(v)
		if err != nil {
			return err
		}
		enc := yaml.NewEncoder(w)
		enc.SetIndent(2)
		if err := enc.Encode(n); err != nil {
			return fmt.Errorf("encoding YAML: %w", err)
		}
		return enc.Close()
	}
	return fmt.Errorf("unknown output format %q: use yaml or json", f)
}

// EncodeValue writes any Go value (a struct with json tags, say) as YAML:
// its JSON, read back as a tree, so the keys are the JSON names and
// integers stay exact.
func EncodeValue(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	tree, _, err := Loader{JSON: true, Limits: Limits{MaxBytes: int64(len(b)) + 1}}.ParseAny(b, "output")
	if err != nil {
		return err
	}
	return Encode(w, tree, YAML)
}

// MarshalYAML returns the YAML text of v, as Encode writes it.
func MarshalYAML(v any) ([]byte, error) {
	var b bytes.Buffer
	err := Encode(&b, v, YAML)
	return b.Bytes(), err
}

func yamlNode(v any) (*yaml.Node, error) {
	switch v := v.(type) {
	case nil:
		return scalarNode("!!null", "null"), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		n := &yaml.Node{Kind: yaml.MappingNode, Content: make([]*yaml.Node, 0, 2*len(v))}
		for _, k := range keys {
			c, err := yamlNode(v[k])
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, stringNode(k), c)
		}
		return n, nil
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode, Content: make([]*yaml.Node, 0, len(v))}
		for _, e := range v {
			c, err := yamlNode(e)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, c)
		}
		return n, nil
	case string:
		return stringNode(v), nil
	case bool:
		return scalarNode("!!bool", strconv.FormatBool(v)), nil
	case int64:
		return scalarNode("!!int", strconv.FormatInt(v, 10)), nil
	case int:
		return scalarNode("!!int", strconv.Itoa(v)), nil
	case json.Number:
		if isDecimal(string(v)) {
			// No explicit tag: YAML readers take a huge integer for a
			// float, as they would anyway; strata reads it back exactly.
			return scalarNode("", string(v)), nil
		}
		f, err := v.Float64()
		if err != nil {
			return nil, fmt.Errorf("encoding YAML: invalid number %q", string(v))
		}
		return yamlNode(f)
	case float64:
		switch {
		case math.IsInf(v, 1):
			return scalarNode("!!float", ".inf"), nil
		case math.IsInf(v, -1):
			return scalarNode("!!float", "-.inf"), nil
		case math.IsNaN(v):
			return scalarNode("!!float", ".nan"), nil
		}
		// Untagged, as yaml.Marshal writes floats: 2.0 prints as 2.
		return scalarNode("", strconv.FormatFloat(v, 'g', -1, 64)), nil
	}
	// Values outside the tree model (structs of callers): let yaml.v3 do it.
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding YAML: %w", err)
	}
	return &n, nil
}

func scalarNode(tag, value string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
}

func stringNode(s string) *yaml.Node {
	n := scalarNode("!!str", s)
	if yaml11Bool(s) {
		// YAML 1.1 readers (Helm's among them) take these for booleans.
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

func yaml11Bool(s string) bool {
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off":
		return true
	}
	return false
}

// EncodeOrdered writes a map whose keys keep the given order.
func EncodeOrdered(w io.Writer, keys []string, vals []any, f Format) error {
	switch f {
	case JSON:
		var b bytes.Buffer
		b.WriteString("{")
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n  ")
			if err := enc.Encode(k); err != nil {
				return err
			}
			b.Truncate(b.Len() - 1) // Encode ends with a newline
			b.WriteString(": ")
			if err := enc.Encode(vals[i]); err != nil {
				return fmt.Errorf("encoding JSON for %s: %w", k, err)
			}
			b.Truncate(b.Len() - 1)
		}
		if len(keys) > 0 {
			b.WriteString("\n")
		}
		b.WriteString("}\n")
		_, err := w.Write(b.Bytes())
		return err
	case YAML, "":
		n := &yaml.Node{Kind: yaml.MappingNode}
		for i, k := range keys {
			c, err := yamlNode(vals[i])
			if err != nil {
				return err
			}
			n.Content = append(n.Content, stringNode(k), c)
		}
		enc := yaml.NewEncoder(w)
		enc.SetIndent(2)
		if err := enc.Encode(n); err != nil {
			return fmt.Errorf("encoding YAML: %w", err)
		}
		return enc.Close()
	}
	return fmt.Errorf("unknown output format %q: use yaml or json", f)
}

// EncodeJSONValue writes any Go value as indented JSON, without escaping HTML.
func EncodeJSONValue(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// SizeExceeds reports whether v, written as YAML or JSON, takes more than
// max bytes, counting only what every encoding writes (the keys, the
// strings and numbers, a byte between values): a lower bound, computed
// without building anything and stopped as soon as it passes max. A
// caller with a budget for the output checks it before encoding a tree
// that may have come from aliases, as encoding costs many times the
// output.
func SizeExceeds(v any, max int64) bool {
	n := int64(0)
	var walk func(v any) bool
	walk = func(v any) bool {
		n++
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				n += int64(len(k)) + 1
				if n > max || walk(e) {
					return true
				}
			}
		case []any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		case string:
			n += int64(len(v))
		case json.Number:
			n += int64(len(v))
		}
		return n > max
	}
	return walk(v)
}
