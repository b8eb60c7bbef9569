package document_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/strata-dev/strata/internal/document"
)

// checkYAMLWriter: where YAMLWriter writes a document, it writes what
// document.Encode writes.
func checkYAMLWriter(t *testing.T, js []byte) (fast bool) {
	t.Helper()
	v, _, err := document.Loader{JSON: true}.ParseAny(js, "doc")
	if err != nil {
		return false
	}
	var want bytes.Buffer
	wantErr := document.Encode(&want, v, document.YAML)
	var w document.YAMLWriter
	got, err := w.Append(nil, v)
	if errors.Is(err, document.ErrNotFast) {
		return false
	}
	if err != nil || wantErr != nil {
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("YAMLWriter.Append(%s) error %v, document.Encode %v", js, err, wantErr)
		}
		return true
	}
	if string(got) != want.String() {
		t.Fatalf("YAMLWriter.Append(%s) =\n%s\ndocument.Encode:\n%s", js, got, want.String())
	}
	// manifest.Encoder reads the document with DecodeJSONFast or
	// encoding/json first.
	if tree, ok := document.DecodeJSONFast(string(js)); ok {
		var w document.YAMLWriter
		if got, err := w.Append(nil, tree); err == nil && string(got) != want.String() {
			t.Fatalf("YAMLWriter.Append(%s) of DecodeJSONFast's tree =\n%s\ndocument.Encode:\n%s", js, got, want.String())
		}
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if dec.Decode(&tree) == nil && !dec.More() {
		var w document.YAMLWriter
		if got, err := w.Append(nil, tree); err == nil && string(got) != want.String() {
			t.Fatalf("YAMLWriter.Append(%s) of encoding/json's tree =\n%s\ndocument.Encode:\n%s", js, got, want.String())
		}
	}
	return true
}

func TestYAMLWriter(t *testing.T) {
	docs := []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"app.kubernetes.io/name":"x","helm.sh/chart":"x-1.0.0"}},"data":{"a":"line1\nline2\n","b":"x\ny","c":"t \nx\n","d":"  lead\nx\n","e":"tab\there","f":"a\n\n\n","g":"","h":"yes","i":"1.2.3","j":"http://example.com/x?y=1","k":"a: b","l":"#x","m":"- x"}}`,
		`{"spec":{"containers":[{"name":"c","args":["--a=1","--b","x y",""],"ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{}}],"empty":[],"n":null,"t":true,"f":false,"neg":-3,"big":123456789012345678901234567890,"fl":1.5,"exp":1e3}}`,
		`{"a":[{"b":[{"c":{"d":"x\ny\n"}},"s\nt"]},{}],"z":{"y":[["nested"]]}}`,
		`{"a":{"b":{"c":{"d":{"e":"deep\n  indented\n\nblank\n"}}}},"k":"-","l":"ends:","m":"mid:dle","o":"a #b","p":"a# b","q":"On","r":"NULL","s":"Null","u":"nULL","v":"~","w":"a  b"}`,
		`{"key with space":"v","k:":"v","":"empty key","ok":"v"}`,
		`{"a":"x\ny","b":"x\n","c":"x\n\n","d":"x\n\ny\n","e":"x \ny","f":"x\ny ","g":" x\ny","h":"\nx","i":"x\n  y\n","j":"x\n\n\ny","k":"x\ty\nz","l":"é\nx","m":"--- x\n... y\n# z\n- w\nk: v\n","n":"x\r\ny","o":"\n","p":"x\n \ny","q":"'x'\n\"y\"","r":"|\n>"}}`,
		`{"l":["x\ny","a\n",{"k":"p\nq\n\nr"}],"m":{"n":{"o":"deep\nlines"}}}`,
	}
	for _, d := range docs {
		checkYAMLWriter(t, []byte(d))
	}
	// Every printable ASCII character first, inside and last, in keys and
	// values.
	for c := byte(' '); c < 0x7F; c++ {
		for _, s := range []string{string(c), string(c) + "ab", "a" + string(c) + "b", "ab" + string(c), "a" + string(c) + " b", "a " + string(c) + "b"} {
			js, _ := jsonString(s)
			checkYAMLWriter(t, []byte(`{"k":`+js+`,"l":[`+js+`],`+js+`:"v"}`))
			checkYAMLWriter(t, []byte(`{"k":`+js+`,"l":[`+js+`]}`))
		}
	}
	// The fast path must take the common manifest.
	if !checkYAMLWriter(t, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web"}},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.27","args":["--port=8080"]}]}}}}`)) {
		t.Error("YAMLWriter left a plain Deployment to document.Encode")
	}
}

func jsonString(s string) (string, error) {
	var b bytes.Buffer
	err := document.EncodeJSONValue(&b, s)
	return string(bytes.TrimSpace(b.Bytes())), err
}

// FuzzYAMLWriter holds YAMLWriter to document.Encode on any JSON document.
func FuzzYAMLWriter(f *testing.F) {
	f.Add([]byte(`{"a":"b\nc","d":[{"e":"f"},"g h",1,null,true],"i":{}}`))
	f.Add([]byte(`{"a":{"b":["x:y","@z","a,b","(c)"]}}`))
	f.Fuzz(func(t *testing.T, js []byte) {
		checkYAMLWriter(t, js)
	})
}
