package params

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-dev/strata/internal/document"
)

// ParseAnnouncements decodes a list of parameter announcements written in
// JSON or YAML: the output of a plugin's parameters.dynamic command, say.
// Source names the input in errors and warnings. Empty input and a literal
// null are an empty list.
//
// The announcements come back normalised as DecodeAnnouncements describes,
// but for one thing: an unknown field is a warning, not an error, as Argo
// CD's sidecar ignores the fields it does not know in a command's output.
// Problems with the document are *document.LoadError; problems with an entry
// are *Error.
func ParseAnnouncements(data []byte, source string) ([]Announcement, []Warning, error) {
	tree, pos, err := parseDoc(data, source, true)
	if err != nil {
		return nil, nil, err
	}
	return decodeAnnouncements(&decoder{source: source, kind: "announcement", ignoreUnknown: true}, tree, pos)
}

// DecodeAnnouncements decodes a list of announcements from a value tree
// already loaded with the values package (such as spec.parameters.static
// of a plugin.yaml), with the positions the loader recorded (pos may be
// nil). A nil tree is an empty list.
//
// The decoding is strict: an unknown field, a value of the wrong type
// (a number where a string belongs), an entry with no name, an unknown
// itemType or collectionType, or a default value that does not fit the
// itemType is an error naming the entry, field and line. What the
// proposal says to ignore is dropped with a warning: fields of a
// collection type other than the announced one, and any later entry with
// a name already used (the first one wins). itemType and collectionType
// default to string.
func DecodeAnnouncements(tree any, pos *document.Pos, source string) ([]Announcement, []Warning, error) {
	return decodeAnnouncements(&decoder{source: source, kind: "announcement"}, tree, pos)
}

func decodeAnnouncements(d *decoder, tree any, pos *document.Pos) ([]Announcement, []Warning, error) {
	list, err := d.list(tree, pos)
	if err != nil {
		return nil, nil, err
	}
	var out []Announcement
	first := make(map[string]int, len(list))
	for i, v := range list {
		a, err := d.announcement(i, v, pos.Item(i))
		if err != nil {
			return nil, nil, err
		}
		if j, dup := first[a.Name]; dup {
			d.warn(pos.Item(i), i, a.Name, "", fmt.Sprintf("the name is already used by announcement [%d]; this one is ignored, give it another name", j))
			continue
		}
		first[a.Name] = i
		out = append(out, a)
	}
	return out, d.warnings, nil
}

// ParseParameters decodes the JSON of ARGOCD_APP_PARAMETERS: a list of
// {"name": ..., "string": ..., "array": [...], "map": {...}}. Empty input
// and a literal null are an empty list.
//
// The decoding is strict: an unknown field, a value of the wrong type, an
// entry with no name or a NUL character in any string (an environment
// variable cannot hold one) is an error naming the entry, field and line.
// A field set to null counts as not set. Names may repeat; see Env.
// Problems with the document are *document.LoadError; problems with an
// entry are *Error.
func ParseParameters(data []byte, source string) ([]Parameter, error) {
	tree, pos, err := parseDoc(data, source, false)
	if err != nil {
		return nil, err
	}
	d := &decoder{source: source, kind: "parameter", noNUL: true}
	list, err := d.list(tree, pos)
	if err != nil {
		return nil, err
	}
	var out []Parameter
	for i, v := range list {
		p, err := d.parameter(i, v, pos.Item(i))
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// parseDoc loads one JSON (or, when yamlOK, YAML) document with the values
// loader: strict (duplicate keys, invalid UTF-8), bounded, with lines.
func parseDoc(data []byte, source string, yamlOK bool) (any, *document.Pos, error) {
	l := document.Loader{
		Positions: true,
		JSON:      !yamlOK,
		Limits:    document.Limits{MaxBytes: MaxBytes, MaxDepth: maxDepth, MaxNodes: 1 << 20},
	}
	return l.ParseAny(data, source)
}

// The shapes of the entries, as document.Decode reads them. The field types
// say, in their CheckTree methods, what a value must be and what to write
// instead; everything else (a name is required, the types are known, the
// defaults fit) is checked on the decoded shape.
type (
	announcementShape struct {
		Name           text     `json:"name"`
		Title          text     `json:"title"`
		Tooltip        text     `json:"tooltip"`
		Required       flag     `json:"required"`
		ItemType       text     `json:"itemType"`
		CollectionType text     `json:"collectionType"`
		String         text     `json:"string"`
		Array          textList `json:"array"`
		Map            textMap  `json:"map"`
	}
	parameterShape struct {
		Name   text     `json:"name"`
		String *text    `json:"string"`
		Array  textList `json:"array"`
		Map    textMap  `json:"map"`
	}

	text     string          // an optional string: null is ""
	item     string          // an item of an array or a value of a map: a string
	flag     bool            // an optional boolean: null is false
	textList []item          // an optional list of strings: null is nil, [] is empty
	textMap  map[string]item // an optional map of strings: null is nil, {} is empty
)

var (
	_ document.Checker = announcementShape{}
	_ document.Checker = parameterShape{}
	_ document.Checker = text("")
	_ document.Checker = item("")
	_ document.Checker = flag(false)
	_ document.Checker = textList(nil)
	_ document.Checker = textMap(nil)
)

// The fields of each shape, in the order messages list them.
var (
	announcementFields = jsonNames[announcementShape]()
	parameterFields    = jsonNames[parameterShape]()
)

func jsonNames[T any]() []string {
	t := reflect.TypeFor[T]()
	names := make([]string, t.NumField())
	for i := range names {
		names[i], _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	return names
}

// invalid is what a CheckTree method returns; decoder.decode places it.
func invalid(sentinel error, format string, args ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, args...), Err: sentinel}
}

func (announcementShape) CheckTree(v any) error { return checkEntry(v) }
func (parameterShape) CheckTree(v any) error    { return checkEntry(v) }

func checkEntry(v any) error {
	if _, ok := v.(map[string]any); !ok {
		return invalid(ErrInvalid, `must be a map with at least a name, such as {"name": "values-files"}, not %s`, document.Describe(v))
	}
	return nil
}

func (text) CheckTree(v any) error {
	if v == nil {
		return nil
	}
	return item("").CheckTree(v)
}

func (item) CheckTree(v any) error {
	if _, ok := v.(string); ok {
		return nil
	}
	return invalid(ErrInvalid, "%s", notString(v))
}

func (flag) CheckTree(v any) error {
	switch v := v.(type) {
	case nil, bool:
		return nil
	case string:
		if v == "true" || v == "false" {
			return invalid(ErrInvalid, "must be true or false, not %s; remove the quotes", document.Describe(v))
		}
	}
	return invalid(ErrInvalid, "must be true or false, not %s", document.Describe(v))
}

func (textList) CheckTree(v any) error {
	switch v := v.(type) {
	case nil:
		return nil
	case []any:
		if len(v) > MaxItems {
			return invalid(ErrTooLarge, "holds %d items, more than the limit of %d", len(v), MaxItems)
		}
		return nil
	case string:
		return invalid(ErrInvalid, "must be a list of strings, not %s; write [%s]", document.Describe(v), strconv.Quote(document.Clip(v, 40)))
	}
	return invalid(ErrInvalid, "must be a list of strings, not %s", document.Describe(v))
}

func (textMap) CheckTree(v any) error {
	switch v := v.(type) {
	case nil:
		return nil
	case map[string]any:
		if len(v) > MaxItems {
			return invalid(ErrTooLarge, "holds %d entries, more than the limit of %d", len(v), MaxItems)
		}
		return nil
	}
	return invalid(ErrInvalid, `must be a map of strings to strings, such as {"image.tag": "v1"}, not %s`, document.Describe(v))
}

func (l textList) strings() []string {
	if l == nil {
		return nil
	}
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = string(s)
	}
	return out
}

func (m textMap) strings() map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, s := range m {
		out[k] = string(s)
	}
	return out
}

// A decoder turns the entries of one list into announcements or parameters.
type decoder struct {
	source string
	kind   string // "announcement" or "parameter"
	noNUL  bool   // strings must not hold NUL (they go into the environment)
	// ignoreUnknown makes an unknown field a warning instead of an error.
	ignoreUnknown bool
	text          int // bytes of strings decoded so far
	warnings      []Warning
}

func (d *decoder) fail(pos *document.Pos, index int, name, field string, sentinel error, msg string) *Error {
	return &Error{Source: d.source, Line: lineOf(pos), Kind: d.kind, Index: index, Name: name, Field: field, Msg: msg, Err: sentinel}
}

func (d *decoder) warn(pos *document.Pos, index int, name, field, msg string) {
	d.warnings = append(d.warnings, Warning{Source: d.source, Line: lineOf(pos), Kind: d.kind, Index: index, Name: name, Field: field, Msg: msg})
}

func lineOf(p *document.Pos) int {
	if p == nil {
		return 0
	}
	return p.Line
}

func (d *decoder) list(tree any, pos *document.Pos) ([]any, error) {
	switch v := tree.(type) {
	case nil:
		return nil, nil
	case []any:
		if len(v) > MaxEntries {
			return nil, d.fail(pos, -1, "", "", ErrTooLarge,
				fmt.Sprintf("the list holds %d %ss, more than the limit of %d", len(v), d.kind, MaxEntries))
		}
		return v, nil
	}
	hint := ""
	if _, ok := tree.(map[string]any); ok {
		hint = "; put the entry in a list: [{...}]"
	}
	return nil, d.fail(pos, -1, "", "", ErrInvalid,
		fmt.Sprintf("the %ss must be a list, not %s%s", d.kind, document.Describe(tree), hint))
}

// An entry is one map of a list, decoded into its shape.
type entry struct {
	d     *decoder
	index int
	name  string // once it is known to be valid
	pos   *document.Pos
}

// decode decodes entry i of the list, v, into shape (a pointer to
// announcementShape or parameterShape, whose fields are fields), and
// checks its name. An unknown field is an error, or with ignoreUnknown a
// warning, the field dropped.
func (d *decoder) decode(i int, v any, pos *document.Pos, shape any, fields []string) (*entry, error) {
	e := &entry{d: d, index: i, pos: pos}
	m, _ := v.(map[string]any)
	if m != nil && d.ignoreUnknown {
		m = foldKeys(m, fields)
		if unknown := unknownKeys(m, pos, fields); len(unknown) > 0 {
			name := d.validName(m)
			m = maps.Clone(m)
			for _, k := range unknown {
				d.warn(pos.Key(k), i, name, document.Clip(k, 60), unknownField(k, fields)+"; it is ignored")
				delete(m, k)
			}
		}
		v = m
	}
	if err := document.Decode(v, pos, d.source, shape); err != nil {
		var le *document.LoadError
		if !errors.As(err, &le) {
			return nil, err
		}
		var field string
		for j, s := range le.Path {
			switch {
			case j == 0:
				field = document.Clip(s.Key, 60)
			case s.IsIndex:
				field += "[" + strconv.Itoa(s.Index) + "]"
			default:
				field = mapField(field, s.Key)
			}
		}
		name := ""
		if field != "name" {
			name = d.validName(m)
		}
		at := pos.Lookup(le.Path)
		if at == nil {
			at = pos
		}
		var pe *Error
		switch {
		case errors.As(le.Err, &pe):
			return nil, d.fail(at, i, name, field, pe.Err, pe.Msg)
		case errors.Is(le.Err, document.ErrUnknownField):
			return nil, d.fail(at, i, name, field, ErrInvalid, unknownField(le.Path[len(le.Path)-1].Key, fields))
		}
		return nil, d.fail(at, i, name, field, ErrInvalid, le.Msg)
	}
	name, _ := m["name"].(string) // a text: a string, or null or missing
	if name == "" {
		at := pos
		if p := pos.Key("name"); p != nil {
			at = p
		}
		return nil, d.fail(at, i, "", "name", ErrInvalid,
			fmt.Sprintf(`the name is missing or empty; every %s needs one, such as "name": "values-files"`, d.kind))
	}
	if len(name) > MaxNameBytes {
		return nil, d.fail(pos.Key("name"), i, "", "name", ErrTooLarge,
			fmt.Sprintf("the name is %d bytes long, more than the limit of %d", len(name), MaxNameBytes))
	}
	if err := e.text(pos.Key("name"), "name", name); err != nil {
		return nil, err
	}
	e.name = name
	return e, nil
}

// validName returns the name of an entry that has a valid one, for
// messages about its other fields.
func (d *decoder) validName(m map[string]any) string {
	name, _ := m["name"].(string)
	if len(name) > MaxNameBytes || (d.noNUL && strings.IndexByte(name, 0) >= 0) {
		return ""
	}
	return name
}

// unknownKeys returns the keys of m that are not fields, in the order
// they were written (by line, then by name).
func unknownKeys(m map[string]any, pos *document.Pos, fields []string) []string {
	var keys []string
	for k := range m {
		if !slices.Contains(fields, k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(lineOf(pos.Key(a)), lineOf(pos.Key(b))), strings.Compare(a, b))
	})
	return keys
}

// foldKeys returns m with each key that is a field but for its case
// renamed to the field, unless m has the field itself: Go's JSON decoder,
// with which Argo CD reads a dynamic announcement, matches fields so.
func foldKeys(m map[string]any, fields []string) map[string]any {
	out, cloned := m, false
	for _, k := range slices.Sorted(maps.Keys(m)) { // a fixed order: of two spellings, the first sorted wins
		if slices.Contains(fields, k) {
			continue
		}
		for _, f := range fields {
			if _, has := out[f]; !has && strings.EqualFold(f, k) {
				if !cloned {
					out, cloned = maps.Clone(m), true
				}
				delete(out, k)
				out[f] = m[k]
				break
			}
		}
	}
	return out
}

func unknownField(k string, fields []string) string {
	msg := fmt.Sprintf("unknown field %q", document.Clip(k, 60))
	if f := document.Closest(k, fields); f != "" {
		return msg + fmt.Sprintf("; did you mean %q?", f)
	}
	return msg + "; the fields are " + strings.Join(fields, ", ")
}

func (e *entry) fail(field string, sentinel error, msg string) *Error {
	return e.failAt(e.pos.Key(field), field, sentinel, msg)
}

func (e *entry) failAt(pos *document.Pos, field string, sentinel error, msg string) *Error {
	if pos == nil {
		pos = e.pos
	}
	return e.d.fail(pos, e.index, e.name, field, sentinel, msg)
}

// text accounts for a decoded string and checks it.
func (e *entry) text(pos *document.Pos, field, s string) error {
	e.d.text += len(s)
	if e.d.text > MaxBytes {
		return e.failAt(pos, field, ErrTooLarge,
			fmt.Sprintf("the %ss hold more than %d bytes of text (YAML aliases count each time they are used)", e.d.kind, MaxBytes))
	}
	if e.d.noNUL && strings.IndexByte(s, 0) >= 0 {
		return e.failAt(pos, field, ErrInvalid, "holds a NUL character, which an environment variable cannot carry; remove it")
	}
	return nil
}

// texts accounts for and checks the strings of the fields other than the
// name, in the order of fields: strings (nil: not set), then the items of
// array and the keys and values of map.
func (e *entry) texts(strs map[string]*text, fields []string, array textList, m textMap) error {
	for _, f := range fields {
		if s := strs[f]; s != nil {
			if err := e.text(e.pos.Key(f), f, string(*s)); err != nil {
				return err
			}
		}
	}
	pos := e.pos.Key("array")
	for i, s := range array {
		if err := e.text(pos.Item(i), fmt.Sprintf("array[%d]", i), string(s)); err != nil {
			return err
		}
	}
	pos = e.pos.Key("map")
	for _, k := range slices.Sorted(maps.Keys(m)) { // the first error is the same every time
		field := mapField("map", k)
		if err := e.text(pos.Key(k), field, k); err != nil {
			return err
		}
		if err := e.text(pos.Key(k), field, string(m[k])); err != nil {
			return err
		}
	}
	return nil
}

// mapField names a map entry in messages: map["image.tag"].
func mapField(field, key string) string {
	return field + "[" + strconv.Quote(document.Clip(key, 60)) + "]"
}

func (d *decoder) announcement(i int, v any, pos *document.Pos) (Announcement, error) {
	var s announcementShape
	e, err := d.decode(i, v, pos, &s, announcementFields)
	if err != nil {
		return Announcement{}, err
	}
	strs := map[string]*text{"title": &s.Title, "tooltip": &s.Tooltip, "itemType": &s.ItemType, "collectionType": &s.CollectionType, "string": &s.String}
	if err := e.texts(strs, announcementFields, s.Array, s.Map); err != nil {
		return Announcement{}, err
	}
	a := Announcement{Name: e.name, Title: string(s.Title), Tooltip: string(s.Tooltip), Required: bool(s.Required),
		String: string(s.String), Array: s.Array.strings(), Map: s.Map.strings()}
	item, coll := string(s.ItemType), string(s.CollectionType)
	a.ItemType = ItemType(item)
	switch a.ItemType {
	case "":
		a.ItemType = ItemString
	case ItemString, ItemNumber, ItemBoolean:
	default:
		return Announcement{}, e.fail("itemType", ErrInvalid,
			fmt.Sprintf("unknown item type %q%s; use string, number or boolean", item, suggest(item, itemSynonyms, string(ItemString), string(ItemNumber), string(ItemBoolean))))
	}
	a.CollectionType = CollectionType(coll)
	switch a.CollectionType {
	case "":
		a.CollectionType = CollectionString
	case CollectionString, CollectionArray, CollectionMap:
	default:
		return Announcement{}, e.fail("collectionType", ErrInvalid,
			fmt.Sprintf("unknown collection type %q%s; use string, array or map", coll, suggest(coll, collectionSynonyms, string(CollectionString), string(CollectionArray), string(CollectionMap))))
	}

	// The proposal: "We ignore all but the configured collectionType."
	ignored := func(field string) {
		how := "collectionType is " + string(a.CollectionType)
		if coll == "" {
			how = "collectionType is not set, so it is string"
		}
		e.d.warn(e.pos.Key(field), i, a.Name, field,
			fmt.Sprintf("ignored, because %s; remove it, or set collectionType: %s", how, field))
	}
	if a.CollectionType != CollectionString && a.String != "" {
		ignored("string")
	}
	if a.CollectionType != CollectionArray && len(a.Array) > 0 {
		ignored("array")
	}
	if a.CollectionType != CollectionMap && len(a.Map) > 0 {
		ignored("map")
	}
	switch a.CollectionType {
	case CollectionString:
		a.Array, a.Map = nil, nil
		if err := e.fits(a.ItemType, "string", a.String, e.pos.Key("string")); err != nil {
			return Announcement{}, err
		}
	case CollectionArray:
		a.String, a.Map = "", nil
		if len(a.Array) == 0 {
			a.Array = nil
		}
		for j, s := range a.Array {
			if err := e.fits(a.ItemType, fmt.Sprintf("array[%d]", j), s, e.pos.Key("array").Item(j)); err != nil {
				return Announcement{}, err
			}
		}
	case CollectionMap:
		a.String, a.Array = "", nil
		if len(a.Map) == 0 {
			a.Map = nil
		}
		for _, k := range slices.Sorted(maps.Keys(a.Map)) {
			if err := e.fits(a.ItemType, mapField("map", k), a.Map[k], e.pos.Key("map").Key(k)); err != nil {
				return Announcement{}, err
			}
		}
	}
	return a, nil
}

func (e *entry) fits(t ItemType, field, s string, pos *document.Pos) error {
	if msg := misfit(t, s); msg != "" {
		return e.failAt(pos, field, ErrInvalid, msg+"; "+fix(t)+", or change itemType")
	}
	return nil
}

var (
	itemSynonyms = map[string]string{
		"str": "string", "text": "string",
		"int": "number", "integer": "number", "float": "number", "double": "number", "num": "number",
		"bool": "boolean",
	}
	collectionSynonyms = map[string]string{
		"str": "string", "text": "string",
		"list": "array", "slice": "array", "sequence": "array",
		"object": "map", "dict": "map", "hash": "map", "dictionary": "map",
	}
)

// suggest returns `(did you mean "x"?)` for a misspelt type name, or "":
// a synonym from another language (int, list, dict), else what
// document.Closest finds among names.
func suggest(s string, synonyms map[string]string, names ...string) string {
	s = strings.TrimSpace(s)
	want := synonyms[strings.ToLower(s)]
	if want == "" {
		want = document.Closest(s, names)
	}
	if want == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", want)
}

func (d *decoder) parameter(i int, v any, pos *document.Pos) (Parameter, error) {
	var s parameterShape
	e, err := d.decode(i, v, pos, &s, parameterFields)
	if err != nil {
		return Parameter{}, err
	}
	if err := e.texts(map[string]*text{"string": s.String}, parameterFields, s.Array, s.Map); err != nil {
		return Parameter{}, err
	}
	p := Parameter{Name: e.name, Array: s.Array.strings(), Map: s.Map.strings()}
	if s.String != nil {
		str := string(*s.String)
		p.String = &str
	}
	return p, nil
}

// notString says that v, found where a string belongs, is not one.
func notString(v any) string {
	msg := "must be a string, not " + document.Describe(v)
	switch v.(type) {
	case bool, int, int64, float64, json.Number:
		msg += "; quote it"
	case nil:
		msg += `; remove it, or write ""`
	}
	return msg
}
