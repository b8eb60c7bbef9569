package appset

import (
	"encoding/json"
	"reflect"
	"regexp"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/document"
)

// yaml11Cases are documents whose reading kubectl and the argocd CLI
// (sigs.k8s.io/yaml) decide: the scalars YAML 1.1 and 1.2 read apart.
var yaml11Cases = []string{
	"a: yes\nb: no\nc: on\nd: off\ne: y\nf: n\ng: Yes\nh: NO\ni: True\nj: FALSE\n",
	"a: 012\nb: 0o12\nc: 0x1F\nd: 08\ne: 1_000\nf: 0b101\ng: -0b11\nh: +12\ni: -012\n",
	"a: 1.5\nb: .5\nc: 1e3\nd: 1.\ne: -1.5e-3\nf: 1_0.5\n",
	"a: ~\nb: null\nc: Null\nd:\ne: ''\n",
	"a: 2024-01-02\nb: 2024-01-02T03:04:05Z\nc: 2024-1-2\nd: 2024-01-02 03:04:05\n",
	"a: \"yes\"\nb: 'on'\nc: |\n  yes\nd: >\n  012\n",
	"y: a\nn: b\n1: c\n1.5: d\nyes: e\n012: f\n",
	"a: !!str yes\nb: !!str 012\nc: !!float 1\nd: !!int \"12\"\n",
	"a: 18446744073709551615\nb: 9223372036854775807\nc: -9223372036854775808\n",
	"list: [yes, no, 012, '012', 1.0, ~]\n",
	"base: &b {x: yes, y: 1}\nderived:\n  <<: *b\n  y: 2\n",
	"a: 0.0\nb: -0\nc: 00\nd: 0_1\n",
	"18446744073709551615: x\n",
	"a: 1:20\nb: 0x_1F\nc: 0B11\nd: 1__0\n",
}

// TestYAML11 reads each case as sigs.k8s.io/yaml reads it.
func TestYAML11(t *testing.T) {
	for _, doc := range yaml11Cases {
		compareYAML11(t, doc)
	}
}

// compareYAML11 checks that parseYAML11 reads doc as sigs.k8s.io/yaml
// does, where both read it; it reports whether both did.
func compareYAML11(t *testing.T, doc string) bool {
	t.Helper()
	want, werr := yaml.YAMLToJSON([]byte(doc))
	docs, err := parseYAML11([]byte(doc), "case.yaml", document.Limits{MaxBytes: 1 << 20, MaxDepth: 100, MaxNodes: 1 << 16}, true)
	if werr != nil || err != nil {
		// Both fail, or one does: strata's parser is go-yaml v3's, which
		// rejects some syntax v2 accepts (stricter on purpose), and it
		// refuses duplicate keys and documents beyond its limits. The
		// scalars of what both read must agree.
		return false
	}
	var got any
	switch len(docs) {
	case 0:
	case 1:
		got = docs[0].Value
	default:
		return false // sigs.k8s.io/yaml reads only the first document
	}
	gotJSON, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("parseYAML11(%q) gives a tree JSON cannot hold: %v", doc, err)
	}
	var a, b any
	if err := json.Unmarshal(gotJSON, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("parseYAML11(%q) = %s, sigs.k8s.io/yaml: %s", doc, gotJSON, want)
	}
	return true
}

var nonSpecificTag = regexp.MustCompile(`!([\s,\]\}]|$)`)

// FuzzYAML11 compares parseYAML11 with sigs.k8s.io/yaml on arbitrary
// documents; neither may panic.
func FuzzYAML11(f *testing.F) {
	for _, c := range yaml11Cases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if nonSpecificTag.MatchString(doc) {
			// "! 12" is the string "12" in go-yaml v2; v3, whose parser
			// strata uses, resolves it as if untagged. Nobody writes it.
			return
		}
		compareYAML11(t, doc)
	})
}
