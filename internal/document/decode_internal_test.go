package document

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The types of the differential test: every kind assign decodes itself,
// and some it leaves to encoding/json.
type (
	diffName  string
	diffInner struct {
		S string `json:"s"`
		N int8   `json:"n"`
	}
	diffEmbedded struct {
		E  string  `json:"e"`
		EF float64 `json:"ef"`
	}
	diffAll struct {
		diffEmbedded
		Str   string               `json:"str"`
		Name  diffName             `json:"name"`
		Bool  bool                 `json:"bool"`
		I8    int8                 `json:"i8"`
		I     int                  `json:"i"`
		I64   int64                `json:"i64"`
		U8    uint8                `json:"u8"`
		U     uint                 `json:"u"`
		F64   float64              `json:"f64"`
		F32   float32              `json:"f32"`
		PI    *int                 `json:"pi"`
		PS    *diffInner           `json:"ps"`
		Inner diffInner            `json:"inner"`
		List  []string             `json:"list"`
		Items []*diffInner         `json:"items"`
		Map   map[string]int       `json:"map"`
		Names map[diffName]bool    `json:"names"`
		Any   any                  `json:"any"`
		Arr   [2]int               `json:"arr"`
		Bytes []byte               `json:"bytes"`
		Raw   json.RawMessage      `json:"raw"`
		Deep  map[string][]float64 `json:"deep"`
		Str2  string               `json:"str2,string"`
	}
	diffNoString struct {
		diffEmbedded
		Str   string               `json:"str"`
		Name  diffName             `json:"name"`
		Bool  bool                 `json:"bool"`
		I8    int8                 `json:"i8"`
		I     int                  `json:"i"`
		U8    uint8                `json:"u8"`
		U     uint                 `json:"u"`
		F64   float64              `json:"f64"`
		PI    *int                 `json:"pi"`
		PS    *diffInner           `json:"ps"`
		Inner diffInner            `json:"inner"`
		List  []string             `json:"list"`
		Items []*diffInner         `json:"items"`
		Map   map[string]int       `json:"map"`
		Names map[diffName]bool    `json:"names"`
		Deep  map[string][]float64 `json:"deep"`
	}
)

var diffSeeds = []string{
	`{"e": "x", "ef": 1.5, "str": "s", "name": "n", "bool": true, "i8": -128, "i": 3, "u8": 255, "u": 7,
	  "f64": -0.0, "pi": 4, "ps": {"s": "a", "n": 1}, "inner": {"s": "b"}, "list": ["a", "b"], "items": [{"s": "c"}, null],
	  "map": {"a": 1}, "names": {"x": true}, "deep": {"a": [1, 2.5]}}`,
	`{"i64": 9007199254740993, "f32": 0.1, "f64": 9007199254740993}`,
	`{"any": {"a": [1, 2]}, "arr": [1, 2], "bytes": "aGk=", "raw": {"a": 1}, "str2": "\"q\""}`,
	"i8: 128\nu8: -1\nu: 1.5\ni: 1e20\nf64: .nan\n",
	"list: []\nitems: []\nmap: {}\nps: null\npi: null\ninner: null\n",
	"str: 5\nbool: 'true'\nlist: [1]\nmap: {a: x}\n",
	"i: 12345678901234567890123\nf64: 12345678901234567890123\n",
	"f64: 9007199254740993\ni: 4.0\nu: 1e3\n",
	"str: \"\\xff\"\n",
}

// FuzzDecodeDirect holds Decode's direct way to its reference: for any
// document, Decode gives what checkFields and encoding/json give, value
// and error.
func FuzzDecodeDirect(f *testing.F) {
	for _, s := range diffSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, pos, err := Loader{Positions: true}.ParseAny(data, "f.yaml")
		if err != nil {
			return
		}
		for _, typ := range []reflect.Type{reflect.TypeFor[diffAll](), reflect.TypeFor[diffNoString](), reflect.TypeFor[map[string]diffInner](), reflect.TypeFor[[]diffInner]()} {
			got := reflect.New(typ)
			gotErr := Decode(tree, pos, "f.yaml", got.Interface())
			want := reflect.New(typ)
			wantErr := checkFields(tree, typ, nil, pos, "f.yaml")
			if wantErr == nil {
				wantErr = decodeJSON(tree, pos, "f.yaml", want.Interface())
			}
			if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
				t.Fatalf("%v: Decode error %v, want %v", typ, gotErr, wantErr)
			}
			if gotErr == nil && !reflect.DeepEqual(got.Interface(), want.Interface()) {
				t.Fatalf("%v: Decode = %#v, want %#v", typ, got.Elem().Interface(), want.Elem().Interface())
			}
		}
	})
}

// The direct way is taken for what it knows (the differential test would
// pass with encoding/json alone).
func TestAssignDirect(t *testing.T) {
	tree, _, err := Loader{}.ParseAny([]byte(diffSeeds[0]), "a.json")
	if err != nil {
		t.Fatal(err)
	}
	var v diffNoString
	if err := assign(tree, reflect.ValueOf(&v).Elem()); err != nil {
		t.Fatalf("assign: %v", err)
	}
	var want diffNoString
	if err := decodeJSON(tree, nil, "a.json", &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("assign = %#v, want %#v", v, want)
	}
	for _, tc := range []struct {
		name string
		out  any
		doc  string
	}{
		{"a ,string field", &diffAll{}, `{"str": "a"}`},
		{"an interface", &struct{ A any }{}, `{"A": 1}`},
		{"float32", &struct{ F float32 }{}, `{"F": 1}`},
		{"a string for an int", &struct{ I int }{}, `{"I": "1"}`},
		{"overflow", &struct{ I int8 }{}, `{"I": 300}`},
	} {
		tree, _, err := Loader{}.ParseAny([]byte(tc.doc), "a.json")
		if err != nil {
			t.Fatal(err)
		}
		if err := assign(tree, reflect.ValueOf(tc.out).Elem()); err != errIndirect {
			t.Errorf("%s: assign = %v, want errIndirect", tc.name, err)
		}
	}
}

// TestDecodeCodecsSwitch: with ReferenceCodecs Decode goes through
// encoding/json (more allocations for the same result), with FastCodecs
// it fills the struct directly.
func TestDecodeCodecsSwitch(t *testing.T) {
	t.Cleanup(func() { SetDecodeCodecs(FastCodecs) })
	tree := map[string]any{"s": "x", "n": float64(3)}
	decode := func() diffInner {
		var v diffInner
		if err := Decode(tree, nil, "t", &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	SetDecodeCodecs(FastCodecs)
	fastV := decode()
	fast := testing.AllocsPerRun(50, func() { decode() })
	SetDecodeCodecs(ReferenceCodecs)
	if DecodeCodecs() != ReferenceCodecs {
		t.Fatalf("DecodeCodecs() = %v after SetDecodeCodecs(ReferenceCodecs)", DecodeCodecs())
	}
	refV := decode()
	ref := testing.AllocsPerRun(50, func() { decode() })
	if fastV != refV || fastV != (diffInner{S: "x", N: 3}) {
		t.Errorf("fast %+v, reference %+v, want {x 3}", fastV, refV)
	}
	if ref <= fast {
		t.Errorf("allocations: reference %v, fast %v: the switch does not reach Decode's direct fill", ref, fast)
	}
}
