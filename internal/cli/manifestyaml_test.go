package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-dev/strata/internal/document"
)

// checkAppendYAML: where appendYAML writes a document, it writes what
// document.Encode writes.
func checkAppendYAML(t *testing.T, js []byte) (fast bool) {
	t.Helper()
	v, _, err := document.Loader{JSON: true}.ParseAny(js, "doc")
	if err != nil {
		return false
	}
	var want bytes.Buffer
	wantErr := document.Encode(&want, v, document.YAML)
	got, err := appendYAML(nil, v)
	if errors.Is(err, errSlowYAML) {
		return false
	}
	if err != nil || wantErr != nil {
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("appendYAML(%s) error %v, document.Encode %v", js, err, wantErr)
		}
		return true
	}
	if string(got) != want.String() {
		t.Fatalf("appendYAML(%s) =\n%s\nvalues.Encode:\n%s", js, got, want.String())
	}
	// writeManifests reads the document with decodeJSON or encoding/json
	// first.
	if tree, ok := decodeJSON(string(js)); ok {
		var w yamlWriter
		if got, err := w.append(nil, tree); err == nil && string(got) != want.String() {
			t.Fatalf("appendYAML(%s) of decodeJSON's tree =\n%s\nvalues.Encode:\n%s", js, got, want.String())
		}
	}
	var tree any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if dec.Decode(&tree) == nil && !dec.More() {
		var w yamlWriter
		if got, err := w.append(nil, tree); err == nil && string(got) != want.String() {
			t.Fatalf("appendYAML(%s) of encoding/json's tree =\n%s\nvalues.Encode:\n%s", js, got, want.String())
		}
	}
	return true
}

func TestAppendYAML(t *testing.T) {
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
		checkAppendYAML(t, []byte(d))
	}
	// Every printable ASCII character first, inside and last, in keys and
	// values.
	for c := byte(' '); c < 0x7F; c++ {
		for _, s := range []string{string(c), string(c) + "ab", "a" + string(c) + "b", "ab" + string(c), "a" + string(c) + " b", "a " + string(c) + "b"} {
			js, _ := jsonString(s)
			checkAppendYAML(t, []byte(`{"k":`+js+`,"l":[`+js+`],`+js+`:"v"}`))
			checkAppendYAML(t, []byte(`{"k":`+js+`,"l":[`+js+`]}`))
		}
	}
	// The fast path must take the common manifest.
	if !checkAppendYAML(t, []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web"}},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.27","args":["--port=8080"]}]}}}}`)) {
		t.Error("appendYAML left a plain Deployment to document.Encode")
	}
}

func jsonString(s string) (string, error) {
	var b bytes.Buffer
	err := document.EncodeJSONValue(&b, s)
	return string(bytes.TrimSpace(b.Bytes())), err
}

// FuzzAppendYAML holds appendYAML to document.Encode on any JSON document.
func FuzzAppendYAML(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil && len(data) < 1<<16 {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"a":"b\nc","d":[{"e":"f"},"g h",1,null,true],"i":{}}`))
	f.Add([]byte(`{"a":{"b":["x:y","@z","a,b","(c)"]}}`))
	f.Fuzz(func(t *testing.T, js []byte) {
		checkAppendYAML(t, js)
	})
}
