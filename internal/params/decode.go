package params

import (
	"encoding/json"
	"fmt"
	"maps"
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

// An entry is one map of a list, being decoded.
type entry struct {
	d     *decoder
	index int
	name  string
	m     map[string]any
	pos   *document.Pos
}

// start checks that v is a map and decodes its name.
func (d *decoder) start(i int, v any, pos *document.Pos, fields []string) (*entry, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, d.fail(pos, i, "", "", ErrInvalid,
			fmt.Sprintf(`must be a map with at least a name, such as {"name": "values-files"}, not %s`, document.Describe(v)))
	}
	if d.ignoreUnknown {
		m = foldKeys(m, fields)
	}
	e := &entry{d: d, index: i, m: m, pos: pos}
	name, err := e.str("name")
	if err != nil {
		return nil, err
	}
	for _, k := range e.keys() {
		if !slices.Contains(fields, k) {
			if d.ignoreUnknown {
				d.warn(pos.Key(k), i, name, document.Clip(k, 60), unknownField(k, fields)+"; it is ignored")
				continue
			}
			e.name = name
			return nil, e.failAt(pos.Key(k), document.Clip(k, 60), ErrInvalid, unknownField(k, fields))
		}
	}
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
	e.name = name
	return e, nil
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
	for _, f := range fields {
		if strings.EqualFold(f, k) {
			return msg + fmt.Sprintf("; did you mean %q?", f)
		}
	}
	return msg + "; the fields are " + strings.Join(fields, ", ")
}

// keys returns the entry's keys in the order they were written (by line,
// then by name).
func (e *entry) keys() []string {
	keys := make([]string, 0, len(e.m))
	for k := range e.m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if la, lb := lineOf(e.pos.Key(a)), lineOf(e.pos.Key(b)); la != lb {
			return la - lb
		}
		return strings.Compare(a, b)
	})
	return keys
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

// str decodes an optional string field; null is "".
func (e *entry) str(key string) (string, error) {
	s, _, err := e.optStr(key)
	return s, err
}

// optStr decodes an optional string field and says whether it is set.
func (e *entry) optStr(key string) (string, bool, error) {
	v := e.m[key]
	if v == nil {
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", false, e.fail(key, ErrInvalid, notString(v))
	}
	if err := e.text(e.pos.Key(key), key, s); err != nil {
		return "", false, err
	}
	return s, true, nil
}

func (e *entry) boolean(key string) (bool, error) {
	switch v := e.m[key].(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case string:
		if v == "true" || v == "false" {
			return false, e.fail(key, ErrInvalid, fmt.Sprintf("must be true or false, not %s; remove the quotes", document.Describe(v)))
		}
	}
	return false, e.fail(key, ErrInvalid, fmt.Sprintf("must be true or false, not %s", document.Describe(e.m[key])))
}

// array decodes an optional list of strings; null is nil, [] is empty.
func (e *entry) array(key string) ([]string, error) {
	v := e.m[key]
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		msg := fmt.Sprintf("must be a list of strings, not %s", document.Describe(v))
		if s, ok := v.(string); ok {
			msg += fmt.Sprintf("; write [%s]", strconv.Quote(document.Clip(s, 40)))
		}
		return nil, e.fail(key, ErrInvalid, msg)
	}
	pos := e.pos.Key(key)
	if len(list) > MaxItems {
		return nil, e.fail(key, ErrTooLarge, fmt.Sprintf("holds %d items, more than the limit of %d", len(list), MaxItems))
	}
	out := make([]string, len(list))
	for i, item := range list {
		field := fmt.Sprintf("%s[%d]", key, i)
		s, ok := item.(string)
		if !ok {
			return nil, e.failAt(pos.Item(i), field, ErrInvalid, notString(item))
		}
		if err := e.text(pos.Item(i), field, s); err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// strMap decodes an optional map of strings; null is nil, {} is empty.
func (e *entry) strMap(key string) (map[string]string, error) {
	v := e.m[key]
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, e.fail(key, ErrInvalid, fmt.Sprintf(`must be a map of strings to strings, such as {"image.tag": "v1"}, not %s`, document.Describe(v)))
	}
	pos := e.pos.Key(key)
	if len(m) > MaxItems {
		return nil, e.fail(key, ErrTooLarge, fmt.Sprintf("holds %d entries, more than the limit of %d", len(m), MaxItems))
	}
	out := make(map[string]string, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first error is the same every time
	for _, k := range keys {
		field := mapField(key, k)
		s, ok := m[k].(string)
		if !ok {
			return nil, e.failAt(pos.Key(k), field, ErrInvalid, notString(m[k]))
		}
		if err := e.text(pos.Key(k), field, k); err != nil {
			return nil, err
		}
		if err := e.text(pos.Key(k), field, s); err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}

// mapField names a map entry in messages: map["image.tag"].
func mapField(field, key string) string {
	return field + "[" + strconv.Quote(document.Clip(key, 60)) + "]"
}

var announcementFields = []string{"name", "title", "tooltip", "required", "itemType", "collectionType", "string", "array", "map"}

func (d *decoder) announcement(i int, v any, pos *document.Pos) (Announcement, error) {
	e, err := d.start(i, v, pos, announcementFields)
	if err != nil {
		return Announcement{}, err
	}
	a := Announcement{Name: e.name}
	var item, coll string
	for _, k := range e.keys() {
		switch k {
		case "title":
			a.Title, err = e.str(k)
		case "tooltip":
			a.Tooltip, err = e.str(k)
		case "required":
			a.Required, err = e.boolean(k)
		case "itemType":
			item, err = e.str(k)
		case "collectionType":
			coll, err = e.str(k)
		case "string":
			a.String, err = e.str(k)
		case "array":
			a.Array, err = e.array(k)
		case "map":
			a.Map, err = e.strMap(k)
		}
		if err != nil {
			return Announcement{}, err
		}
	}

	a.ItemType = ItemType(item)
	switch a.ItemType {
	case "":
		a.ItemType = ItemString
	case ItemString, ItemNumber, ItemBoolean:
	default:
		return Announcement{}, e.fail("itemType", ErrInvalid,
			fmt.Sprintf("unknown item type %q%s; use string, number or boolean", item, suggest(item, itemSynonyms)))
	}
	a.CollectionType = CollectionType(coll)
	switch a.CollectionType {
	case "":
		a.CollectionType = CollectionString
	case CollectionString, CollectionArray, CollectionMap:
	default:
		return Announcement{}, e.fail("collectionType", ErrInvalid,
			fmt.Sprintf("unknown collection type %q%s; use string, array or map", coll, suggest(coll, collectionSynonyms)))
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
		for _, k := range sortedKeys(a.Map) {
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

func fix(t ItemType) string {
	if t == ItemNumber {
		return "write a number such as 3 or 2.5"
	}
	return "write true or false"
}

// misfit says why s is not a value of type t, or returns "". An empty
// string fits every type: it stands for no value.
func misfit(t ItemType, s string) string {
	if s == "" {
		return ""
	}
	switch t {
	case ItemNumber:
		if !isNumber(s) {
			return fmt.Sprintf("%q is not a number, but itemType is number", document.Clip(s, 40))
		}
	case ItemBoolean:
		if s != "true" && s != "false" {
			return fmt.Sprintf("%q is not a boolean, but itemType is boolean", document.Clip(s, 40))
		}
	}
	return ""
}

// isNumber reports whether s is a number as JSON writes one:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isNumber(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	start := i
	if n := digits(); n == 0 || (n > 1 && s[start] == '0') {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
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

// suggest returns `(did you mean "x"?)` for a misspelt type name, or "".
func suggest(s string, synonyms map[string]string) string {
	l := strings.ToLower(strings.TrimSpace(s))
	want := synonyms[l]
	if want == "" {
		for _, v := range synonyms {
			if v == l {
				want = v
			}
		}
	}
	if want == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", want)
}

var parameterFields = []string{"name", "string", "array", "map"}

func (d *decoder) parameter(i int, v any, pos *document.Pos) (Parameter, error) {
	e, err := d.start(i, v, pos, parameterFields)
	if err != nil {
		return Parameter{}, err
	}
	p := Parameter{Name: e.name}
	for _, k := range e.keys() {
		switch k {
		case "string":
			var s string
			var set bool
			s, set, err = e.optStr(k)
			if set {
				p.String = &s
			}
		case "array":
			p.Array, err = e.array(k)
		case "map":
			p.Map, err = e.strMap(k)
		}
		if err != nil {
			return Parameter{}, err
		}
	}
	return p, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
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
