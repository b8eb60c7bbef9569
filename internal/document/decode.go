package document

import (
	"cmp"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// ErrUnknownField is wrapped by Decode errors for keys the target type does
// not have.
var ErrUnknownField = errors.New("unknown field")

// A Checker is a type with rules of its own for the tree values it is
// decoded from: a message of its own for a value of the wrong type, a
// limit. Decode calls CheckTree on the type's zero value with every value
// of the tree found for a field of the type (null included), before it
// decodes anything, so the type's decoding by encoding/json sees only
// values CheckTree accepted. The method needs a value receiver.
//
// An error from CheckTree stops Decode: it comes back as a *LoadError at
// the value's line and path, with the error's text as its message and the
// error itself wrapped (errors.As finds it).
type Checker interface {
	CheckTree(v any) error
}

var checkerType = reflect.TypeFor[Checker]()

// An UnknownFieldError is the Err of a Decode error for a key the target
// struct has no field for; errors.Is(err, ErrUnknownField) holds. A caller
// phrasing its own message finds here what it needs: the key, the names
// the struct has, and the one most likely meant.
type UnknownFieldError struct {
	Key string // the key as written
	// Known are the struct's JSON names in the order its fields are
	// declared, an embedded struct's where it is embedded.
	Known []string
	// Suggestion is Closest(Key, Known): the name most likely meant, or "".
	Suggestion string
	// Reason is the struct's own message for the key (UnknownFielder), ""
	// when it has none.
	Reason string
}

func (e *UnknownFieldError) Error() string {
	switch {
	case e.Reason != "":
		return e.Reason
	case e.Suggestion != "":
		return fmt.Sprintf("unknown field %q; did you mean %s?", e.Key, e.Suggestion)
	}
	return fmt.Sprintf("unknown field %q; known fields are %s", e.Key, strings.Join(e.Known, ", "))
}

func (e *UnknownFieldError) Unwrap() error { return ErrUnknownField }

// An UnknownFielder is a struct type with a message of its own for some
// keys it does not have: a field's old name, a field of another version.
// Decode calls UnknownField on the type's zero value with each unknown key
// and the struct's JSON names; a non-empty result is the error's message
// (and the UnknownFieldError's Reason). The method needs a value receiver.
type UnknownFielder interface {
	UnknownField(key string, known []string) string
}

var unknownFielderType = reflect.TypeFor[UnknownFielder]()

// Decode fills out (a pointer to a struct, or anything encoding/json can
// decode into) from a tree, strictly: a key the target type does not have
// (by its json tags) is an error, and so is a value of the wrong type. Errors
// are *LoadErrors naming source, the line from pos (nil: no lines) and the
// path of the field (in Path, too). Of several unknown keys, or values a
// Checker rejects, the first written is reported (with no positions, the
// first by name).
func Decode(tree any, pos *Pos, source string, out any) error {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("document.Decode: out must be a non-nil pointer, not %T", out)
	}
	if err := checkFields(tree, rv.Type().Elem(), nil, pos, source); err != nil {
		return err
	}
	if !decodeReference.Load() && rv.Elem().IsZero() {
		// The direct way, for what it knows; encoding/json's for the rest
		// and for every error, so that the result is its result.
		if err := assign(tree, rv.Elem()); err == nil {
			return nil
		}
		rv.Elem().SetZero()
	}
	return decodeJSON(tree, pos, source, out)
}

// decodeReference turns Decode's direct fill off (SetDecodeCodecs).
var decodeReference atomic.Bool

// SetDecodeCodecs sets, for the whole process, how Decode fills a value:
// FastCodecs (the default) fills it straight from the tree where the
// result is what encoding/json would make of the tree's JSON, and
// ReferenceCodecs always goes through encoding/json, the reference. The
// command line sets it from --fast-codecs (fast where a command has none).
func SetDecodeCodecs(c Codecs) { decodeReference.Store(!c.Fast()) }

// DecodeCodecs returns what SetDecodeCodecs set.
func DecodeCodecs() Codecs {
	if decodeReference.Load() {
		return ReferenceCodecs
	}
	return FastCodecs
}

// decodeJSON is Decode's reference: encoding/json decoding the tree's JSON.
func decodeJSON(tree any, pos *Pos, source string, out any) error {
	data, err := json.Marshal(tree)
	if err != nil {
		return &LoadError{Source: source, Line: lineOf(pos), Err: ErrSyntax, Msg: err.Error()}
	}
	if err := json.Unmarshal(data, out); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			p := fieldPath(te.Field)
			return &LoadError{Source: source, Line: lineOf(pos.Lookup(p)), Column: colOf(pos.Lookup(p)), Path: p, Err: ErrSyntax,
				Msg: fmt.Sprintf("%s: expected %s, got a JSON %s", te.Field, typeName(te.Type), te.Value)}
		}
		return &LoadError{Source: source, Line: lineOf(pos), Err: ErrSyntax, Msg: err.Error()}
	}
	return nil
}

// fieldPath turns encoding/json's dotted field name into a Path.
func fieldPath(field string) Path {
	if field == "" {
		return nil
	}
	var p Path
	for _, k := range strings.Split(field, ".") {
		p = append(p, Key(k))
	}
	return p
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a map"
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return t.String()
}

// checkFields walks tree along type t, calling the Checkers it meets, and
// reports the first key, in the order written, that t has no field for.
// path is the tree's path (a stack the walk pushes onto and pops; errors
// keep a copy) and at its position.
func checkFields(tree any, t reflect.Type, path Path, at *Pos, source string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if c := checkerOf(t); c != nil {
		if err := c.CheckTree(tree); err != nil {
			return &LoadError{Source: source, Line: lineOf(at), Column: colOf(at), Path: slices.Clone(path), Msg: err.Error(), Err: err}
		}
	}
	switch v := tree.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Struct:
			fields := structFields(t)
			for _, k := range writtenKeys(v, at) {
				ft, ok := fields.types[k]
				if !ok {
					return unknownField(t, fields, k, path, at.Key(k), source)
				}
				if err := checkFields(v[k], ft, append(path, Key(k)), at.Key(k), source); err != nil {
					return err
				}
			}
		case reflect.Map:
			for _, k := range writtenKeys(v, at) {
				if err := checkFields(v[k], t.Elem(), append(path, Key(k)), at.Key(k), source); err != nil {
					return err
				}
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, e := range v {
				if err := checkFields(e, t.Elem(), append(path, Index(i)), at.Item(i), source); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkers caches checkerOf.
var checkers sync.Map // reflect.Type → Checker, nil for none

// checkerOf returns the Checker of type t (its zero value), nil if t is
// not one.
func checkerOf(t reflect.Type) Checker {
	if c, ok := checkers.Load(t); ok {
		c, _ := c.(Checker)
		return c
	}
	var c Checker
	if t.Implements(checkerType) {
		c = reflect.Zero(t).Interface().(Checker)
	}
	checkers.Store(t, c)
	return c
}

// unknownField makes the error for key k, which struct type t (whose
// fields are fields) does not have.
func unknownField(t reflect.Type, fields *fieldSet, k string, path Path, p *Pos, source string) error {
	kp := path.Append(Key(k))
	ue := &UnknownFieldError{Key: k, Known: slices.Clone(fields.names), Suggestion: Closest(k, fields.names)}
	msg := fmt.Sprintf("unknown field %q; known fields here: %s", kp.String(), strings.Join(slices.Sorted(maps.Keys(fields.types)), ", "))
	if t.Implements(unknownFielderType) {
		if r := reflect.Zero(t).Interface().(UnknownFielder).UnknownField(k, ue.Known); r != "" {
			ue.Reason, msg = r, r
		}
	}
	return &LoadError{Source: source, Line: lineOf(p), Column: colOf(p), Path: kp, Err: ue, Msg: msg}
}

// A fieldSet is what Decode needs of a struct type: its fields' JSON names
// in the order declared, their types and indices.
type fieldSet struct {
	names []string
	types map[string]reflect.Type
	index map[string][]int
	// direct is false for a struct assign leaves to encoding/json: one with
	// an embedded pointer, a name given twice or a ",string" field.
	direct bool
}

// fieldSets caches structFields: a type's fields never change.
var fieldSets sync.Map // reflect.Type → *fieldSet

func structFields(t reflect.Type) *fieldSet {
	if fs, ok := fieldSets.Load(t); ok {
		return fs.(*fieldSet)
	}
	fs := &fieldSet{types: map[string]reflect.Type{}, index: map[string][]int{}, direct: true}
	jsonFields(t, fs, nil)
	fieldSets.Store(t, fs)
	return fs
}

// jsonFields adds the JSON names of a struct's fields, embedded ones
// included, their types and indices (under prefix) to fs.
func jsonFields(t reflect.Type, fs *fieldSet, prefix []int) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",string,") {
			fs.direct = false
		}
		idx := append(slices.Clip(prefix), i)
		if f.Anonymous && name == "" {
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
				fs.direct = false
			}
			if et.Kind() == reflect.Struct {
				jsonFields(et, fs, idx)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := fs.types[name]; dup {
			fs.direct = false
		} else {
			fs.names = append(fs.names, name)
		}
		fs.types[name] = f.Type
		fs.index[name] = idx
	}
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// errIndirect is assign's answer for what it leaves to encoding/json.
var errIndirect = errors.New("document: decoded by encoding/json")

// assign decodes tree into rv, a zero value, as encoding/json decodes the
// tree's JSON, without writing the JSON: strings, booleans, int64 and
// float64 numbers into kinds that hold them exactly, structs (by their
// JSON names), maps with string keys, slices and pointers. Anything else
// (interfaces, unmarshalers, arrays, []byte, float32, json.Number, invalid
// UTF-8 that encoding/json would replace) and every mismatch is
// errIndirect, and Decode then takes encoding/json's way.
func assign(tree any, rv reflect.Value) error {
	t := rv.Type()
	if t.Implements(jsonUnmarshalerType) || t.Implements(textUnmarshalerType) ||
		reflect.PointerTo(t).Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return errIndirect
	}
	if tree == nil {
		switch t.Kind() {
		case reflect.Interface, reflect.Array:
			return errIndirect
		}
		return nil // rv is zero already: null leaves it so
	}
	switch t.Kind() {
	case reflect.Pointer:
		rv.Set(reflect.New(t.Elem()))
		return assign(tree, rv.Elem())
	case reflect.Struct:
		m, ok := tree.(map[string]any)
		fs := structFields(t)
		if !ok || !fs.direct {
			return errIndirect
		}
		for k, v := range m {
			idx, ok := fs.index[k]
			if !ok {
				return errIndirect
			}
			if err := assign(v, rv.FieldByIndex(idx)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		m, ok := tree.(map[string]any)
		if !ok || t.Key().Kind() != reflect.String || reflect.PointerTo(t.Key()).Implements(textUnmarshalerType) {
			return errIndirect
		}
		out := reflect.MakeMapWithSize(t, len(m))
		for k, v := range m {
			if !utf8.ValidString(k) {
				return errIndirect
			}
			e := reflect.New(t.Elem()).Elem()
			if err := assign(v, e); err != nil {
				return err
			}
			out.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), e)
		}
		rv.Set(out)
		return nil
	case reflect.Slice:
		l, ok := tree.([]any)
		if !ok || t.Elem().Kind() == reflect.Uint8 {
			return errIndirect
		}
		out := reflect.MakeSlice(t, len(l), len(l))
		for i, v := range l {
			if err := assign(v, out.Index(i)); err != nil {
				return err
			}
		}
		rv.Set(out)
		return nil
	case reflect.String:
		if s, ok := tree.(string); ok && utf8.ValidString(s) {
			rv.SetString(s)
			return nil
		}
	case reflect.Bool:
		if b, ok := tree.(bool); ok {
			rv.SetBool(b)
			return nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n, ok := integer(tree); ok && !rv.OverflowInt(n) {
			rv.SetInt(n)
			return nil
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if n, ok := integer(tree); ok && n >= 0 && !rv.OverflowUint(uint64(n)) {
			rv.SetUint(uint64(n))
			return nil
		}
	case reflect.Float64:
		switch n := tree.(type) {
		case int64:
			rv.SetFloat(float64(n))
			return nil
		case float64:
			if !math.IsNaN(n) && !math.IsInf(n, 0) {
				rv.SetFloat(n)
				return nil
			}
		}
	}
	return errIndirect
}

// integer returns an int64 or float64 number of a tree as an integer, if
// it is one that encoding/json reads as such: a whole float64 in the int64
// range (written without an exponent, below 1e21).
func integer(tree any) (int64, bool) {
	switch n := tree.(type) {
	case int64:
		return n, true
	case float64:
		if n == math.Trunc(n) && n >= -(1<<63) && n < 1<<63 {
			return int64(n), true
		}
	}
	return 0, false
}

// writtenKeys returns the keys of m in the order they were written, by
// their positions in pos (keys with none last), then by name.
func writtenKeys(m map[string]any, pos *Pos) []string {
	keys := slices.Sorted(maps.Keys(m))
	if pos == nil {
		return keys
	}
	at := func(k string) (int, int) {
		if p := pos.Key(k); p != nil {
			return p.Line, p.Column
		}
		return math.MaxInt, 0
	}
	slices.SortStableFunc(keys, func(a, b string) int {
		la, ca := at(a)
		lb, cb := at(b)
		return cmp.Or(cmp.Compare(la, lb), cmp.Compare(ca, cb))
	})
	return keys
}
