package layers

import (
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/layers/v1alpha1"
	"github.com/strata-dev/strata/internal/manifest"
)

// Kinds of the objects strata reads, as Kubernetes writes them.
const (
	KindConfigMap = "ConfigMap"
	KindSecret    = "Secret"
	KindApp       = "App"
	KindCatalog   = "Catalog"
)

// DefaultNamespace is the namespace of an object read from a file without
// metadata.namespace, as kubectl would create it without -n.
const DefaultNamespace = "default"

// object is a Kubernetes object read from a YAML or JSON stream.
type object struct {
	apiVersion, kind string
	namespace, name  string
	tree             map[string]any
	loc              *Location
}

func (o *object) id() string { return o.kind + " " + o.namespace + "/" + o.name }

// relevant reports whether strata reads objects of this type.
func relevant(apiVersion, kind string) bool {
	switch kind {
	case KindConfigMap, KindSecret:
		return apiVersion == "v1"
	case KindApp, KindCatalog:
		return apiVersion == v1alpha1.GroupVersion.String()
	}
	return false
}

// readObjects reads the ConfigMaps, Secrets, Apps and Catalogs of a
// manifest stream (package manifest: YAML documents separated by ---, or
// JSON); items of lists (manifest.ListItems) count as objects. Documents that are not Kubernetes objects
// (no apiVersion and kind) and objects of other kinds are skipped.
func readObjects(data []byte, file string, maxBytes int64) ([]*object, error) {
	var out []*object
	var x *lineIndex
	docs, err := manifest.Parse(data, file, manifest.Limits{MaxBytes: maxBytes})
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		m, ok := d.Value.(map[string]any)
		if !ok {
			continue
		}
		objs, err := collectObjects(m, d.Pos, file, "", "")
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if o.tree["data"] == nil && o.tree["stringData"] == nil {
				continue
			}
			if x == nil {
				x = newLineIndex(data)
			}
			o.loc.Blocks = literalBlocks(x, o)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// collectObjects returns the object m, or the items of a List.
func collectObjects(m map[string]any, pos *document.Pos, file, listAPI, listKind string) ([]*object, error) {
	api, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	if api == "" && kind == "" && listKind != "" {
		api, kind = listAPI, listKind
	}
	if api == "" || kind == "" {
		return nil, nil
	}
	if items, ok := manifest.ListItems(m); ok {
		itemKind := strings.TrimSuffix(kind, "List")
		if kind == "List" {
			itemKind = ""
		}
		var out []*object
		for i, it := range items {
			im, ok := it.(map[string]any)
			if !ok {
				return nil, &document.LoadError{Source: file, Line: linePos(pos.Key("items").Item(i)),
					Msg: fmt.Sprintf("items[%d] of a %s must be an object, not %s", i, kind, document.Describe(it))}
			}
			objs, err := collectObjects(im, pos.Key("items").Item(i), file, api, itemKind)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
		return out, nil
	}
	if !relevant(api, kind) {
		return nil, nil
	}
	o := &object{apiVersion: api, kind: kind, tree: m, loc: &Location{File: file, Pos: pos}}
	md, _ := m["metadata"].(map[string]any)
	o.name, _ = md["name"].(string)
	o.namespace, _ = md["namespace"].(string)
	if o.name == "" {
		return nil, &document.LoadError{Source: file, Line: linePos(pos), Msg: fmt.Sprintf("%s %s without metadata.name: name it", article(kind), kind)}
	}
	if o.namespace == "" {
		o.namespace = DefaultNamespace
	}
	return []*object{o}, nil
}

func linePos(p *document.Pos) int {
	if p == nil {
		return 0
	}
	return p.Line
}

func shiftLines(p *document.Pos, lines, cols int) {
	if p == nil || (lines == 0 && cols == 0) {
		return
	}
	if p.Line > 0 {
		p.Line += lines
	}
	if p.Column > 0 {
		p.Column += cols
	}
	for _, k := range p.Keys {
		shiftLines(k, lines, cols)
	}
	for _, it := range p.Items {
		shiftLines(it, lines, cols)
	}
}

// lineIndex holds the offsets at which the lines of a file start.
type lineIndex struct {
	data   []byte
	starts []int
}

func newLineIndex(data []byte) *lineIndex {
	x := &lineIndex{data: data, starts: []int{0}}
	for i, c := range data {
		if c == '\n' {
			x.starts = append(x.starts, i+1)
		}
	}
	return x
}

// line returns line n (1-based) without its line break, and whether it exists.
func (x *lineIndex) line(n int) (string, bool) {
	if n < 1 || n > len(x.starts) {
		return "", false
	}
	end := len(x.data)
	if n < len(x.starts) {
		end = x.starts[n] - 1
	}
	return strings.TrimRight(string(x.data[x.starts[n-1]:end]), "\r"), true
}

// literalBlocks finds the data keys of o written as literal block scalars
// (`values: |`), whose content lines are the file's lines.
func literalBlocks(x *lineIndex, o *object) map[string]Block {
	var out map[string]Block
	for _, field := range []string{"data", "stringData"} {
		fp := o.loc.Pos.Key(field)
		m, _ := o.tree[field].(map[string]any)
		for k, v := range m {
			if _, ok := v.(string); !ok {
				continue
			}
			kp := fp.Key(k)
			if kp == nil || kp.Line <= 0 {
				continue
			}
			if b, ok := literalAt(x, kp.Line, kp.Column); ok {
				if out == nil {
					out = map[string]Block{}
				}
				out[field+"."+k] = b
			}
		}
	}
	return out
}

// literalAt reports whether the key at line:col is followed by a plain
// literal block indicator (|, |- or |+), and where the block's content is.
func literalAt(x *lineIndex, line, col int) (Block, bool) {
	l, ok := x.line(line)
	if !ok || col < 1 || col > len(l) {
		return Block{}, false
	}
	rest := l[col-1:]
	i := strings.Index(rest, ": ")
	if i < 0 {
		return Block{}, false
	}
	ind := strings.TrimSpace(rest[i+2:])
	if c := strings.Index(ind, " #"); c >= 0 {
		ind = strings.TrimSpace(ind[:c])
	}
	if ind != "|" && ind != "|-" && ind != "|+" {
		// Not a literal block, or one with an explicit indentation
		// indicator: its columns are not worth guessing.
		return Block{}, false
	}
	b := Block{Line: line}
	for n := line + 1; ; n++ {
		cl, ok := x.line(n)
		if !ok {
			break
		}
		t := strings.TrimLeft(cl, " ")
		if strings.TrimSpace(t) == "" {
			continue
		}
		b.Indent = len(cl) - len(t)
		break
	}
	return b, true
}

// withoutFields returns a copy of tree without the keys the decoders ignore:
// metadata.managedFields (server-side bookkeeping) and, for Apps and
// Catalogs, status.
func withoutFields(tree map[string]any, status bool) map[string]any {
	out := make(map[string]any, len(tree))
	for k, v := range tree {
		out[k] = v
	}
	if status {
		delete(out, "status")
	}
	if md, ok := out["metadata"].(map[string]any); ok {
		if _, has := md["managedFields"]; has {
			c := make(map[string]any, len(md))
			for k, v := range md {
				c[k] = v
			}
			delete(c, "managedFields")
			out["metadata"] = c
		}
	}
	return out
}

// checkStringData reports a data entry that is not a string, the usual
// mistake being a map written where `values: |` was meant.
func checkStringData(o *object, field string) error {
	m, ok := o.tree[field]
	if !ok || m == nil {
		return nil
	}
	mm, ok := m.(map[string]any)
	if !ok {
		return &document.LoadError{Source: o.loc.File, Line: o.loc.Line(document.Path{document.Key(field)}),
			Msg: fmt.Sprintf("%s: %s must be a map of keys to strings, not %s", o.id(), field, document.Describe(m))}
	}
	for _, k := range slices.Sorted(maps.Keys(mm)) {
		switch mm[k].(type) {
		case string:
		case map[string]any, []any:
			return &document.LoadError{Source: o.loc.File, Line: o.loc.Line(document.Path{document.Key(field), document.Key(k)}),
				Msg: fmt.Sprintf("%s: %s.%s must be a string holding YAML, not %s: write `%s: |` and indent the values below it",
					o.id(), field, k, document.Describe(mm[k]), k)}
		default:
			return &document.LoadError{Source: o.loc.File, Line: o.loc.Line(document.Path{document.Key(field), document.Key(k)}),
				Msg: fmt.Sprintf("%s: %s.%s must be a string, not %s: quote it", o.id(), field, k, document.Describe(mm[k]))}
		}
	}
	return nil
}

type configMapDoc struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Data              map[string]string `json:"data,omitempty"`
	BinaryData        map[string]string `json:"binaryData,omitempty"`
	Immutable         *bool             `json:"immutable,omitempty"`
}

type secretDoc struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Data              map[string]string `json:"data,omitempty"`
	StringData        map[string]string `json:"stringData,omitempty"`
	Type              corev1.SecretType `json:"type,omitempty"`
	Immutable         *bool             `json:"immutable,omitempty"`
}

func (o *object) decode(out any, status bool) error {
	err := document.Decode(withoutFields(o.tree, status), o.loc.Pos, o.loc.File, out)
	if err != nil {
		var le *document.LoadError
		if errors.As(err, &le) {
			le.Msg = o.id() + ": " + le.Msg
		}
		return err
	}
	return nil
}

func (o *object) configMap() (*corev1.ConfigMap, error) {
	for _, f := range []string{"data", "binaryData"} {
		if err := checkStringData(o, f); err != nil {
			return nil, err
		}
	}
	var d configMapDoc
	if err := o.decode(&d, false); err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{TypeMeta: d.TypeMeta, ObjectMeta: d.ObjectMeta, Data: d.Data, Immutable: d.Immutable}
	cm.Namespace = o.namespace
	bin, err := o.base64Map("binaryData", d.BinaryData)
	if err != nil {
		return nil, err
	}
	cm.BinaryData = bin
	return cm, nil
}

func (o *object) secret() (*corev1.Secret, error) {
	for _, f := range []string{"data", "stringData"} {
		if err := checkStringData(o, f); err != nil {
			return nil, err
		}
	}
	var d secretDoc
	if err := o.decode(&d, false); err != nil {
		return nil, err
	}
	s := &corev1.Secret{TypeMeta: d.TypeMeta, ObjectMeta: d.ObjectMeta, Type: d.Type, Immutable: d.Immutable}
	s.Namespace = o.namespace
	data, err := o.base64Map("data", d.Data)
	if err != nil {
		return nil, err
	}
	// As the API server does: stringData is written over data.
	for k, v := range d.StringData {
		if data == nil {
			data = map[string][]byte{}
		}
		data[k] = []byte(v)
	}
	s.Data = data
	return s, nil
}

func (o *object) base64Map(field string, m map[string]string) (map[string][]byte, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string][]byte, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b, err := base64.StdEncoding.DecodeString(m[k])
		if err != nil {
			return nil, &document.LoadError{Source: o.loc.File, Line: o.loc.Line(document.Path{document.Key(field), document.Key(k)}),
				Msg: fmt.Sprintf("%s: %s.%s is not valid base64 (%v): encode it with `base64 -w0`, or put the plain text under stringData", o.id(), field, k, err)}
		}
		out[k] = b
	}
	return out, nil
}

func (o *object) app() (*v1alpha1.App, error) {
	if err := o.checkExtraConfigs(); err != nil {
		return nil, err
	}
	var a v1alpha1.App
	if err := o.decode(&a, true); err != nil {
		return nil, err
	}
	a.Namespace = o.namespace
	return &a, nil
}

func (o *object) catalog() (*v1alpha1.Catalog, error) {
	var c v1alpha1.Catalog
	if err := o.decode(&c, true); err != nil {
		return nil, err
	}
	c.Namespace = o.namespace
	return &c, nil
}

// AppDoc is an App read from a file, with where it was written.
type AppDoc struct {
	App      *v1alpha1.App
	Location *Location
}

// ReadApps reads the Apps of a YAML or JSON stream, strictly: an unknown
// field is an error with its line. Their status is ignored. Other objects
// in the stream are skipped.
func ReadApps(data []byte, file string) ([]AppDoc, error) {
	lim := DefaultLimits()
	if int64(len(data)) > lim.MaxFileBytes {
		return nil, &document.LoadError{Source: file, Err: document.ErrTooLarge,
			Msg: fmt.Sprintf("file is larger than the limit of %d bytes", lim.MaxFileBytes)}
	}
	objs, err := readObjects(data, file, lim.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	var out []AppDoc
	for _, o := range objs {
		if o.kind != KindApp {
			continue
		}
		a, err := o.app()
		if err != nil {
			return nil, err
		}
		out = append(out, AppDoc{App: a, Location: o.loc})
	}
	return out, nil
}

func itoa(n int) string { return strconv.Itoa(n) }

func article(word string) string {
	if word != "" && strings.ContainsRune("AEIOU", rune(word[0])) {
		return "an"
	}
	return "a"
}

// checkExtraConfigs checks the types of spec.extraConfigs' fields, so that
// a mistake is reported at its line: the generic decoder cannot tell which
// entry of a list was wrong.
func (o *object) checkExtraConfigs() error {
	spec, _ := o.tree["spec"].(map[string]any)
	list, ok := spec["extraConfigs"].([]any)
	if !ok {
		return nil
	}
	for i, it := range list {
		m, ok := it.(map[string]any)
		p := document.Path{document.Key("spec"), document.Key("extraConfigs"), document.Index(i)}
		if !ok {
			return &document.LoadError{Source: o.loc.File, Line: o.loc.Line(p),
				Msg: fmt.Sprintf("%s: %s must be a map with kind, name, namespace and priority, not %s", o.id(), p, document.Describe(it))}
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			var ok bool
			var want string
			switch k {
			case "kind", "name", "namespace":
				_, ok = m[k].(string)
				want = "a string"
			case "priority":
				_, ok = m[k].(int64)
				want = "an integer"
			case "optional":
				_, ok = m[k].(bool)
				want = "true or false"
			default:
				continue
			}
			if !ok && m[k] != nil {
				kp := p.Append(document.Key(k))
				return &document.LoadError{Source: o.loc.File, Line: o.loc.Line(kp), Column: colOf(o.loc.Pos.Lookup(kp)),
					Msg: fmt.Sprintf("%s: %s must be %s, not %s", o.id(), kp, want, document.Describe(m[k]))}
			}
		}
	}
	return nil
}

func colOf(p *document.Pos) int {
	if p == nil {
		return 0
	}
	return p.Column
}
