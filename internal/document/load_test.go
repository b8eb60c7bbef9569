package document_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]any
	}{
		{"empty", "", map[string]any{}},
		{"comment only", "# nothing\n", map[string]any{}},
		{"null document", "~\n", map[string]any{}},
		{"scalars", "s: x\nb: true\ni: 42\nf: 1.5\nn: null\nq: \"42\"\n",
			map[string]any{"s": "x", "b": true, "i": int64(42), "f": 1.5, "n": nil, "q": "42"}},
		{"big integers stay exact", "a: 9007199254740993\nb: 18446744073709551615\nc: -123456789012345678901234567890\n",
			map[string]any{"a": int64(9007199254740993), "b": json.Number("18446744073709551615"), "c": json.Number("-123456789012345678901234567890")}},
		{"int forms", "hex: 0x1F\noct: 0o17\nplus: +7\n", map[string]any{"hex": int64(31), "oct": int64(15), "plus": int64(7)}},
		{"yaml 1.2 booleans only", "a: yes\nb: off\nc: True\n", map[string]any{"a": "yes", "b": "off", "c": true}},
		{"timestamps stay strings", "t: 2001-12-14t21:59:43.10-05:00\n", map[string]any{"t": "2001-12-14t21:59:43.10-05:00"}},
		{"non-string keys become strings", "1: a\ntrue: b\n", map[string]any{"1": "a", "true": "b"}},
		{"nested", "a:\n  b:\n    - c: 1\n    - [x, y]\n", map[string]any{"a": map[string]any{"b": []any{map[string]any{"c": int64(1)}, []any{"x", "y"}}}}},
		{"json", `{"a": {"b": [1, 2.5, "x", null, true]}}`, map[string]any{"a": map[string]any{"b": []any{int64(1), 2.5, "x", nil, true}}}},
		{"anchors and merge keys", "base: &b\n  x: 1\n  y: 2\nchild:\n  <<: *b\n  y: 3\n",
			map[string]any{"base": map[string]any{"x": int64(1), "y": int64(2)}, "child": map[string]any{"x": int64(1), "y": int64(3)}}},
		{"merge list: first wins", "a: &a {x: 1}\nb: &b {x: 2, y: 2}\nc:\n  <<: [*a, *b]\n",
			map[string]any{"a": map[string]any{"x": int64(1)}, "b": map[string]any{"x": int64(2), "y": int64(2)}, "c": map[string]any{"x": int64(1), "y": int64(2)}}},
		{"trailing empty document", "a: 1\n---\n", map[string]any{"a": int64(1)}},
		{"documents merge in order, as in Helm 4", "a: {x: 1, y: 1}\nb: 1\n---\na: {y: 2}\nb: null\n---\n",
			map[string]any{"a": map[string]any{"x": int64(1), "y": int64(2)}}},
		{"custom tag kept as text", "a: !vault secret/x\n", map[string]any{"a": "secret/x"}},
		{"infinity", "a: .inf\n", map[string]any{"a": math.Inf(1)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := document.Parse([]byte(tc.in), "test.yaml")
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		sentinel error
		want     string // exact message
	}{
		{"duplicate key", "a: 1\nb: 2\na: 3\n", document.ErrDuplicateKey,
			`v.yaml:3:1: duplicate key "a" (first defined at line 1); remove one of them`},
		{"nested duplicate", "x:\n  a: 1\n  a: 2\n", document.ErrDuplicateKey,
			`v.yaml:3:3: duplicate key "a" (first defined at line 2); remove one of them`},
		{"list document", "- a\n- b\n", document.ErrNotMap,
			`v.yaml:1:1: the document must be a map of keys to values, but it is a list`},
		{"scalar document", "hello\n", document.ErrNotMap,
			`v.yaml:1:1: the document must be a map of keys to values, but it is the string "hello"`},
		{"invalid utf8", "a: ok\nb: \xff\n", document.ErrInvalidUTF8,
			`v.yaml:2:4: invalid UTF-8: save the file as UTF-8`},
		{"syntax", "a: 1\n b: 2\n", document.ErrSyntax,
			`v.yaml:2: mapping values are not allowed in this context`},
		{"unclosed flow", "a: [1, 2\n", document.ErrSyntax, ""},
		{"list in a stream", "a: 1\n---\n- b\n", document.ErrNotMap,
			`v.yaml:3:1: the document must be a map of keys to values, but it is a list`},
		{"map key", "? [a]\n: 1\n", document.ErrSyntax,
			`v.yaml:1:3: a map key must be a plain value, not a list`},
		{"merge of scalar", "a:\n  <<: 1\n", document.ErrSyntax, ""},
		{"unknown alias", "a: *nope\n", document.ErrSyntax, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := document.Parse([]byte(tc.in), "v.yaml")
			if err == nil {
				t.Fatalf("Parse(%q) succeeded, want error", tc.in)
			}
			if !errors.Is(err, tc.sentinel) {
				t.Errorf("Parse(%q) = %v, want errors.Is %v", tc.in, err, tc.sentinel)
			}
			var le *document.LoadError
			if !errors.As(err, &le) || le.Source != "v.yaml" {
				t.Errorf("Parse(%q) = %#v, want a *LoadError naming v.yaml", tc.in, err)
			}
			if tc.want != "" && err.Error() != tc.want {
				t.Errorf("Parse(%q) error = %q, want %q", tc.in, err.Error(), tc.want)
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	_, _, err := document.Loader{Limits: document.Limits{MaxDepth: 50}}.Parse([]byte("a: "+deep), "d.yaml")
	if !errors.Is(err, document.ErrTooDeep) {
		t.Errorf("deep nesting: got %v, want ErrTooDeep", err)
	}
	// A billion-laughs document: each level doubles the expansion.
	var b strings.Builder
	b.WriteString("l0: &l0 [x, x]\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [*l%d, *l%d]\n", i, i, i-1, i-1)
	}
	_, err = document.Parse([]byte(b.String()), "laughs.yaml")
	if !errors.Is(err, document.ErrTooLarge) {
		t.Errorf("alias bomb: got %v, want ErrTooLarge", err)
	}
	_, _, err = document.Loader{Limits: document.Limits{MaxBytes: 10}}.Parse([]byte("a: 0123456789"), "big.yaml")
	if !errors.Is(err, document.ErrTooLarge) {
		t.Errorf("size: got %v, want ErrTooLarge", err)
	}
}

func TestParsePositions(t *testing.T) {
	in := "a:\n  b: 1\n  c:\n    - x\n    - y: 2\n"
	_, pos, err := document.Loader{Positions: true}.Parse([]byte(in), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		line int
	}{{"a", 1}, {"a.b", 2}, {"a.c", 3}, {"a.c[0]", 4}, {"a.c[1].y", 5}} {
		p, err := document.ParsePath(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := pos.Lookup(p); got == nil || got.Line != tc.line {
			t.Errorf("Lookup(%s) = %+v, want line %d", tc.path, got, tc.line)
		}
	}
}

func TestParseJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]any
	}{
		{"surrogate pairs and escaped slash", `{"emoji": "\ud83d\ude00", "url": "a\/b"}`, map[string]any{"emoji": "😀", "url": "a/b"}},
		{"numbers", `{"i": 1, "f": 1.5, "e": 1e3, "big": 123456789012345678901234567890}`,
			map[string]any{"i": int64(1), "f": 1.5, "e": 1000.0, "big": json.Number("123456789012345678901234567890")}},
		{"byte order mark", "\ufeff{\"a\": 1}", map[string]any{"a": int64(1)}},
		{"yaml flow map is still yaml", `{a: 1}`, map[string]any{"a": int64(1)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := document.Parse([]byte(tc.in), "j.json")
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tc.in, diff)
			}
		})
	}
	for _, tc := range []struct{ in, want string }{
		{"{\n  \"a\": 1,\n  \"a\": 2\n}", `j.json:3: duplicate key "a" (first defined at line 2); remove one of them`},
		{"{\n  \"a\": [1, 2\n}", `j.json:3: invalid character '}' after array element`},
	} {
		if _, err := document.Parse([]byte(tc.in), "j.json"); err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
	if _, _, err := (document.Loader{JSON: true}).ParseAny([]byte("a: 1"), "j.json"); !errors.Is(err, document.ErrSyntax) {
		t.Errorf("JSON-only Loader accepted YAML: %v", err)
	}
	_, pos, err := document.Loader{Positions: true}.Parse([]byte("{\n\"a\": {\n  \"b\": [\n 1]}}"), "j.json")
	if err != nil {
		t.Fatal(err)
	}
	if p := pos.Lookup(document.Path{document.Key("a"), document.Key("b")}); p == nil || p.Line != 3 {
		t.Errorf("position of a.b = %+v, want line 3", p)
	}
}

func TestParseDocuments(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		want      []any
		wantLines []int
	}{
		{"empty", "", []any{}, []int{}},
		{"comments only", "# nothing\n---\n# still nothing\n", []any{}, []int{}},
		{"one", "a: 1\n", []any{map[string]any{"a": int64(1)}}, []int{1}},
		{"empty documents skipped", "a: 1\n---\n---\n- x\n---\nb\n",
			[]any{map[string]any{"a": int64(1)}, []any{"x"}, "b"}, []int{1, 4, 6}},
		{"json", `{"a": [1]}`, []any{map[string]any{"a": []any{int64(1)}}}, []int{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := document.Loader{Positions: true}.ParseDocuments([]byte(tc.in), "s.yaml")
			if err != nil {
				t.Fatal(err)
			}
			got, lines := []any{}, []int{}
			for _, d := range docs {
				got = append(got, d.Value)
				lines = append(lines, d.Pos.Line)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("values mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLines, lines); diff != "" {
				t.Errorf("lines mismatch (-want +got):\n%s", diff)
			}
		})
	}
	// The limits hold for the stream as a whole, and errors name the line.
	if _, err := (document.Loader{Limits: document.Limits{MaxBytes: 8}}).ParseDocuments([]byte("a: 1\n---\nb: 2\n"), "s.yaml"); !errors.Is(err, document.ErrTooLarge) {
		t.Errorf("over the byte limit: %v, want ErrTooLarge", err)
	}
	if _, err := (document.Loader{}).ParseDocuments([]byte("a: 1\n---\nb: [\n"), "s.yaml"); err == nil || !strings.HasPrefix(err.Error(), "s.yaml:") {
		t.Errorf("syntax error in the second document: %v, want an error naming s.yaml and a line", err)
	}
}

// TestParseFirstLine: a document cut from a stream counts the lines of the
// stream, in positions and in every error, messages included.
func TestParseFirstLine(t *testing.T) {
	l := document.Loader{Positions: true, FirstLine: 10}
	_, pos, err := l.ParseAny([]byte("a:\n  b: 1\n"), "s")
	if err != nil {
		t.Fatal(err)
	}
	if got := pos.Key("a").Key("b").Line; got != 11 {
		t.Errorf("line of a.b = %d, want 11", got)
	}
	_, pos, err = document.Loader{Positions: true, FirstLine: 10, JSON: true}.ParseAny([]byte("{\n\"a\": 1}"), "s")
	if err != nil {
		t.Fatal(err)
	}
	if got := pos.Key("a").Line; got != 11 {
		t.Errorf("JSON: line of a = %d, want 11", got)
	}
	for _, tc := range []struct{ in, want string }{
		{"a: 1\na: 2\n", `s:11:1: duplicate key "a" (first defined at line 10); remove one of them`},
		{"a: 1\nb: [\n", "s:12: did not find expected node content"},
		{"a: 1\nb: \xff\n", "s:11:4: invalid UTF-8: save the file as UTF-8"},
		{"{\"a\": 1,\n\"b\": [}", "s:11: invalid character '}' looking for beginning of value"},
		{"{\"a\": 1,\n\"a\": 2}", `s:11: duplicate key "a" (first defined at line 10); remove one of them`},
	} {
		if _, _, err := l.ParseAny([]byte(tc.in), "s"); err == nil || err.Error() != tc.want {
			t.Errorf("ParseAny(%q) with FirstLine 10 error = %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestAliasBudget: what aliases and merge keys add is bounded, nodes and
// bytes, and the error names the alias that passed the budget.
func TestAliasBudget(t *testing.T) {
	text := "a: &a [x, y, z]\nb: *a\nc: *a\nd: {<<: {k: *a}}\n"
	long := "a: &a " + strings.Repeat("x", 100) + "\nb: [*a, *a, *a]\n"
	tests := []struct {
		name, text string
		lim        document.Limits
		want       string // "" for no error
	}{
		{"within", text, document.Limits{MaxAliasNodes: 12}, ""},
		{"nodes", text, document.Limits{MaxAliasNodes: 8}, "t.yaml:4:13: YAML aliases and merge keys (<<) expand to more than 8 values"},
		{"bytes", long, document.Limits{MaxAliasBytes: 250}, "t.yaml:2:13: YAML aliases and merge keys (<<) expand to more than 250 bytes"},
		{"no limit of its own", long, document.Limits{MaxAliasBytes: -1, MaxAliasNodes: -1}, ""},
		{"written out: no budget", "a: [x, y, z]\nb: [x, y, z]\n", document.Limits{MaxAliasNodes: 1, MaxAliasBytes: 1}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := document.Loader{Limits: tc.lim}.Parse([]byte(tc.text), "t.yaml")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Parse() = %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.Is(err, document.ErrTooLarge)):
				t.Fatalf("Parse() = %v, want ErrTooLarge starting %q", err, tc.want)
			}
		})
	}
}

// TestNodesCountedBeforeParsing: a text over the node budget is refused
// with the line where the count passed it, before the YAML library reads
// it.
func TestNodesCountedBeforeParsing(t *testing.T) {
	text := "xs:\n" + strings.Repeat("- 1\n", 100)
	_, _, err := document.Loader{Limits: document.Limits{MaxNodes: 50}}.Parse([]byte(text), "t.yaml")
	want := "t.yaml:49: the document holds more than 50 values"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, document.ErrTooLarge) {
		t.Fatalf("Parse() = %v, want ErrTooLarge starting %q", err, want)
	}
	if err := document.CheckNodes([]byte(text), "t.yaml", 50); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("CheckNodes() = %v, want %q", err, want)
	}
	if err := document.CheckNodes([]byte(text), "t.yaml", 200); err != nil {
		t.Errorf("CheckNodes() within the budget = %v", err)
	}
}

// TestCheckNodesAliases: for a text another library parses, CheckNodes
// holds what its aliases add to the alias budget.
func TestCheckNodesAliases(t *testing.T) {
	bomb := "a: &a " + strings.Repeat("x", 1000) + "\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n" +
		"d: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e]\n"
	err := document.CheckNodes([]byte(bomb), "values.yaml", 0)
	if !errors.Is(err, document.ErrTooLarge) || !strings.Contains(err.Error(), "YAML aliases and merge keys (<<) expand to more than") {
		t.Errorf("CheckNodes(alias bomb) = %v, want the alias budget", err)
	}
	// What only this package refuses is left to the other library.
	if err := document.CheckNodes([]byte("a: &a 1\na: *a\n"), "values.yaml", 0); err != nil {
		t.Errorf("CheckNodes(duplicate key) = %v, want nil", err)
	}
}

// TestParseYAML11Bools: with YAML11Bools, the unquoted, untagged values
// YAML 1.1 reads as booleans are booleans, in aliases and merged maps too;
// keys, quoted and tagged values, block scalars and numbers stay YAML 1.2.
func TestParseYAML11Bools(t *testing.T) {
	const doc = "a: yes\nquoted: [\"yes\", 'no', !!str y]\nlist: [on, off, x, Y, n]\nnested: {f: NO}\n" +
		"block: |\n  yes\non: kept\nh: &flag Off\ni: *flag\nk: yess\nl: 012\n<<: {m: N}\n"
	got, _, err := document.Loader{YAML11Bools: true}.Parse([]byte(doc), "values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"a": true, "quoted": []any{"yes", "no", "y"}, "list": []any{true, false, "x", true, false}, "nested": map[string]any{"f": false},
		"block": "yes\n", "on": "kept", "h": false, "i": false, "k": "yess", "l": int64(12), "m": false,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse(YAML11Bools) mismatch (-want +got):\n%s", diff)
	}
	plain, _, err := document.Loader{}.Parse([]byte(doc), "values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if plain["a"] != "yes" || plain["m"] != "N" {
		t.Errorf("Parse() = %v, want yes and N read as strings without YAML11Bools", plain)
	}
}
