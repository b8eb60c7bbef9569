// Package limits gives the unset fields of a struct of limits their
// defaults: every Limits type of strata (a stream's, a directory's, a
// repository's, a render's) takes a zero or negative field for "the
// default", and fills it in with Or.
package limits

import (
	"fmt"
	"reflect"
)

// Or returns set with every field that is not positive (zero, or a
// negative number or duration) taken from defaults. T must be a struct of
// numbers (integers, floats, time.Duration), all exported; any other
// field panics, as a programming error.
func Or[T any](set, defaults T) T {
	out := reflect.ValueOf(&set).Elem()
	def := reflect.ValueOf(defaults)
	if out.Kind() != reflect.Struct {
		panic(fmt.Sprintf("limits.Or: %s is not a struct", out.Type()))
	}
	for i := range out.NumField() {
		f := out.Field(i)
		var positive bool
		switch f.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			positive = f.Int() > 0
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			positive = f.Uint() > 0
		case reflect.Float32, reflect.Float64:
			positive = f.Float() > 0
		default:
			panic(fmt.Sprintf("limits.Or: field %s of %s is a %s, not a number", out.Type().Field(i).Name, out.Type(), f.Type()))
		}
		if !positive {
			f.Set(def.Field(i))
		}
	}
	return set
}
