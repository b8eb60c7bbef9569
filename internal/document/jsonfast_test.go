package document_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/document"
)

// checkDecodeJSON: where DecodeJSONFast reads a text, it reads what
// encoding/json's Decoder with UseNumber reads.
func checkDecodeJSON(t *testing.T, js string) (read bool) {
	t.Helper()
	got, ok := document.DecodeJSONFast(js)
	if !ok {
		return false
	}
	var want any
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&want); err != nil || dec.More() {
		t.Fatalf("DecodeJSONFast(%q) read it; encoding/json: %v (more: %v)", js, err, err == nil && dec.More())
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeJSONFast(%q) = %#v, encoding/json %#v", js, got, want)
	}
	return true
}

var jsonCases = []string{
	`{}`, `[]`, ` { } `, "\t[\n]\r\n", `null`, `true`, `false`, `"s"`, `0`, `-0`, `1.5e+3`, `-1E-7`, `12345678901234567890123`,
	`{"a":1,"a":2}`, `{"a":{"b":[1,"x",null,true,false,{},[]]}}`,
	`{"e":"\"\\\/\b\f\n\r\t\u0041\u00e9\u2028\uFFFF"}`, `{"u":"h\u00e9llo ☃ 😀"}`,
	`{"s":"\ud83d\ude00"}`, `{"s":"\ud800"}`, `{"s":"\udc00x"}`, `"\u12"`, `"\u12G4"`, `"\x"`, `"a` + "\x01" + `"`, `"` + "\xff" + `"`, `"` + "\xed\xa0\x80" + `"`,
	`{"a":1}}`, `{"a":1} x`, `{"a":1} {}`, `[1,]`, `{"a":1,}`, `{"a"}`, `{a:1}`, `[1 2]`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `nul`, `"`, `[`, `{`, `{"a":`, ``,
	strings.Repeat("[", 1100) + strings.Repeat("]", 1100),
}

func TestDecodeJSONFast(t *testing.T) {
	read := 0
	for _, js := range jsonCases {
		if checkDecodeJSON(t, js) {
			read++
		}
	}
	if read < 15 {
		t.Errorf("DecodeJSONFast reads only %d cases", read)
	}
}

// FuzzDecodeJSONFast holds DecodeJSONFast to encoding/json on any text.
func FuzzDecodeJSONFast(f *testing.F) {
	for _, js := range jsonCases {
		f.Add(js)
	}
	f.Fuzz(func(t *testing.T, js string) {
		checkDecodeJSON(t, js)
	})
}

func TestIsJSONNumber(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"0", true}, {"-0", true}, {"12", true}, {"1.5", true}, {"1e9", true}, {"-2.5E-3", true}, {"1E+2", true},
		{"", false}, {"-", false}, {"01", false}, {"1.", false}, {".5", false}, {"+1", false}, {"1e", false},
		{"0x10", false}, {"NaN", false}, {" 1", false}, {"1 ", false}, {"1_000", false},
	} {
		if got := document.IsJSONNumber(tc.s); got != tc.want {
			t.Errorf("IsJSONNumber(%q) = %v, want %v", tc.s, got, tc.want)
		}
		// What encoding/json reads as a number, and nothing else.
		var n json.Number
		isNum := json.Unmarshal([]byte(tc.s), &n) == nil && tc.s == strings.TrimSpace(tc.s) && !strings.HasPrefix(tc.s, `"`)
		if isNum != tc.want {
			t.Errorf("encoding/json reads %q as a number: %v; the table says %v", tc.s, isNum, tc.want)
		}
	}
}
