// Package yamljson reads YAML exactly as sigs.k8s.io/yaml reads it, and
// so as Helm and Kubernetes' clients read it: yaml.v2 decodes the text
// into maps keyed by interface{}, the maps are converted to JSON-able ones,
// the result is written as JSON and, for values, read back with
// encoding/json (numbers become float64). The functions here give the same
// results for the same text, faster: a document in the plain block style
// is read by a small parser of that style (block.go), any other by yaml.v2
// into ordered MapSlices (no hashing of interface keys), and the tree is
// turned directly into what the JSON round trip would give. Whatever they
// are not sure to reproduce exactly (merge keys, non-string keys that could
// collide, invalid UTF-8, NaN and infinities, anything that is an error)
// is left to the reference functions (ErrNotFast), so errors read as the
// reference's.
//
// ToJSON converts a document to its JSON and its Head (what Helm's manifest
// sorter reads of it), with sigs.k8s.io/yaml as the fallback and, with
// document.ReferenceCodecs, as the only way; ToJSONFast and Check are its
// fast path alone, Check without writing the JSON. ValuesFast reads one
// values document as sigs.k8s.io/yaml.Unmarshal reads it into a map (what
// Helm's loader.LoadValues does to each document of a values file); the
// stream and its merge are the caller's (helmrender.LoadValues, with
// Helm's function as the fallback).
//
// The differential tests and the fuzzer (FuzzYAMLConv) hold every function
// to yaml.v2, sigs.k8s.io/yaml and Helm's loader.LoadValues and
// releaseutil.SimpleHead; the tests import Helm, the package does not.
package yamljson

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v2"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/document"
)

// ErrNotFast marks a document the fast path leaves to the reference
// functions: not an error of the document, which they may read.
var ErrNotFast = errors.New("left to the reference decoder")

// Head is the head of a Kubernetes object as Helm's manifest sorter reads
// it: releaseutil.SimpleHead's fields with its JSON names, so that
// sigs.k8s.io/yaml and encoding/json read the same into both (a test holds
// the two types to each other), and a caller may convert a Head to Helm's
// type.
type Head struct {
	Version  string `json:"apiVersion"`
	Kind     string `json:"kind,omitempty"`
	Metadata *struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata,omitempty"`
}

// Name is the head's metadata.name.
func (h Head) Name() string {
	if h.Metadata == nil {
		return ""
	}
	return h.Metadata.Name
}

// UnmarshalHead reads the head of a document as Helm's sorter reads it:
// sigs.k8s.io/yaml.Unmarshal into the head, the reference, with its errors.
func UnmarshalHead(doc []byte) (Head, error) {
	var h Head
	err := sigsyaml.Unmarshal(doc, &h)
	return h, err
}

// ValuesFast reads one values document as sigs.k8s.io/yaml.Unmarshal
// reads it into a non-nil map[string]any (an empty or null document gives
// an empty map), or gives ErrNotFast: it has no fallback, since the
// reference for values is the caller's (Helm's loader.LoadValues reads a
// stream of documents and merges them). data is not changed.
func ValuesFast(doc []byte) (map[string]any, error) {
	ms, _, err := decodeMapping(doc)
	if err != nil {
		return nil, err
	}
	return valuesMap(ms)
}

// decodeMapping decodes a document that must be a mapping, or null (nil,
// false): with parseBlockYAML when it can, else with yaml.v2.
func decodeMapping(doc []byte) (ms yaml.MapSlice, isMap bool, err error) {
	if ms, isMap, err := parseBlockYAML(string(doc)); err == nil {
		return ms, isMap, nil
	}
	if bytes.Contains(doc, []byte("<<")) {
		// yaml.v2 drops merge keys when it decodes into a MapSlice.
		return nil, false, ErrNotFast
	}
	var root rootMapping
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, false, ErrNotFast // a sequence or scalar, or a syntax error
	}
	return root.ms, root.isMap, nil
}

// rootMapping decodes a document that must be a mapping (or null) into a
// MapSlice. Decoded straight into a MapSlice, which is a slice of structs,
// a sequence of {key, value} mappings would pass for a mapping.
type rootMapping struct {
	ms    yaml.MapSlice
	isMap bool // false for a null document
}

func (r *rootMapping) UnmarshalYAML(unmarshal func(any) error) error {
	// A mapping decodes into an empty struct (its keys are read, its
	// values skipped); a sequence or a scalar does not.
	var probe struct{}
	if err := unmarshal(&probe); err != nil {
		return err
	}
	if err := unmarshal(&r.ms); err != nil {
		return err
	}
	if r.ms == nil {
		// {}, or a null yaml.v2 does not tell from the struct probe
		// (NULL, Null): cheap to decode again, there is nothing in it.
		var v any
		if err := unmarshal(&v); err != nil {
			return err
		}
		_, r.isMap = v.(map[any]any)
		return nil
	}
	r.isMap = true
	return nil
}

// valuesMap converts a decoded mapping as the JSON round trip would.
func valuesMap(ms yaml.MapSlice) (map[string]any, error) {
	m := make(map[string]any, len(ms))
	var converted map[string]bool // keys that were not strings in YAML
	for _, it := range ms {
		k, isString, err := jsonKey(it.Key)
		if err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup && (!isString || converted[k]) {
			// 1 and "1", or true and "true": which one sigs.k8s.io/yaml
			// keeps depends on map iteration order.
			return nil, ErrNotFast
		}
		if !isString {
			if converted == nil {
				converted = map[string]bool{}
			}
			converted[k] = true
		}
		v, err := valuesValue(it.Value)
		if err != nil {
			return nil, err
		}
		m[k] = v // a repeated key: the last one wins, as in yaml.v2
	}
	return m, nil
}

func valuesValue(v any) (any, error) {
	switch v := v.(type) {
	case nil, bool:
		return v, nil
	case string:
		if !utf8.ValidString(v) {
			return nil, ErrNotFast // encoding/json would replace bytes
		}
		return v, nil
	case int:
		return float64(v), nil
	case int64:
		return float64(v), nil
	case uint64:
		return float64(v), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, ErrNotFast // encoding/json refuses them
		}
		return v, nil
	case yaml.MapSlice:
		return valuesMap(v)
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			c, err := valuesValue(e)
			if err != nil {
				return nil, err
			}
			l[i] = c
		}
		return l, nil
	}
	return nil, ErrNotFast
}

// jsonKey converts a mapping key as sigs.k8s.io/yaml does; isString says
// whether it was a string in YAML.
func jsonKey(k any) (s string, isString bool, err error) {
	switch k := k.(type) {
	case string:
		if !utf8.ValidString(k) {
			return "", false, ErrNotFast
		}
		return k, true, nil
	case int:
		return strconv.Itoa(k), false, nil
	case int64:
		return strconv.FormatInt(k, 10), false, nil
	case bool:
		return strconv.FormatBool(k), false, nil
	}
	// Float keys (formatted at 32 bits), null, and map or list keys:
	// rare, and the reference path says what happens to them.
	return "", false, ErrNotFast
}

// ToJSON converts one document as sigs.k8s.io/yaml.YAMLToJSON does, and
// reads its head as Helm's manifest sorter reads it (releaseutil.SimpleHead
// from the JSON, with encoding/json's rules): through the fast path unless
// codecs is document.ReferenceCodecs, then through sigs.k8s.io/yaml. The
// errors are the reference's: a document that does not convert gives no
// JSON and sigs.k8s.io/yaml's error; one whose head does not read (a field
// of the wrong type) gives its JSON and the error of reading the head
// (UnmarshalHead's, which names the type Head where Helm's names
// releaseutil.SimpleHead).
func ToJSON(doc []byte, codecs document.Codecs) ([]byte, Head, error) {
	if !codecs.Fast() {
		js, err := sigsyaml.YAMLToJSON(doc)
		if err != nil {
			return nil, Head{}, err
		}
		head, err := jsonHead(js, doc)
		return js, head, err
	}
	return yamlToJSON(doc)
}

// yamlToJSON is ToJSON with the fast path first.
func yamlToJSON(doc []byte) (js []byte, head Head, err error) {
	js, head, _, err = ToJSONFast(doc)
	if err == nil {
		return js, head, nil
	}
	js, err = sigsyaml.YAMLToJSON(doc)
	if err != nil {
		return nil, head, err
	}
	head, err = jsonHead(js, doc)
	return js, head, err
}

// jsonHead reads the head of a document from its JSON form: encoding/json
// into the Head, which is what Helm's sorter gets from
// sigs.k8s.io/yaml.Unmarshal of the document, unless a field has the
// wrong type. Then the document itself goes through sigs.k8s.io/yaml, which
// turns scalars into the strings the head wants (an annotation
// `helm.sh/hook-weight: 5`); that, or its error, is what Helm's sorter
// gets.
func jsonHead(js, doc []byte) (Head, error) {
	var head Head
	if len(js) > 0 && js[0] == '{' && json.Unmarshal(js, &head) == nil {
		return head, nil
	}
	return UnmarshalHead(doc)
}

// ToJSONFast is ToJSON's fast path alone: an error is ErrNotFast or the
// head's error (Helm's sorter would fail on the document), and the caller
// goes the reference way. fromTree reports that the head was read from
// the decoded document, its fields plainly there: encoding/json reads the
// same head from the JSON (otherwise the head is the one ToJSON gives,
// which may have been read from the text by sigs.k8s.io/yaml).
func ToJSONFast(doc []byte) (js []byte, head Head, fromTree bool, err error) {
	ms, isMap, err := decodeMapping(doc)
	if err != nil || !isMap {
		// Not a mapping, nothing, or an error.
		return nil, head, false, ErrNotFast
	}
	// The JSON is about as long as the YAML: one buffer from the start
	// instead of doubling one (CRDs run to megabytes).
	w := jsonWriter{buf: make([]byte, 0, len(doc)+len(doc)/4)}
	if err := w.mapping(ms); err != nil {
		return nil, head, false, err
	}
	head, ok := treeHead(ms)
	if ok {
		return w.buf, head, true, nil
	}
	if head, err = jsonHead(w.buf, doc); err != nil {
		return nil, head, false, err
	}
	return w.buf, head, false, nil
}

// Check reads a document as ToJSON does, without writing its JSON: for
// output that keeps no JSON but checks every document as Argo CD will read
// it (helmrender's output printed as helm template prints it). It returns
// the head ToJSON returns and a bound of the length of the JSON it writes
// (see jsonBound), or ErrNotFast when the document is not a plain object
// of the block style scanBlockYAML reads, with apiVersion and kind read by
// treeHead (a List is one to unpack): ToJSON reads such documents, and
// says what is wrong with one.
func Check(doc string) (head Head, bound int, err error) {
	root, isMap, err := scanBlockYAML(doc)
	if err != nil || !isMap {
		return head, 0, ErrNotFast
	}
	head, ok := treeHead(root)
	if !ok || head.Kind == "" || head.Version == "" || strings.HasSuffix(head.Kind, "List") {
		return Head{}, 0, ErrNotFast
	}
	return head, jsonBound(len(doc)), nil
}

// jsonBound bounds the length of the JSON of a document of n bytes that
// scanBlockYAML reads: a byte of a key or a scalar becomes at most six in
// JSON (< is \u003c), and what a line adds besides (quotes, a colon, a
// comma, a null for an empty value, a number printed longer: "- 9e20" is
// 21 digits) is less than the eight bytes its own text and line break
// give it at that rate. The differential tests and FuzzYAMLConv check it.
func jsonBound(n int) int { return 8*n + 16 }

// treeHead reads the head from the decoded document when its fields are
// plainly there: apiVersion, kind and metadata.annotations spelt exactly,
// with string values. Anything else (a field spelt in another case, which
// encoding/json would match; a number where a string is wanted) is left
// to jsonHead.
func treeHead(ms yaml.MapSlice) (Head, bool) {
	var head Head
	fields := map[string]any{}
	if !plainFields(ms, fields, "apiVersion", "kind", "metadata") {
		return head, false
	}
	var ok bool
	if head.Version, ok = optString(fields["apiVersion"]); !ok {
		return head, false
	}
	if head.Kind, ok = optString(fields["kind"]); !ok {
		return head, false
	}
	md, present := fields["metadata"]
	if !present || md == nil {
		return head, true
	}
	mds, isMap := md.(yaml.MapSlice)
	if !isMap {
		return head, false
	}
	meta := map[string]any{}
	if !plainFields(mds, meta, "name", "annotations") {
		return head, false
	}
	head.Metadata = &struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	}{}
	if head.Metadata.Name, ok = optString(meta["name"]); !ok {
		return head, false
	}
	anns, present := meta["annotations"]
	if !present || anns == nil {
		return head, true
	}
	as, isMap := anns.(yaml.MapSlice)
	if !isMap {
		return head, false
	}
	head.Metadata.Annotations = make(map[string]string, len(as))
	for _, it := range as {
		k, isString := it.Key.(string)
		v, isValue := it.Value.(string)
		if !isString || !isValue || !utf8.ValidString(k) || !utf8.ValidString(v) {
			return head, false
		}
		head.Metadata.Annotations[k] = v
	}
	return head, true
}

// plainFields collects the entries of ms named exactly by names (the last
// of repeated ones, as the JSON has it); it fails when a key is not a
// string or matches one of names only case-insensitively.
func plainFields(ms yaml.MapSlice, into map[string]any, names ...string) bool {
	for _, it := range ms {
		k, ok := it.Key.(string)
		if !ok {
			return false
		}
		if slices.Contains(names, k) {
			into[k] = it.Value
			continue
		}
		for _, n := range names {
			if strings.EqualFold(k, n) {
				return false
			}
		}
	}
	return true
}

// optString is a string field of the head: a string (valid UTF-8, which
// the JSON holds unchanged), or nothing.
func optString(v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "", true
	case string:
		return v, utf8.ValidString(v)
	}
	return "", false
}

// jsonWriter writes a decoded document as encoding/json.Marshal writes
// its conversion to JSON-able maps: keys sorted, HTML characters escaped.
type jsonWriter struct{ buf []byte }

type jsonEntry struct {
	key   string
	value any
}

func (w *jsonWriter) mapping(ms yaml.MapSlice) error {
	entries := make([]jsonEntry, 0, len(ms))
	index := map[string]int{}
	var converted map[string]bool
	for _, it := range ms {
		k, isString, err := jsonKey(it.Key)
		if err != nil {
			return err
		}
		if i, dup := index[k]; dup {
			if !isString || converted[k] {
				return ErrNotFast
			}
			entries[i].value = it.Value // the last one wins
			continue
		}
		if !isString {
			if converted == nil {
				converted = map[string]bool{}
			}
			converted[k] = true
		}
		index[k] = len(entries)
		entries = append(entries, jsonEntry{k, it.Value})
	}
	slices.SortFunc(entries, func(a, b jsonEntry) int { return strings.Compare(a.key, b.key) })
	w.buf = append(w.buf, '{')
	for i, e := range entries {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		if err := w.string(e.key); err != nil {
			return err
		}
		w.buf = append(w.buf, ':')
		if err := w.value(e.value); err != nil {
			return err
		}
	}
	w.buf = append(w.buf, '}')
	return nil
}

func (w *jsonWriter) value(v any) error {
	switch v := v.(type) {
	case nil:
		w.buf = append(w.buf, "null"...)
	case bool:
		w.buf = strconv.AppendBool(w.buf, v)
	case string:
		return w.string(v)
	case int:
		w.buf = strconv.AppendInt(w.buf, int64(v), 10)
	case int64:
		w.buf = strconv.AppendInt(w.buf, v, 10)
	case uint64:
		w.buf = strconv.AppendUint(w.buf, v, 10)
	case float64:
		b, err := json.Marshal(v)
		if err != nil {
			return ErrNotFast
		}
		w.buf = append(w.buf, b...)
	case yaml.MapSlice:
		return w.mapping(v)
	case []any:
		w.buf = append(w.buf, '[')
		for i, e := range v {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			if err := w.value(e); err != nil {
				return err
			}
		}
		w.buf = append(w.buf, ']')
	default:
		return ErrNotFast
	}
	return nil
}

// string writes s as encoding/json does: plain printable ASCII as it is,
// anything else through encoding/json itself.
func (w *jsonWriter) string(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			if w.escaped(s, i) {
				return nil
			}
			b, err := json.Marshal(s)
			if err != nil {
				return ErrNotFast
			}
			w.buf = append(w.buf, b...)
			return nil
		}
	}
	w.buf = append(w.buf, '"')
	w.buf = append(w.buf, s...)
	w.buf = append(w.buf, '"')
	return nil
}

// escaped writes s as encoding/json does when, from i on, it holds only
// printable ASCII other than <, > and &, line breaks, tabs, quotes and
// backslashes (a description of several lines), and reports whether it did.
func (w *jsonWriter) escaped(s string, i int) bool {
	for j := i; j < len(s); j++ {
		if c := s[j]; (c < 0x20 && c != '\n' && c != '\t') || c >= utf8.RuneSelf || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	w.buf = append(w.buf, '"')
	w.buf = append(w.buf, s[:i]...)
	for j := i; j < len(s); j++ {
		switch c := s[j]; c {
		case '\n':
			w.buf = append(w.buf, '\\', 'n')
		case '\t':
			w.buf = append(w.buf, '\\', 't')
		case '"', '\\':
			w.buf = append(w.buf, '\\', c)
		default:
			w.buf = append(w.buf, c)
		}
	}
	w.buf = append(w.buf, '"')
	return true
}
