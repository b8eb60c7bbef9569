package appset

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/strata-dev/strata/internal/document"
)

// yaml11 reads YAML the way kubectl and the argocd CLI read manifests
// (sigs.k8s.io/yaml, which decodes with a YAML 1.1 library and converts the
// result to JSON): an unquoted y, yes, on, n, no, off (in any of their
// usual capitalizations) is a boolean, 012 is octal (10), 1_000 is 1000,
// 0b101 is 5, and a map key that reads as a number or boolean becomes its
// JSON text ("true", "10"). The document layer reads YAML 1.2; this reader
// keeps its positions (document.Pos) so errors still name file:line.
type yaml11 struct {
	source   string
	lim      document.Limits
	nodes    int
	position bool
}

// parseYAML11 parses every non-empty document of a YAML stream (or one
// JSON document) with YAML 1.1 scalars. positions keeps the position of
// every node.
func parseYAML11(data []byte, source string, lim document.Limits, positions bool) ([]document.Document, error) {
	if int64(len(data)) > lim.MaxBytes {
		return nil, &document.LoadError{Source: source, Err: document.ErrTooLarge, Msg: fmt.Sprintf("document is larger than the limit of %d bytes", lim.MaxBytes)}
	}
	text := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\ufeff")))
	if len(text) > 0 && (text[0] == '{' || text[0] == '[') && json.Valid(text) {
		// JSON reads the same in YAML 1.1 and 1.2; the document layer
		// gives the better errors and positions for it.
		return document.Loader{Positions: positions, Limits: lim, JSON: true}.ParseDocuments(data, source)
	}
	if !utf8.Valid(data) {
		// The document layer reports the place.
		return document.Loader{Positions: positions, Limits: lim}.ParseDocuments(data, source)
	}
	r := &yaml11{source: source, lim: lim, position: positions}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []document.Document
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			// The syntax is YAML's, whichever version: the document
			// layer's error names the line.
			if _, derr := (document.Loader{Limits: lim}).ParseDocuments(data, source); derr != nil {
				return nil, derr
			}
			return nil, &document.LoadError{Source: source, Line: 1, Err: document.ErrSyntax, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
		}
		if len(doc.Content) == 0 {
			continue
		}
		root := doc.Content[0]
		v, pos, err := r.node(root, 0)
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		if pos == nil {
			pos = &document.Pos{Line: root.Line, Column: root.Column}
		}
		docs = append(docs, document.Document{Value: v, Pos: pos})
	}
}

// parseOneYAML11 parses a stream holding at most one document; empty is nil.
func parseOneYAML11(data []byte, source string, lim document.Limits, positions bool) (any, *document.Pos, error) {
	docs, err := parseYAML11(data, source, lim, positions)
	if err != nil {
		return nil, nil, err
	}
	switch len(docs) {
	case 0:
		return nil, nil, nil
	case 1:
		return docs[0].Value, docs[0].Pos, nil
	}
	return nil, nil, &document.LoadError{Source: source, Line: lineOf(docs[1].Pos), Err: document.ErrSyntax,
		Msg: "a second YAML document starts here; this input holds exactly one document"}
}

func (r *yaml11) errorf(n *yaml.Node, sentinel error, format string, args ...any) error {
	return &document.LoadError{Source: r.source, Line: n.Line, Column: n.Column, Err: sentinel, Msg: fmt.Sprintf(format, args...)}
}

func (r *yaml11) pos(n *yaml.Node) *document.Pos {
	if !r.position {
		return nil
	}
	return &document.Pos{Line: n.Line, Column: n.Column}
}

func (r *yaml11) node(n *yaml.Node, depth int) (any, *document.Pos, error) {
	r.nodes++
	if r.nodes > r.lim.MaxNodes {
		return nil, nil, r.errorf(n, document.ErrTooLarge, "document expands to more than %d nodes (aliases count each time they are used)", r.lim.MaxNodes)
	}
	if depth > r.lim.MaxDepth {
		return nil, nil, r.errorf(n, document.ErrTooDeep, "maps and lists are nested more than %d levels deep", r.lim.MaxDepth)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, nil, r.errorf(n, document.ErrSyntax, "unknown alias %q", n.Value)
		}
		v, p, err := r.node(n.Alias, depth+1)
		if p != nil {
			p = &document.Pos{Line: n.Line, Column: n.Column, Keys: p.Keys, Items: p.Items}
		}
		return v, p, err
	case yaml.MappingNode:
		return r.mapping(n, depth)
	case yaml.SequenceNode:
		list := make([]any, 0, len(n.Content))
		pos := r.pos(n)
		for _, item := range n.Content {
			v, p, err := r.node(item, depth+1)
			if err != nil {
				return nil, nil, err
			}
			list = append(list, v)
			if pos != nil {
				pos.Items = append(pos.Items, p)
			}
		}
		return list, pos, nil
	case yaml.ScalarNode:
		v, err := r.scalar(n)
		return v, r.pos(n), err
	}
	return nil, nil, r.errorf(n, document.ErrSyntax, "unsupported YAML node")
}

func (r *yaml11) mapping(n *yaml.Node, depth int) (any, *document.Pos, error) {
	m := make(map[string]any, len(n.Content)/2)
	pos := r.pos(n)
	if pos != nil {
		pos.Keys = make(map[string]*document.Pos, len(n.Content)/2)
	}
	lines := map[string]int{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if kn.Kind == yaml.ScalarNode && kn.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 && kn.Value == "<<" {
			merges = append(merges, vn)
			continue
		}
		key, err := r.key(kn)
		if err != nil {
			return nil, nil, err
		}
		if first, dup := lines[key]; dup {
			return nil, nil, r.errorf(kn, document.ErrDuplicateKey, "duplicate key %q (first defined at line %d); remove one of them", key, first)
		}
		lines[key] = kn.Line
		v, p, err := r.node(vn, depth+1)
		if err != nil {
			return nil, nil, err
		}
		m[key] = v
		if pos != nil {
			if p == nil {
				p = &document.Pos{}
			}
			p.Line, p.Column = kn.Line, kn.Column
			pos.Keys[key] = p
		}
	}
	for _, mn := range merges {
		sources := []*yaml.Node{mn}
		if mn.Kind == yaml.SequenceNode {
			sources = mn.Content
		}
		for _, src := range sources {
			v, p, err := r.node(src, depth+1)
			if err != nil {
				return nil, nil, err
			}
			sm, ok := v.(map[string]any)
			if !ok {
				return nil, nil, r.errorf(src, document.ErrSyntax, "a merge key (<<) must refer to a map or a list of maps, not %s", document.Describe(v))
			}
			for k, sv := range sm {
				if _, set := m[k]; set {
					continue
				}
				m[k] = sv
				if pos != nil {
					pos.Keys[k] = p.Key(k)
				}
			}
		}
	}
	return m, pos, nil
}

// key is a map key as sigs.k8s.io/yaml makes it a JSON key.
func (r *yaml11) key(kn *yaml.Node) (string, error) {
	for kn.Kind == yaml.AliasNode && kn.Alias != nil {
		kn = kn.Alias
	}
	if kn.Kind != yaml.ScalarNode {
		return "", r.errorf(kn, document.ErrSyntax, "a map key must be a plain value, not a map or list")
	}
	v, err := r.scalar(kn)
	if err != nil {
		return "", err
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 32), nil
	case bool:
		return strconv.FormatBool(v), nil
	}
	return "", r.errorf(kn, document.ErrSyntax, "map key %q reads as %s, which JSON cannot hold as a key (YAML 1.1, as kubectl reads it); quote it", kn.Value, document.Describe(v))
}

var (
	yaml11Float = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
	yaml11Bools = map[string]bool{
		"y": true, "Y": true, "yes": true, "Yes": true, "YES": true,
		"true": true, "True": true, "TRUE": true, "on": true, "On": true, "ON": true,
		"n": false, "N": false, "no": false, "No": false, "NO": false,
		"false": false, "False": false, "FALSE": false, "off": false, "Off": false, "OFF": false,
	}
	yaml11Nulls = map[string]bool{"": true, "~": true, "null": true, "Null": true, "NULL": true}
)

// scalar resolves a scalar as go-yaml v2 does (YAML 1.1), with the types
// the JSON conversion leaves: string, bool, int64 (json.Number beyond it),
// float64, nil.
func (r *yaml11) scalar(n *yaml.Node) (any, error) {
	tag := ""
	if n.Style&yaml.TaggedStyle != 0 {
		tag = n.ShortTag()
	}
	quoted := n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0
	switch {
	case tag == "!!str":
		return n.Value, nil
	case tag == "!!binary":
		data, err := base64.StdEncoding.DecodeString(n.Value)
		if err != nil {
			return nil, r.errorf(n, document.ErrSyntax, "!!binary value is not base64")
		}
		return string(data), nil
	case tag != "" && tag != "!!bool" && tag != "!!int" && tag != "!!float" && tag != "!!null" && tag != "!!timestamp":
		return n.Value, nil // an application tag: its text
	case quoted && tag == "":
		return n.Value, nil
	}
	v, kind := resolve11(n.Value)
	if tag == "!!float" && kind == "int" {
		switch i := v.(type) {
		case int64:
			v, kind = float64(i), "float"
		case json.Number:
			f, _ := strconv.ParseFloat(string(i), 64)
			v, kind = f, "float"
		}
	}
	if tag != "" && tag != "!!"+kind && !(tag == "!!timestamp" && kind == "str") {
		return nil, r.errorf(n, document.ErrSyntax, "cannot read %q as %s", n.Value, tag)
	}
	if f, ok := v.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
		return nil, r.errorf(n, document.ErrSyntax, "%s reads as %v, which JSON cannot hold (as kubectl reads YAML); quote it to keep the text", n.Value, f)
	}
	return v, nil
}

// resolve11 resolves a plain scalar by go-yaml v2's rules; kind is bool,
// null, int, float or str (timestamps stay strings, as v2 leaves them when
// decoding into interface{}).
func resolve11(in string) (any, string) {
	if b, ok := yaml11Bools[in]; ok {
		return b, "bool"
	}
	if yaml11Nulls[in] {
		return nil, "null"
	}
	switch in {
	case ".nan", ".NaN", ".NAN":
		return math.NaN(), "float"
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return math.Inf(1), "float"
	case "-.inf", "-.Inf", "-.INF":
		return math.Inf(-1), "float"
	}
	c := in[0]
	switch {
	case c == '.':
		if f, err := strconv.ParseFloat(in, 64); err == nil {
			return f, "float"
		}
	case c == '+' || c == '-' || c >= '0' && c <= '9':
		if isTimestamp(in) {
			return in, "str"
		}
		plain := strings.ReplaceAll(in, "_", "")
		if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return i, "int"
		}
		if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return json.Number(strconv.FormatUint(u, 10)), "int"
		}
		if yaml11Float.MatchString(plain) {
			if f, err := strconv.ParseFloat(plain, 64); err == nil {
				return f, "float"
			}
		}
		if strings.HasPrefix(plain, "0b") {
			if i, err := strconv.ParseInt(plain[2:], 2, 64); err == nil {
				return i, "int"
			}
			if u, err := strconv.ParseUint(plain[2:], 2, 64); err == nil {
				return json.Number(strconv.FormatUint(u, 10)), "int"
			}
		} else if strings.HasPrefix(plain, "-0b") {
			if i, err := strconv.ParseInt("-"+plain[3:], 2, 64); err == nil {
				return i, "int"
			}
		}
	}
	return in, "str"
}

var timestampFormats = []string{"2006-1-2T15:4:5.999999999Z07:00", "2006-1-2t15:4:5.999999999Z07:00", "2006-1-2 15:4:5.999999999", "2006-1-2"}

// isTimestamp is go-yaml v2's timestamp test: YYYY- then a layout it parses.
func isTimestamp(s string) bool {
	i := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return false
	}
	for _, f := range timestampFormats {
		if _, err := time.Parse(f, s); err == nil {
			return true
		}
	}
	return false
}

// checkYAMLExpansion refuses YAML for fromYaml whose aliases would expand
// it beyond the value limit, before the YAML library builds it.
func checkYAMLExpansion(s string, lim Limits) error {
	if !strings.Contains(s, "*") {
		return nil
	}
	maxNodes := int(lim.MaxValueBytes / 16)
	_, err := parseYAML11([]byte(s), "fromYaml", document.Limits{MaxBytes: lim.MaxValueBytes, MaxDepth: maxValueDepth, MaxNodes: maxNodes}, false)
	if err != nil && (errors.Is(err, document.ErrTooLarge) || errors.Is(err, document.ErrTooDeep)) {
		return fmt.Errorf("%w: %w", ErrTooLarge, err)
	}
	return nil
}
