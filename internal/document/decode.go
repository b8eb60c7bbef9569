package document

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
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
func checkFields(tree any, t reflect.Type, path Path, pos *Pos, source string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(checkerType) {
		if err := reflect.Zero(t).Interface().(Checker).CheckTree(tree); err != nil {
			p := pos.Lookup(path)
			return &LoadError{Source: source, Line: lineOf(p), Column: colOf(p), Path: path, Msg: err.Error(), Err: err}
		}
	}
	switch v := tree.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Struct:
			fields := jsonFields(t)
			for _, k := range writtenKeys(v, pos.Lookup(path)) {
				ft, ok := fields[k]
				if !ok {
					kp := path.Append(Key(k))
					p := pos.Lookup(kp)
					return &LoadError{Source: source, Line: lineOf(p), Column: colOf(p), Path: kp, Err: ErrUnknownField,
						Msg: fmt.Sprintf("unknown field %q; known fields here: %s", kp.String(), strings.Join(slices.Sorted(maps.Keys(fields)), ", "))}
				}
				if err := checkFields(v[k], ft, path.Append(Key(k)), pos, source); err != nil {
					return err
				}
			}
		case reflect.Map:
			for _, k := range writtenKeys(v, pos.Lookup(path)) {
				if err := checkFields(v[k], t.Elem(), path.Append(Key(k)), pos, source); err != nil {
					return err
				}
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, e := range v {
				if err := checkFields(e, t.Elem(), path.Append(Index(i)), pos, source); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// jsonFields maps the JSON names of a struct's fields, embedded ones
// included, to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range jsonFields(et) {
					out[k] = v
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
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
