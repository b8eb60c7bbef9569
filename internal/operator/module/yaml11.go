package module

import (
	"bytes"

	"go.yaml.in/yaml/v3"
)

// yaml11Bools are the plain scalars YAML 1.1 reads as booleans and YAML 1.2
// (strata's reader) as strings. addon-operator reads values.yaml files with
// a YAML 1.1 reader (sigs.k8s.io/yaml over yaml.v2), so `debug: yes` there
// is true; they are made booleans here too.
var yaml11Bools = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
	"n": false, "N": false, "no": false, "No": false, "NO": false, "off": false, "Off": false, "OFF": false,
}

// maxYAML11Visits bounds the walk (aliases are followed; the loader has
// already bounded what they expand to).
const maxYAML11Visits = 4 << 20

// yaml11Booleans turns the values of tree written as unquoted YAML 1.1
// booleans in data (a single YAML document) into booleans, in place. Map
// keys are left alone. A file it cannot follow is left as read.
func yaml11Booleans(data []byte, tree map[string]any) {
	if tree == nil {
		return
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil || len(doc.Content) == 0 {
		return
	}
	var next yaml.Node
	if dec.Decode(&next) == nil {
		return // several documents: leave them as read
	}
	visits := 0
	var walk func(n *yaml.Node, v any) any
	walk = func(n *yaml.Node, v any) any {
		if visits++; visits > maxYAML11Visits {
			return v
		}
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		switch n.Kind {
		case yaml.ScalarNode:
			if s, ok := v.(string); ok && n.Style == 0 && n.Tag == "!!str" && s == n.Value {
				if b, ok := yaml11Bools[s]; ok {
					return b
				}
			}
		case yaml.MappingNode:
			m, ok := v.(map[string]any)
			if !ok {
				return v
			}
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if k.Kind != yaml.ScalarNode || k.Value == "<<" {
					continue
				}
				if cur, ok := m[k.Value]; ok {
					m[k.Value] = walk(n.Content[i+1], cur)
				}
			}
		case yaml.SequenceNode:
			l, ok := v.([]any)
			if !ok || len(l) != len(n.Content) {
				return v
			}
			for i, c := range n.Content {
				l[i] = walk(c, l[i])
			}
		}
		return v
	}
	walk(doc.Content[0], tree)
}
