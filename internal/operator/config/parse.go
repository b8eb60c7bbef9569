package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/strata-dev/strata/internal/document"
)

// ErrFalseSection is wrapped by the error for a module section set to
// "false", an old way to disable a module that strata refuses.
var ErrFalseSection = errors.New(`module section set to "false"`)

// Limits bound a config document; a zero field takes its default.
type Limits struct {
	MaxBytes int64 // the whole document; default DefaultMaxSize
	MaxKeys  int   // top-level keys; default 10 000
}

func (l Limits) maxBytes() int64 {
	if l.MaxBytes <= 0 {
		return DefaultMaxSize
	}
	return l.MaxBytes
}

func (l Limits) maxKeys() int {
	if l.MaxKeys <= 0 {
		return 10_000
	}
	return l.MaxKeys
}

// Parse reads a config document shaped like a ConfigMap's data, or a whole
// ConfigMap manifest (its data is the config). source names it in errors,
// which are *document.LoadErrors with the line. An empty document is an
// empty config.
func Parse(data []byte, source string, lim Limits) (*Config, error) {
	max := lim.maxBytes()
	loader := document.Loader{Positions: true, Limits: document.Limits{MaxBytes: max}}
	tree, pos, err := loader.Parse(data, source)
	if err != nil {
		return nil, err
	}
	if len(tree) > lim.maxKeys() {
		return nil, &document.LoadError{Source: source, Line: 1, Err: document.ErrTooLarge,
			Msg: fmt.Sprintf("%d keys, more than the limit of %d", len(tree), lim.maxKeys())}
	}
	if isConfigMap(tree) {
		// addon-operator's own ConfigMap manifest: its data is the config.
		data, ok := tree["data"].(map[string]any)
		if !ok && tree["data"] != nil {
			line, col := pos.Key("data").At()
			return nil, &document.LoadError{Source: source, Line: line, Column: col, Err: document.ErrSyntax,
				Msg: fmt.Sprintf("data: a ConfigMap's data is a map of keys (global, <moduleKey>, <moduleKey>Enabled), not %s", document.Describe(tree["data"]))}
		}
		tree, pos = data, pos.Key("data")
		if tree == nil {
			tree, pos = map[string]any{}, &document.Pos{}
		}
		if len(tree) > lim.maxKeys() {
			return nil, &document.LoadError{Source: source, Line: 1, Err: document.ErrTooLarge,
				Msg: fmt.Sprintf("%d keys, more than the limit of %d", len(tree), lim.maxKeys())}
		}
	}
	lines := splitLines(data)
	c := Empty(source)
	for _, k := range slices.Sorted(maps.Keys(tree)) {
		v := tree[k]
		kpos := pos.Key(k)
		line, col := kpos.At()
		bad := func(format string, args ...any) error {
			return &document.LoadError{Source: source, Line: line, Column: col, Err: document.ErrSyntax,
				Msg: k + ": " + fmt.Sprintf(format, args...)}
		}
		kind, key := classify(k)
		if kind == keyEnabled {
			if !validKey(key) {
				return nil, bad("not a module's enabled flag: write <moduleKey>Enabled with the module name in camelCase (cert-manager → certManagerEnabled)")
			}
			b, err := parseFlag(v)
			if err != nil {
				return nil, bad("%v", err)
			}
			c.Enabled[key] = b
			continue
		}
		if kind == keyMaintenance {
			if !validKey(key) {
				return nil, bad("not a module's maintenance state: write <moduleKey>%s with the module name in camelCase (cert-manager → certManager%s)", MaintenanceSuffix, MaintenanceSuffix)
			}
			u, err := parseMaintenance(v)
			if err != nil {
				return nil, bad("%v", err)
			}
			c.Maintenance[key] = u
			continue
		}
		if kind == keyModule && !validKey(k) {
			return nil, bad("not a module's values key: keys are global, a module name in camelCase (cert-manager → certManager) or <moduleKey>Enabled")
		}
		s := &Section{Source: sectionSource(source, k), Line: line}
		switch v := v.(type) {
		case nil:
			s.Values = map[string]any{}
		case map[string]any:
			s.Values, s.Pos = v, kpos
		case string:
			text := strings.TrimSpace(v)
			if text == "" {
				// An empty section, as addon-operator reads it (no values).
				s.Values = map[string]any{}
				break
			}
			if kind == keyModule && (text == "false" || text == "true") {
				return nil, &document.LoadError{Source: source, Line: line, Column: col, Err: ErrFalseSection,
					Msg: fmt.Sprintf("%s: a module section holds the module's values; to enable or disable the module write %s%s: %q instead", k, k, EnabledSuffix, text)}
			}
			first := line
			if blockScalar(lines, line) {
				first = line + 1
			}
			sub := document.Loader{Positions: true, Limits: document.Limits{MaxBytes: max}, FirstLine: first}
			m, mpos, err := sub.Parse([]byte(v), source)
			if err != nil {
				var le *document.LoadError
				if errors.As(err, &le) {
					le.Msg = "in section " + k + ": " + le.Msg
					if first != line && le.Line == 0 {
						le.Line = first
					}
					return nil, le
				}
				return nil, bad("%v", err)
			}
			s.Values, s.Pos = m, mpos
		default:
			if kind == keyModule {
				if b, ok := v.(bool); ok && !b {
					return nil, &document.LoadError{Source: source, Line: line, Column: col, Err: ErrFalseSection,
						Msg: fmt.Sprintf("%s: a module section holds the module's values; to disable the module write %s%s: \"false\" instead", k, k, EnabledSuffix)}
				}
			}
			return nil, bad("must be YAML text holding a map of values (or a map), not %s", document.Describe(v))
		}
		if kind == keyGlobal {
			c.Global = s
		} else {
			c.Modules[key] = s
		}
	}
	return c, nil
}

// isConfigMap reports whether a config document is a whole ConfigMap
// manifest (apiVersion v1, kind ConfigMap) rather than its data. No module
// is called "kind", so a data-shaped file cannot be taken for one.
func isConfigMap(tree map[string]any) bool {
	return tree["kind"] == "ConfigMap" && tree["apiVersion"] == "v1"
}

// validKey reports whether k is a camelCase module values key: it starts
// with a lower-case letter and holds letters and digits only.
func validKey(k string) bool {
	if k == "" || k[0] < 'a' || k[0] > 'z' {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func parseFlag(v any) (bool, error) {
	switch v := v.(type) {
	case bool:
		return v, nil
	case string:
		switch strings.TrimSpace(v) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return false, fmt.Errorf("must be \"true\" or \"false\", not %q", document.Clip(v, 40))
	}
	return false, fmt.Errorf("must be \"true\" or \"false\", not %s", document.Describe(v))
}

func splitLines(data []byte) [][]byte { return bytes.Split(data, []byte("\n")) }

// blockScalar reports whether the value of the key on line (1-based) is a
// block scalar (| or >), whose text starts on the next line.
func blockScalar(lines [][]byte, line int) bool {
	if line < 1 || line > len(lines) {
		return false
	}
	l := lines[line-1]
	i := bytes.IndexByte(l, ':')
	if i < 0 {
		return false
	}
	rest := bytes.TrimSpace(l[i+1:])
	return len(rest) > 0 && (rest[0] == '|' || rest[0] == '>')
}

// encodeTo writes c in the ConfigMap's data shape. When orig (the document
// c's predecessor was read from) is given, keys whose value did not change
// keep their text, comments and order; changed sections are rewritten as
// block text, new keys are added at the end and removed keys dropped.
func encodeTo(w io.Writer, orig []byte, c *Config) error {
	root := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	var doc *yaml.Node
	if len(bytes.TrimSpace(orig)) > 0 {
		var d yaml.Node
		if err := yaml.Unmarshal(orig, &d); err != nil {
			return fmt.Errorf("reading %s to update it: %w", c.Source, err)
		}
		if len(d.Content) == 1 && d.Content[0].Kind == yaml.MappingNode {
			doc, root = &d, d.Content[0]
			if data := configMapData(root); data != nil {
				root = data // a ConfigMap manifest: the config is its data
			}
		}
	}
	if doc == nil {
		doc = &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}
	}
	old, err := parseNodes(root, c.Source)
	if err != nil {
		return err
	}
	want := map[string]*yaml.Node{}
	var order []string
	add := func(k string, n *yaml.Node) { want[k] = n; order = append(order, k) }
	if c.Global != nil {
		n, err := sectionNode(c.Global.Values)
		if err != nil {
			return err
		}
		add(GlobalKey, n)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Modules)) {
		n, err := sectionNode(c.Modules[k].Values)
		if err != nil {
			return err
		}
		add(k, n)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Enabled)) {
		add(k+EnabledSuffix, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: fmt.Sprint(c.Enabled[k])})
	}
	for _, k := range slices.Sorted(maps.Keys(c.Maintenance)) {
		add(k+MaintenanceSuffix, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: maintenanceText(c.Maintenance[k])})
	}
	var content []*yaml.Node
	done := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i].Value
		n, keep := want[k]
		if !keep {
			continue // removed
		}
		done[k] = true
		if prev, ok := old[k]; ok && prev.same(c, k) {
			content = append(content, root.Content[i], root.Content[i+1])
			continue
		}
		content = append(content, root.Content[i], n)
	}
	for _, k := range order {
		if !done[k] {
			content = append(content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, want[k])
		}
	}
	root.Content = content
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encoding %s: %w", c.Source, err)
	}
	return enc.Close()
}

// configMapData returns the mapping node of a ConfigMap manifest's data,
// made (empty) when the manifest has none, or nil when m is not a
// ConfigMap manifest.
func configMapData(m *yaml.Node) *yaml.Node {
	field := func(k string) (*yaml.Node, int) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == k {
				return m.Content[i+1], i + 1
			}
		}
		return nil, -1
	}
	kind, _ := field("kind")
	apiVersion, _ := field("apiVersion")
	if kind == nil || apiVersion == nil || kind.Value != "ConfigMap" || apiVersion.Value != "v1" {
		return nil
	}
	data, i := field("data")
	switch {
	case data == nil:
		data = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "data"}, data)
	case data.Kind != yaml.MappingNode: // data: null or {}-less
		data = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		m.Content[i] = data
	}
	return data
}

// nodeValue is a key's value in the original document, parsed.
type nodeValue struct {
	section     map[string]any
	flag        *bool
	maintenance *bool
}

func (v nodeValue) same(c *Config, k string) bool {
	kind, key := classify(k)
	if kind == keyEnabled {
		b, ok := c.Enabled[key]
		return ok && v.flag != nil && *v.flag == b
	}
	if kind == keyMaintenance {
		u, ok := c.Maintenance[key]
		return ok && v.maintenance != nil && *v.maintenance == u
	}
	return v.section != nil && Equal(&Config{Global: &Section{Values: v.section}}, &Config{Global: &Section{Values: nonNil(c.Section(key))}})
}

// parseNodes reads the values of a mapping node's keys, to tell unchanged
// ones; keys it cannot read count as changed.
func parseNodes(root *yaml.Node, source string) (map[string]nodeValue, error) {
	out := map[string]nodeValue{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, vn := root.Content[i].Value, root.Content[i+1]
		var one yaml.Node
		one.Kind = yaml.DocumentNode
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{root.Content[i], vn}}
		one.Content = []*yaml.Node{m}
		data, err := yaml.Marshal(&one)
		if err != nil {
			continue
		}
		c, err := Parse(data, source, Limits{})
		if err != nil {
			continue
		}
		kind, key := classify(k)
		if kind == keyEnabled {
			if b, ok := c.Enabled[key]; ok {
				out[k] = nodeValue{flag: &b}
			}
			continue
		}
		if kind == keyMaintenance {
			if u, ok := c.Maintenance[key]; ok {
				out[k] = nodeValue{maintenance: &u}
			}
			continue
		}
		out[k] = nodeValue{section: nonNil(c.Section(key))}
	}
	return out, nil
}

// sectionNode encodes a section as block text, as in a ConfigMap.
func sectionNode(v map[string]any) (*yaml.Node, error) {
	if len(v) == 0 {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.DoubleQuotedStyle, Value: "{}"}, nil
	}
	data, err := document.MarshalYAML(v)
	if err != nil {
		return nil, err
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Style: yaml.LiteralStyle, Value: string(data)}, nil
}
