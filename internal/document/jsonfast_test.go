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
