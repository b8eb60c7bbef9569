package document

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// ErrUnknownField is wrapped by Decode errors for keys the target type does
// not have.
var ErrUnknownField = errors.New("unknown field")

// Decode fills out (a pointer to a struct, or anything encoding/json can
// decode into) from a tree, strictly: a key the target type does not have
// (by its json tags) is an error, and so is a value of the wrong type. Errors
// are *LoadErrors naming source, the line from pos (nil: no lines) and the
// path of the field.
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
			return &LoadError{Source: source, Line: lineOf(pos.Lookup(p)), Column: colOf(pos.Lookup(p)), Err: ErrSyntax,
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

// checkFields walks tree along type t and reports the first key, in path
// order, that t has no field for.
func checkFields(tree any, t reflect.Type, path Path, pos *Pos, source string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch v := tree.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Struct:
			fields := jsonFields(t)
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				ft, ok := fields[k]
				if !ok {
					kp := path.Append(Key(k))
					p := pos.Lookup(kp)
					return &LoadError{Source: source, Line: lineOf(p), Column: colOf(p), Err: ErrUnknownField,
						Msg: fmt.Sprintf("unknown field %q; known fields here: %s", kp.String(), strings.Join(sortedKeys(fields), ", "))}
				}
				if err := checkFields(v[k], ft, path.Append(Key(k)), pos, source); err != nil {
					return err
				}
			}
		case reflect.Map:
			for k, e := range v {
				if err := checkFields(e, t.Elem(), path.Append(Key(k)), pos, source); err != nil {
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

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
