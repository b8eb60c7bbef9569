package values_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/values"
)

// A setCase applies arg with kind, after applying before with --set-json to
// an empty map when before is set. err is a part of the expected error.
type setCase struct {
	name   string
	kind   values.SetKind
	before string
	arg    string
	want   map[string]any
	err    string
}

type sm = map[string]any
type sl = []any

var setCases = []setCase{
	// --set: scalars
	{name: "empty argument", arg: "", want: sm{}},
	{name: "string", arg: "a=b", want: sm{"a": "b"}},
	{name: "empty value", arg: "a=", want: sm{"a": ""}},
	{name: "empty value then more", arg: "a=,b=c", want: sm{"a": "", "b": "c"}},
	{name: "null", arg: "a=null,b=NULL", want: sm{"a": nil, "b": nil}},
	{name: "bools any case", arg: "a=true,b=False,c=TRUE", want: sm{"a": true, "b": false, "c": true}},
	{name: "zero", arg: "a=0", want: sm{"a": int64(0)}},
	{name: "ints", arg: "a=42,b=-7,c=+5,d=9223372036854775807", want: sm{"a": int64(42), "b": int64(-7), "c": int64(5), "d": int64(9223372036854775807)}},
	{name: "leading zeros stay a string", arg: "a=0123,b=00", want: sm{"a": "0123", "b": "00"}},
	{name: "leading zeros after a sign are an int as in Helm", arg: "a=-007", want: sm{"a": int64(-7)}},
	{name: "int64 overflow stays a string", arg: "a=9223372036854775808", want: sm{"a": "9223372036854775808"}},
	{name: "floats stay strings", arg: "a=1.5,b=1e3,c=1_000", want: sm{"a": "1.5", "b": "1e3", "c": "1_000"}},
	{name: "spaces are kept", arg: "a= x y ", want: sm{"a": " x y "}},
	{name: "escaped comma and equals", arg: `a=x\,y,b=p\=q`, want: sm{"a": "x,y", "b": "p=q"}},
	{name: "escaped dot and bracket in a key", arg: `a\.b=c,d\[0]=e`, want: sm{"a.b": "c", "d[0]": "e"}},
	{name: "escaped backslash", arg: `a\\b=c\\d`, want: sm{`a\b`: `c\d`}},
	{name: "trailing backslash is dropped", arg: `a=x\`, want: sm{"a": "x"}},
	{name: "equals in a value needs no escape", arg: "a=b=c", want: sm{"a": "b=c"}},
	{name: "invalid UTF-8 becomes U+FFFD", arg: "a\xff=\xe2\x82", want: sm{"a\uFFFD": "\uFFFD\uFFFD"}},
	{name: "later assignment wins", arg: "a=1,a=2", want: sm{"a": int64(2)}},
	{name: "trailing comma", arg: "a=1,", want: sm{"a": int64(1)}},

	// --set: lists in braces
	{name: "list", arg: "a={x,y}", want: sm{"a": sl{"x", "y"}}},
	{name: "typed list", arg: "a={1,true,null,007}", want: sm{"a": sl{int64(1), true, nil, "007"}}},
	{name: "empty braces hold one empty string", arg: "a={}", want: sm{"a": sl{""}}},
	{name: "list then more", arg: "a={x},b=2", want: sm{"a": sl{"x"}, "b": int64(2)}},
	{name: "list needs no comma after it", arg: "a={x}b=2", want: sm{"a": sl{"x"}, "b": int64(2)}},
	{name: "escaped brace is a string", arg: `a=\{x}`, want: sm{"a": "{x}"}},
	{name: "brace later in a value is a string", arg: "a=x{y}", want: sm{"a": "x{y}"}},
	{name: "unterminated list", arg: "a={x,y", err: "no closing }"},

	// --set: nested keys and indices
	{name: "nested keys", arg: "a.b=c,d.e=f", want: sm{"a": sm{"b": "c"}, "d": sm{"e": "f"}}},
	{name: "nested keys merge", arg: "a.b=c,a.d.e=f", want: sm{"a": sm{"b": "c", "d": sm{"e": "f"}}}},
	{name: "index", arg: "a[0]=1", want: sm{"a": sl{int64(1)}}},
	{name: "index pads with null", arg: "a[2]=x", want: sm{"a": sl{nil, nil, "x"}}},
	{name: "indices fill in", arg: "a[1]=y,a[0]=x", want: sm{"a": sl{"x", "y"}}},
	{name: "map in a list", arg: "a[0].b=c", want: sm{"a": sl{sm{"b": "c"}}}},
	{name: "maps in a list merge", arg: "a[0].b=c,a[0].d=e", want: sm{"a": sl{sm{"b": "c", "d": "e"}}}},
	{name: "list in a list", arg: "a[0][1]=x", want: sm{"a": sl{sl{nil, "x"}}}},
	{name: "deep mix", arg: "a.b[1].c[0][0].d=e", want: sm{"a": sm{"b": sl{nil, sm{"c": sl{sl{sm{"d": "e"}}}}}}}},
	{name: "index with plus and zeros as Atoi reads it", arg: "a[+1]=x,b[007]=y,c[-0]=z", want: sm{"a": sl{nil, "x"}, "b": sl{nil, nil, nil, nil, nil, nil, nil, "y"}, "c": sl{"z"}}},
	{name: "empty value at index", arg: "a[0]=", want: sm{"a": sl{""}}},
	{name: "list value at index", arg: "a[1]={x,y}", want: sm{"a": sl{nil, sl{"x", "y"}}}},
	{name: "empty key inside a list element", arg: "a[0].=1", want: sm{"a": sl{sm{}}}},

	// --set: what dest already holds
	{name: "scalar overwrites a map", before: `a={"b":1}`, arg: "a=x", want: sm{"a": "x"}},
	{name: "map merges into a map", before: `a={"b":1}`, arg: "a.c=2", want: sm{"a": sm{"b": int64(1), "c": int64(2)}}},
	{name: "index into a map", before: `a={"b":1}`, arg: "a[0]=1", err: `a holds a map, not a list`},
	{name: "key into a string", before: `a="s"`, arg: "a.b=c", err: `a holds the string "s", not a map`},
	{name: "key into null", before: `a=null`, arg: "a.b=c", err: "a holds null, not a map"},
	{name: "index into null", before: `a=null`, arg: "a[0]=c", err: "a holds null, not a list"},
	{name: "list element scalar becomes a map", before: `a=[5,6]`, arg: "a[0].b=c", want: sm{"a": sl{sm{"b": "c"}, int64(6)}}},
	{name: "list element replaced", before: `a=[5,6]`, arg: "a[1]=x", want: sm{"a": sl{int64(5), "x"}}},
	{name: "list grows", before: `a=[5]`, arg: "a[2]=x", want: sm{"a": sl{int64(5), nil, "x"}}},
	{name: "inner list element replaced", before: `a=[[1,2]]`, arg: "a[0][1]=x", want: sm{"a": sl{sl{int64(1), "x"}}}},
	{name: "inner list under null", before: `a=[null]`, arg: "a[0][0]=x", want: sm{"a": sl{sl{"x"}}}},
	{name: "inner index into a string", before: `a=["s"]`, arg: "a[0][0]=x", err: `a[0] holds the string "s", not a list`},
	{name: "empty key in an existing map", before: `a={"b":1}`, arg: "a.=x", want: sm{"a": sm{"b": int64(1)}}},

	// --set: errors
	{name: "name without value", arg: "a", err: `--set "a": key "a" has no value; write a=VALUE`},
	{name: "name without value before comma", arg: "a,b=1", err: `key "a" has no value`},
	{name: "nested name without value", arg: "a.b", err: `key "b" has no value`},
	{name: "double comma", arg: "a=1,,b=2", err: "empty assignment"},
	{name: "empty key after dot", arg: "a.=1", err: "the key after a. is empty"},
	{name: "index not a number", arg: "a[x]=1", err: `--set "a[x]=1": list index "x" is not a non-negative integer`},
	{name: "empty index", arg: "a[]=1", err: `list index "" is not a non-negative integer`},
	{name: "negative index", arg: "a[-1]=1", err: `list index "-1" is not a non-negative integer`},
	{name: "index over the limit", arg: "a[65537]=1", err: "list index 65537 exceeds the limit of 65536"},
	{name: "index overflows int", arg: "a[99999999999999999999]=1", err: "exceeds the limit"},
	{name: "text after an index", arg: "a[0]x=1", err: `unexpected "x" after a list index`},
	{name: "comma after an index", arg: "a[0],b=1", err: `unexpected ",b" after a list index`},
	{name: "error names the assignment", arg: "ok=1,a[x]=2,b=3", err: `--set "a[x]=2": list index "x"`},

	// --set: Helm quietly accepts an argument that ends inside a path
	{name: "ends after open bracket", arg: "x=1,a[", want: sm{"x": int64(1)}},
	{name: "ends inside an index", arg: "a[x", want: sm{}},
	{name: "ends after an index", arg: "a[0]", want: sm{"a": sl{}}},
	{name: "ends after a huge index", arg: "a[99999999]", want: sm{"a": sl{}}},
	{name: "ends after a nested index", arg: "x.a[0][", want: sm{"x": sm{"a": sl{}}}},
	{name: "ends after a dot", arg: "a.", want: sm{}},
	{name: "ends after a dot in a list element", before: `a=[5]`, arg: "a[0].", want: sm{"a": sl{sm{}}}},
	{name: "ends after a nested index in an element", before: `a=[[5]]`, arg: "a[0][0].", want: sm{"a": sl{sl{sm{}}}}},
	{name: "ends after a dot of a string", before: `a="s"`, arg: "a.", err: "not a map"},
	{name: "empty key sets nothing", arg: ".a=1,=2,[0]=3", want: sm{}},
	{name: "empty value at the end ends like a path", arg: "a.=", want: sm{}},
	{name: "empty value at the end under a key", arg: "x.a=", want: sm{"x": sm{"a": ""}}},
	{name: "empty value at the end is not put into a list", arg: "a[0].b=", want: sm{"a": sl{}}},
	{name: "empty value at the end in a list's map", before: `a=[{}]`, arg: "a[0].b=", want: sm{"a": sl{sm{"b": ""}}}},
	{name: "empty value before a comma", arg: "a[0].b=,", want: sm{"a": sl{sm{"b": ""}}}},
	{name: "empty value before a comma after an empty key", arg: "a.=,b=1", err: "the key after a. is empty"},

	// --set: limits
	{name: "30 nested keys", arg: strings.Repeat("a.", 30) + "b=1", want: setNest(30, "b", int64(1))},
	{name: "31 nested keys", arg: strings.Repeat("a.", 31) + "b=1", err: "more than 30 nested keys"},
	{name: "indices do not count as nesting", arg: strings.Repeat("a[0].", 40) + "b=1", want: setNestList(40, "b", int64(1))},
	{name: "path over 1000 steps", arg: "a" + strings.Repeat("[0]", 1000) + "=1", err: "more than 1000 steps"},

	// --set-string
	{name: "string: all strings", kind: values.SetString, arg: "a=1,b=true,c=null,d=", want: sm{"a": "1", "b": "true", "c": "null", "d": ""}},
	{name: "string: list", kind: values.SetString, arg: "a={1,x},b[1]=2", want: sm{"a": sl{"1", "x"}, "b": sl{nil, "2"}}},
	{name: "string: escapes", kind: values.SetString, arg: `a\,b=1\,2`, want: sm{"a,b": "1,2"}},
	{name: "string: no value", kind: values.SetString, arg: "a", err: `--set-string "a": key "a" has no value`},

	// --set-json
	{name: "json: object", kind: values.SetJSON, arg: `a={"b":[1,2.5,"x",null,true,{}]}`, want: sm{"a": sm{"b": sl{int64(1), 2.5, "x", nil, true, sm{}}}}},
	{name: "json: numbers", kind: values.SetJSON, arg: `a=[0,-0,1e3,1.0,-9223372036854775808,9223372036854775808]`, want: sm{"a": sl{int64(0), int64(0), 1000.0, 1.0, int64(-9223372036854775808), json.Number("9223372036854775808")}}},
	{name: "json: empty is null", kind: values.SetJSON, arg: "a=,b=  ,c=", want: sm{"a": nil, "b": nil, "c": nil}},
	{name: "json: commas inside values", kind: values.SetJSON, arg: `a="x,y",b=[1,2]`, want: sm{"a": "x,y", "b": sl{int64(1), int64(2)}}},
	{name: "json: spaces around", kind: values.SetJSON, arg: `a= 1 , b=2`, want: sm{"a": int64(1), " b": int64(2)}},
	{name: "json: no comma needed after a value", kind: values.SetJSON, arg: `a=1b=2`, want: sm{"a": int64(1), "b": int64(2)}},
	{name: "json: index and path", kind: values.SetJSON, arg: `a.b[1]={"c":"d"}`, want: sm{"a": sm{"b": sl{nil, sm{"c": "d"}}}}},
	{name: "json: not json", kind: values.SetJSON, arg: "a=x", err: `--set-json "a=x": value is not valid JSON`},
	{name: "json: truncated", kind: values.SetJSON, arg: `a={"b":`, err: "not valid JSON"},
	{name: "json: float out of range", kind: values.SetJSON, arg: "a=1e400", err: "number 1e400 is out of range"},
	{name: "json: huge integer is kept", kind: values.SetJSON, arg: "a=" + strings.Repeat("9", 400), want: sm{"a": json.Number(strings.Repeat("9", 400))}},

	// --set-file
	{name: "file: content", kind: values.SetFile, arg: "a=testdata/set/hello.txt", want: sm{"a": "hello\n"}},
	{name: "file: several", kind: values.SetFile, arg: "a=testdata/set/hello.txt,b.c=testdata/set/multi.txt", want: sm{"a": "hello\n", "b": sm{"c": "line one\nline two, with a comma\n"}}},
	{name: "file: list of files", kind: values.SetFile, arg: "a={testdata/set/hello.txt,testdata/set/hello.txt}", want: sm{"a": sl{"hello\n", "hello\n"}}},
	{name: "file: empty value reads nothing", kind: values.SetFile, arg: "a=", want: sm{"a": ""}},
	{name: "file: missing", kind: values.SetFile, arg: "a=testdata/set/missing.txt", err: `--set-file "a=testdata/set/missing.txt": reading file "testdata/set/missing.txt"`},

	// --set-literal
	{name: "literal: everything after =", kind: values.SetLiteral, arg: `a=b,c=d\,{e}`, want: sm{"a": `b,c=d\,{e}`}},
	{name: "literal: empty", kind: values.SetLiteral, arg: "a=", want: sm{"a": ""}},
	{name: "literal: path", kind: values.SetLiteral, arg: "a.b[1]=x", want: sm{"a": sm{"b": sl{nil, "x"}}}},
	{name: "literal: no escapes in keys", kind: values.SetLiteral, arg: `a\.b=c`, want: sm{`a\`: sm{"b": "c"}}},
	{name: "literal: comma in a key", kind: values.SetLiteral, arg: "a,b=c", want: sm{"a,b": "c"}},
	{name: "literal: no value", kind: values.SetLiteral, arg: "a", err: `--set-literal "a": key "a" has no value`},
	{name: "literal: text after an index", kind: values.SetLiteral, arg: "a[0],b=c", err: "after a list index"},
	{name: "literal: nesting limit", kind: values.SetLiteral, arg: strings.Repeat("a.", 31) + "b=1", err: "more than 30 nested keys"},
}

// setNest returns n maps nested under key "a" holding k: v.
func setNest(n int, k string, v any) map[string]any {
	t := sm{k: v}
	for range n {
		t = sm{"a": t}
	}
	return t
}

// setNestList returns n one-element lists nested under key "a" holding k: v.
func setNestList(n int, k string, v any) map[string]any {
	t := sm{k: v}
	for range n {
		t = sm{"a": sl{t}}
	}
	return t
}

// setDiff is cmp.Diff, except that it is quick for deeply nested equal
// lists, where cmp takes time exponential in the depth.
func setDiff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return cmp.Diff(want, got)
}

func setReadFile(path string) ([]byte, error) { return os.ReadFile(path) }

func TestApplySet(t *testing.T) {
	for _, c := range setCases {
		t.Run(c.name, func(t *testing.T) {
			dest := map[string]any{}
			if c.before != "" {
				if err := values.ApplySet(dest, values.SetJSON, c.before, nil); err != nil {
					t.Fatalf("before: %v", err)
				}
			}
			err := values.ApplySet(dest, c.kind, c.arg, setReadFile)
			if c.err != "" {
				if err == nil {
					t.Fatalf("got %v, want an error containing %q", dest, c.err)
				}
				if !errors.Is(err, values.ErrBadSet) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got error %q, want one wrapping ErrBadSet containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := setDiff(c.want, dest); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplySetErrors(t *testing.T) {
	_, err := values.ParseSet(values.SetFile, "a=testdata/set/missing.txt", setReadFile)
	if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, values.ErrBadSet) {
		t.Errorf("missing file: %v does not wrap both fs.ErrNotExist and ErrBadSet", err)
	}
	var syntax *json.SyntaxError
	if _, err := values.ParseSet(values.SetJSON, "a=[1,}", nil); !errors.As(err, &syntax) || !errors.Is(err, values.ErrBadSet) {
		t.Errorf("bad JSON: %v does not wrap both a json.SyntaxError and ErrBadSet", err)
	}
	for _, c := range []struct {
		name string
		run  func() error
		want string
	}{
		{"nil reader", func() error { _, err := values.ParseSet(values.SetFile, "a=b", nil); return err }, "no function to read files"},
		{"nil dest", func() error { return values.ApplySet(nil, values.SetValue, "a=b", nil) }, "no map"},
		{"unknown kind", func() error { _, err := values.ParseSet(values.SetKind(9), "a=b", nil); return err }, `SetKind(9) "a=b": unknown kind`},
		{"too long", func() error {
			_, err := values.ParseSet(values.SetValue, "a="+strings.Repeat("x", 1<<20), nil)
			return err
		}, "over the limit of 1048576"},
		{"too many list elements", func() error {
			var b strings.Builder
			for i := range 64 {
				fmt.Fprintf(&b, "a%d[65536]=1,", i)
			}
			_, err := values.ParseSet(values.SetValue, b.String(), nil)
			return err
		}, "adds more than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			if !errors.Is(err, values.ErrBadSet) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an ErrBadSet containing %q", err, c.want)
			}
		})
	}
}

func TestSetKindFlag(t *testing.T) {
	got := []string{values.SetValue.Flag(), values.SetString.Flag(), values.SetJSON.Flag(), values.SetFile.Flag(), values.SetLiteral.Flag()}
	want := []string{"--set", "--set-string", "--set-json", "--set-file", "--set-literal"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
}

func TestApplySetMaxIndex(t *testing.T) {
	got, err := values.ParseSet(values.SetValue, "a[65536]=x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := got["a"].([]any); len(a) != document.MaxIndex+1 || a[document.MaxIndex] != "x" {
		t.Errorf("got a list of %d, want %d ending in x", len(a), document.MaxIndex+1)
	}
	// Growing one element at a time must not copy the list every time.
	var b strings.Builder
	for i := range document.MaxIndex + 1 {
		fmt.Fprintf(&b, "a[%d]=%d,", i, i)
	}
	got, err = values.ParseSet(values.SetValue, b.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := got["a"].([]any); len(a) != document.MaxIndex+1 || a[document.MaxIndex] != int64(document.MaxIndex) {
		t.Errorf("got a list of %d", len(a))
	}
}

func TestApplySetKeepsListsInDest(t *testing.T) {
	inner := []any{"x", map[string]any{"k": "v"}}
	outer := []any{int64(1), inner}
	shared := []any{"s"}
	dest := map[string]any{"a": outer, "b": map[string]any{"c": shared}, "d": shared[:0]}
	args := []struct {
		kind values.SetKind
		arg  string
	}{
		{values.SetValue, "a[0]=2,a[1][0]=y,a[1][1].k=w,a[1][2]=z,a[3]=q"},
		{values.SetString, "b.c[0]=t,b.c[1]=u"},
		{values.SetJSON, `a[1][0]={"n":1}`},
		{values.SetLiteral, "d[0]=lit"},
		{values.SetValue, "a[1][2]."},
	}
	for _, a := range args {
		if err := values.ApplySet(dest, a.kind, a.arg, nil); err != nil {
			t.Fatalf("%s %s: %v", a.kind.Flag(), a.arg, err)
		}
	}
	if diff := cmp.Diff([]any{int64(1), inner}, outer); diff != "" {
		t.Errorf("outer list changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"x", map[string]any{"k": "w"}}, inner); diff != "" {
		t.Errorf("inner list changed, beyond its map (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"s"}, shared[:1]); diff != "" {
		t.Errorf("shared list changed (-want +got):\n%s", diff)
	}
	want := map[string]any{
		"a": []any{int64(2), []any{map[string]any{"n": int64(1)}, map[string]any{"k": "w"}, map[string]any{}}, nil, "q"},
		"b": map[string]any{"c": []any{"t", "u"}},
		"d": []any{"lit"},
	}
	if diff := cmp.Diff(want, dest); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestSetPathRoundTrip checks that Path.String is --set notation: setting
// p.String()+"=v" puts "v" exactly at p, for keys made of any (non-empty,
// valid UTF-8) text. Helm ignores empty keys, so they are left out.
func TestSetPathRoundTrip(t *testing.T) {
	paths := []document.Path{
		{document.Key("a")},
		{document.Key(`\`)},
		{document.Key(`a.b`), document.Index(2), document.Key("[0]"), document.Key("=,")},
		{document.Key("x]"), document.Index(0), document.Index(1), document.Key(`\\.`)},
		{document.Key("{a,b}"), document.Key(" "), document.Key("null"), document.Key("é")},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		paths = append(paths, setRandomPath(r))
	}
	for _, p := range paths {
		got, err := values.ParseSet(values.SetString, p.String()+"=v", nil)
		if err != nil {
			t.Errorf("%q: %v", p.String(), err)
			continue
		}
		if diff := cmp.Diff(setTreeAt(p, "v"), any(got)); diff != "" {
			t.Errorf("%q (-want +got):\n%s", p.String(), diff)
		}
	}
}

const setKeyRunes = `\.[]=,{} "'ab1é` + "\t\n"

func setRandomPath(r *rand.Rand) document.Path {
	key := func() string {
		rs := []rune(setKeyRunes)
		var b strings.Builder
		for range 1 + r.IntN(4) {
			b.WriteRune(rs[r.IntN(len(rs))])
		}
		return b.String()
	}
	p := document.Path{document.Key(key())}
	for range r.IntN(8) {
		if r.IntN(2) == 0 {
			p = append(p, document.Index(r.IntN(4)))
		} else {
			p = append(p, document.Key(key()))
		}
	}
	return p
}

// setTreeAt returns the tree that holds only v, at p, with lists padded by nils.
func setTreeAt(p document.Path, v any) any {
	if len(p) == 0 {
		return v
	}
	if !p[0].IsIndex {
		return map[string]any{p[0].Key: setTreeAt(p[1:], v)}
	}
	list := make([]any, p[0].Index+1)
	list[p[0].Index] = setTreeAt(p[1:], v)
	return list
}
