package yamljson

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.yaml.in/yaml/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/document/documenttest"
)

// TestValuesMatchesHelm: ValuesFast gives what sigs.k8s.io/yaml.Unmarshal
// gives into a map, as Helm's loader.LoadValues reads each document of a
// values file, value for value and type for type, and, on a text that is
// one document, what loader.LoadValues gives; or it leaves the text to
// them (helmrender's TestLoadValuesMatchesHelm holds the stream's reading).
func TestValuesMatchesHelm(t *testing.T) {
	for i, text := range documenttest.AllYAMLCases() {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkValues(t, []byte(text)) })
	}
}

// checkValues compares ValuesFast with the reference. Where it declines,
// the caller reads the text with Helm's own function: its result is the
// reference's by construction (and may not even be deterministic:
// sigs.k8s.io/yaml keeps one of the keys 1 and "1" depending on map
// iteration order).
func checkValues(t *testing.T, data []byte) {
	t.Helper()
	orig := bytes.Clone(data)
	got, gotErr := ValuesFast(data)
	if !bytes.Equal(data, orig) {
		t.Fatalf("ValuesFast(%q) changed its input", orig)
	}
	want := map[string]any{}
	wantErr := sigsyaml.Unmarshal(data, &want)
	switch {
	case gotErr != nil && gotErr != ErrNotFast:
		t.Fatalf("ValuesFast(%q) error = %v, want ErrNotFast", data, gotErr)
	case gotErr != nil:
		return
	case wantErr != nil:
		t.Fatalf("ValuesFast(%q) read it; sigs.k8s.io/yaml fails: %v", data, wantErr)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ValuesFast(%q) differs from sigs.k8s.io/yaml.Unmarshal (-sigs +fast):\n%s", data, diff)
	}
	if bytes.HasPrefix(data, []byte("---")) || bytes.Contains(data, []byte("\n---")) || len(data) > 0 && data[len(data)-1] != '\n' {
		return // a stream (helmrender.LoadValues splits it), or a text loader.LoadValues ends with a line break
	}
	helm, err := loader.LoadValues(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("ValuesFast(%q) read it; loader.LoadValues fails: %v", data, err)
	}
	if diff := cmp.Diff(helm, got); diff != "" {
		t.Fatalf("ValuesFast(%q) differs from loader.LoadValues (-helm +fast):\n%s", data, diff)
	}
}

// TestYAMLToJSONMatchesHelm: ToJSON gives the JSON
// sigs.k8s.io/yaml.YAMLToJSON gives, byte for byte, and the head Helm's
// sorter reads (sigs.k8s.io/yaml.Unmarshal into SimpleHead), or fails when
// either fails.
func TestYAMLToJSONMatchesHelm(t *testing.T) {
	for i, text := range documenttest.AllYAMLCases() {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkYAMLToJSON(t, []byte(text)) })
	}
}

// checkBlockYAML: where parseBlockYAML reads a document, it reads what
// yaml.v2 decodes from it, node for node and type for type.
func checkBlockYAML(t *testing.T, doc []byte) {
	t.Helper()
	got, gotMap, err := parseBlockYAML(string(doc))
	if err != nil {
		if err != ErrNotFast {
			t.Fatalf("parseBlockYAML(%q) error = %v, want ErrNotFast", doc, err)
		}
		return
	}
	var root rootMapping
	if err := yaml.Unmarshal(doc, &root); err != nil {
		t.Fatalf("parseBlockYAML(%q) read it; yaml.v2 fails: %v", doc, err)
	}
	if gotMap != root.isMap {
		t.Fatalf("parseBlockYAML(%q) mapping = %v, yaml.v2 %v", doc, gotMap, root.isMap)
	}
	if diff := cmp.Diff(root.ms, got, cmpopts.EquateNaNs()); diff != "" {
		t.Fatalf("parseBlockYAML(%q) differs from yaml.v2 (-yaml.v2 +block):\n%s", doc, diff)
	}
}

// TestBlockYAMLMatchesYAMLv2 checks parseBlockYAML on every case.
func TestBlockYAMLMatchesYAMLv2(t *testing.T) {
	read := 0
	for i, text := range documenttest.AllYAMLCases() {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkBlockYAML(t, []byte(text)) })
		if _, _, err := parseBlockYAML(text); err == nil {
			read++
		}
	}
	if read < 100 {
		t.Errorf("the block parser reads only %d cases; the test needs more of its ground", read)
	}
}

// TestYAMLCheckMatchesHelm: where Check reads a document, Helm's
// functions read it too, to the same head, and its JSON is no longer than
// the bound; and it reads the plain manifests it is for.
func TestYAMLCheckMatchesHelm(t *testing.T) {
	for i, text := range documenttest.AllYAMLCases() {
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkYAMLCheck(t, []byte(text)) })
	}
	for _, text := range documenttest.CheckCases[:4] {
		if _, _, err := Check(text); err != nil {
			t.Errorf("Check(%q) = %v, want it read", text, err)
		}
	}
}

// checkYAMLCheck compares Check with Helm's functions and with the
// fast conversion (which a document Check reads must take, to the
// same head: the output checks then see what Generate's see).
func checkYAMLCheck(t *testing.T, doc []byte) {
	t.Helper()
	head, bound, err := Check(string(doc))
	if err != nil {
		if err != ErrNotFast {
			t.Fatalf("Check(%q) error = %v, want ErrNotFast", doc, err)
		}
		return
	}
	wantJS, wantErr := sigsyaml.YAMLToJSON(doc)
	var wantHead releaseutil.SimpleHead
	headErr := sigsyaml.Unmarshal(doc, &wantHead)
	if wantErr != nil || headErr != nil {
		t.Fatalf("Check(%q) read it; Helm fails: %v %v", doc, wantErr, headErr)
	}
	if diff := cmp.Diff(wantHead, releaseutil.SimpleHead(head)); diff != "" {
		t.Fatalf("Check(%q) head differs (-helm +check):\n%s", doc, diff)
	}
	if len(wantJS) > bound {
		t.Fatalf("Check(%q) bound %d, but the JSON is %d bytes: %s", doc, bound, len(wantJS), wantJS)
	}
	if head.Kind == "" || head.Version == "" || strings.HasSuffix(head.Kind, "List") {
		t.Fatalf("Check(%q) read a document with head %+v: the output checks need its JSON", doc, head)
	}
	js, fastHead, fromTree, err := ToJSONFast(doc)
	if err != nil || !fromTree || !bytes.Equal(js, wantJS) {
		t.Fatalf("Check(%q) read it; the fast conversion gives %s, %v, %v", doc, js, fromTree, err)
	}
	if diff := cmp.Diff(fastHead, head); diff != "" {
		t.Fatalf("Check(%q) head differs from the fast conversion's (-fast +check):\n%s", doc, diff)
	}
}

// TestPrintableASCII8 holds the eight-byte test to the byte one, for every
// byte at every place.
func TestPrintableASCII8(t *testing.T) {
	for at := range 8 {
		for c := range 256 {
			b := []byte("aaaaaaaa")
			b[at] = byte(c)
			if got, want := printableASCII8(string(b)), c >= 0x20 && c < 0x7F; got != want {
				t.Errorf("printableASCII8(%q) = %v, want %v", b, got, want)
			}
		}
	}
}

// checkYAMLToJSON compares ToJSON, with the fast codecs and with the
// reference alone, with Helm's functions, and, where the fast path reads
// the document, the fast path with them too.
func checkYAMLToJSON(t *testing.T, doc []byte) {
	t.Helper()
	wantJS, wantErr := sigsyaml.YAMLToJSON(doc)
	var wantHead releaseutil.SimpleHead
	headErr := sigsyaml.Unmarshal(doc, &wantHead)
	// The head's errors name the type read into: Head's read as Helm's
	// do otherwise.
	ownHead, ownErr := UnmarshalHead(doc)
	if (ownErr == nil) != (headErr == nil) || ownErr != nil && asHelms(ownErr) != headErr.Error() {
		t.Fatalf("UnmarshalHead(%q) error = %v, Helm's %v", doc, ownErr, headErr)
	}
	if diff := cmp.Diff(wantHead, releaseutil.SimpleHead(ownHead)); diff != "" {
		t.Fatalf("UnmarshalHead(%q) differs (-helm +strata):\n%s", doc, diff)
	}
	if js, head, _, err := ToJSONFast(doc); err == nil {
		if wantErr != nil || headErr != nil {
			t.Fatalf("ToJSONFast(%q) read it; Helm fails: %v %v", doc, wantErr, headErr)
		}
		if !bytes.Equal(js, wantJS) {
			t.Fatalf("ToJSONFast(%q) JSON =\n%s\nwant\n%s", doc, js, wantJS)
		}
		if diff := cmp.Diff(wantHead, releaseutil.SimpleHead(head)); diff != "" {
			t.Fatalf("ToJSONFast(%q) head differs (-helm +fast):\n%s", doc, diff)
		}
	} else if err != ErrNotFast && (wantErr == nil && headErr == nil) {
		t.Fatalf("ToJSONFast(%q) error = %v; Helm reads it", doc, err)
	}
	if ambiguousKeys(doc) {
		return // Helm's result depends on map iteration order
	}
	for _, codecs := range []document.Codecs{document.FastCodecs, document.ReferenceCodecs} {
		js, head, err := ToJSON(doc, codecs)
		switch {
		case wantErr != nil:
			if err == nil || js != nil || err.Error() != wantErr.Error() {
				t.Fatalf("ToJSON(%q, %v) = %s, %v; want no JSON and the error %v", doc, codecs, js, err, wantErr)
			}
			continue
		case headErr != nil:
			if err == nil || js == nil || err.Error() != ownErr.Error() {
				t.Fatalf("ToJSON(%q, %v) = %s, %v; want the JSON and the head's error %v", doc, codecs, js, err, ownErr)
			}
			continue
		case err != nil:
			t.Fatalf("ToJSON(%q, %v) failed: %v; Helm reads it", doc, codecs, err)
		}
		if !bytes.Equal(js, wantJS) {
			t.Fatalf("ToJSON(%q, %v) JSON =\n%s\nwant\n%s", doc, codecs, js, wantJS)
		}
		if diff := cmp.Diff(wantHead, releaseutil.SimpleHead(head)); diff != "" {
			t.Fatalf("ToJSON(%q, %v) head differs (-helm +strata):\n%s", doc, codecs, diff)
		}
	}
}

// asHelms is the text of an error of reading into Head as it reads for
// releaseutil.SimpleHead.
func asHelms(err error) string {
	return strings.NewReplacer("yamljson.Head", "util.SimpleHead", "field Head.", "field SimpleHead.").Replace(err.Error())
}

// TestHeadIsHelms holds Head to releaseutil.SimpleHead, field for field
// and JSON name for JSON name (the conversion in the tests above holds the
// fields; the names decide what the JSON and YAML decoders fill).
func TestHeadIsHelms(t *testing.T) {
	var walk func(path string, a, b reflect.Type)
	walk = func(path string, a, b reflect.Type) {
		if a.Kind() == reflect.Pointer {
			a, b = a.Elem(), b.Elem()
		}
		if a.Kind() != reflect.Struct {
			return
		}
		if a.NumField() != b.NumField() {
			t.Fatalf("%s: %d fields, releaseutil.SimpleHead's %d", path, a.NumField(), b.NumField())
		}
		for i := range a.NumField() {
			fa, fb := a.Field(i), b.Field(i)
			if fa.Name != fb.Name || fa.Tag != fb.Tag {
				t.Errorf("%s: field %s %q, releaseutil.SimpleHead's %s %q", path, fa.Name, fa.Tag, fb.Name, fb.Tag)
			}
			walk(path+"."+fa.Name, fa.Type, fb.Type)
		}
	}
	walk("Head", reflect.TypeFor[Head](), reflect.TypeFor[releaseutil.SimpleHead]())
	if got := (Head{}).Name(); got != "" {
		t.Errorf("Head{}.Name() = %q, want \"\"", got)
	}
}

// TestFastPathTaken guards the point of the fast decoders: plain values
// files and manifests do not go the reference way.
func TestFastPathTaken(t *testing.T) {
	values := "image:\n  repository: nginx\n  tag: \"1.27\"\nreplicas: 3\nratio: 0.5\nenabled: yes\nlist: [a, {b: c}]\n"
	if _, err := ValuesFast([]byte(values)); err != nil {
		t.Errorf("ValuesFast(%q) = %v, want the fast path", values, err)
	}
	for _, doc := range []string{strings.TrimSuffix(values, "list: [a, {b: c}]\n"), documenttest.ManifestDoc, "a:\n  - x: 1\n    y: [] # c\n  - 'q'\nb: {}\n", "a:\n  description: |-\n    One.\n\n    Two.\n  script: |\n    x\n",
		documenttest.FlowCases[2], documenttest.FlowCases[6], documenttest.FlowCases[8], "a:\n  - [a, 'b']\n  - x\n", "port: 80\n  # comment\nnext: 1\n"} {
		if _, _, err := parseBlockYAML(doc); err != nil {
			t.Errorf("parseBlockYAML(%q) = %v, want it read", doc, err)
		}
	}
	manifest := documenttest.ManifestDoc
	if _, _, _, err := ToJSONFast([]byte(manifest)); err != nil {
		t.Errorf("ToJSONFast(%q) = %v, want the fast path", manifest, err)
	}
}

// ambiguousKeys reports whether a mapping of doc has two different keys
// that sigs.k8s.io/yaml turns into the same string (1 and "1"): which one
// it keeps depends on map iteration order.
func ambiguousKeys(doc []byte) bool {
	var v any
	if yaml.Unmarshal(doc, &v) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case map[any]any:
			seen := map[string]bool{}
			for k, e := range v {
				var s string
				switch k := k.(type) {
				case float64:
					s = strconv.FormatFloat(k, 'g', -1, 32)
				default:
					s = fmt.Sprint(k)
				}
				if seen[s] || walk(e) {
					return true
				}
				seen[s] = true
			}
		case []any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// FuzzYAMLConv holds the fast decoders equal to Helm's on any text.
func FuzzYAMLConv(f *testing.F) {
	for _, c := range documenttest.AllYAMLCases() {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 || strings.Count(string(data), "*") > 16 {
			return // aliases multiply the work; both sides bound them alike
		}
		checkBlockYAML(t, data)
		checkValues(t, data)
		checkYAMLToJSON(t, data)
		checkYAMLCheck(t, data)
	})
}
