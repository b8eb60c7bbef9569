package manifest_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/manifest"
)

// parsed is a document as the tests compare it: index, first line, the
// line of its kind key (0 when it has none) and its value.
type parsed struct {
	Index, Line, KindLine int
	Value                 any
}

var parseTests = []struct {
	name   string
	stream string
	want   []parsed
}{
	{"empty", "", nil},
	{"comments and markers only", "# a\n---\n# b\n---\n...\n", nil},
	{"null documents dropped", "~\n---\nnull\n---\n", nil},
	{"one document", "kind: A\n", []parsed{{1, 1, 1, map[string]any{"kind": "A"}}}},
	{"leading marker", "---\nkind: A\n", []parsed{{1, 2, 2, map[string]any{"kind": "A"}}}},
	{"stream with empty documents", "kind: A\n---\n---\n# c\n---\nx: 1\nkind: B\n",
		[]parsed{{1, 1, 1, map[string]any{"kind": "A"}}, {2, 6, 7, map[string]any{"x": int64(1), "kind": "B"}}}},
	{"content on the marker line", "--- {kind: A}\n--- {kind: B}\n",
		[]parsed{{1, 1, 1, map[string]any{"kind": "A"}}, {2, 2, 2, map[string]any{"kind": "B"}}}},
	{"end marker", "kind: A\n...\nkind: B\n",
		[]parsed{{1, 1, 1, map[string]any{"kind": "A"}}, {2, 3, 3, map[string]any{"kind": "B"}}}},
	{"directive stays with its document", "kind: A\n---\n%YAML 1.1\n---\nkind: B\n",
		[]parsed{{1, 1, 1, map[string]any{"kind": "A"}}, {2, 3, 5, map[string]any{"kind": "B"}}}},
	{"block scalar holding a marker-like line", "kind: A\ndata: |\n  ---\n  x\n",
		[]parsed{{1, 1, 1, map[string]any{"kind": "A", "data": "---\nx\n"}}}},
	{"JSON stream", "{\"kind\": \"A\"}\n\n{\n\"kind\": \"B\"}\n",
		[]parsed{{1, 1, 1, map[string]any{"kind": "A"}}, {2, 3, 4, map[string]any{"kind": "B"}}}},
	{"JSON array", "[{\"kind\": \"A\"}]", []parsed{{1, 1, 0, []any{map[string]any{"kind": "A"}}}}},
	{"JSON documents separated by markers", "{\"kind\": \"A\"}\n---\n{\"kind\": \"B\"}\n",
		[]parsed{{1, 1, 1, map[string]any{"kind": "A"}}, {2, 3, 3, map[string]any{"kind": "B"}}}},
	{"CRLF", "kind: A\r\n---\r\nkind: B\r\n",
		[]parsed{{1, 1, 1, map[string]any{"kind": "A"}}, {2, 3, 3, map[string]any{"kind": "B"}}}},
	{"byte order mark", "\ufeffkind: A\n", []parsed{{1, 1, 1, map[string]any{"kind": "A"}}}},
	{"big integers stay exact", "n: 123456789012345678901234567890\n",
		[]parsed{{1, 1, 0, map[string]any{"n": document.Number("123456789012345678901234567890")}}}},
}

func TestParse(t *testing.T) {
	for _, tc := range parseTests {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := manifest.Parse([]byte(tc.stream), "s.yaml", manifest.Limits{})
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tc.stream, err)
			}
			var got []parsed
			for _, d := range docs {
				got = append(got, parsed{d.Index, d.Line, lineOf(d.Pos.Key("kind")), d.Value})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tc.stream, diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	many := strings.Repeat("kind: A\n---\n", 4)
	tests := []struct {
		name   string
		stream string
		lim    manifest.Limits
		want   string
		is     error
	}{
		{"syntax error in a later document", "kind: A\n---\nkind: B\n  x: [\n", manifest.Limits{},
			"s.yaml:4: mapping values are not allowed in this context", document.ErrSyntax},
		{"duplicate key in a later document", "kind: A\n---\n\nkind: B\nkind: C\n", manifest.Limits{},
			`s.yaml:5:1: duplicate key "kind" (first defined at line 4); remove one of them`, document.ErrDuplicateKey},
		{"broken JSON is a JSON error", "{\"kind\": \"A\",\n\"x\": [}\n", manifest.Limits{},
			"s.yaml:2: invalid character '}' looking for beginning of value", document.ErrSyntax},
		{"too many documents", many, manifest.Limits{MaxDocuments: 3},
			"s.yaml:7: the stream holds more than 3 documents", document.ErrTooLarge},
		{"too many JSON documents", "{}\n{}\n{}\n", manifest.Limits{MaxDocuments: 2},
			"s.yaml:3: the stream holds more than 2 documents", document.ErrTooLarge},
		{"stream too large", many, manifest.Limits{MaxBytes: 10},
			"s.yaml: the stream is larger than the limit of 10 bytes", document.ErrTooLarge},
		{"nodes shared by the stream", "a:\n- 1\n- 2\n- 3\n---\nb:\n- 1\n- 2\n- 3\n", manifest.Limits{MaxNodes: 6},
			"s.yaml:6: the documents hold more than 6 values (YAML aliases count each time they are used)", document.ErrTooLarge},
		{"too deep", "a: {b: {c: 1}}\n", manifest.Limits{MaxDepth: 1},
			"s.yaml:1:8: maps and lists are nested more than 1 levels deep", document.ErrTooDeep},
		{"invalid UTF-8", "kind: A\n---\nx: \xff\n", manifest.Limits{},
			"s.yaml:3:4: invalid UTF-8: save the file as UTF-8", document.ErrInvalidUTF8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := manifest.Parse([]byte(tc.stream), "s.yaml", tc.lim)
			if err == nil {
				t.Fatalf("Parse(%q) = %d documents, want error %q", tc.stream, len(docs), tc.want)
			}
			if err.Error() != tc.want {
				t.Errorf("Parse(%q) error = %q, want %q", tc.stream, err, tc.want)
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.is)
			}
		})
	}
}

func TestListItems(t *testing.T) {
	item := map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}
	tests := []struct {
		name     string
		obj      map[string]any
		wantList bool
		wantLen  int
	}{
		{"List", map[string]any{"kind": "List", "items": []any{item, item}}, true, 2},
		{"typed list", map[string]any{"kind": "ConfigMapList", "items": []any{item}}, true, 1},
		{"any kind with an items list, as the repo-server reads it", map[string]any{"kind": "Widget", "items": []any{item}}, true, 1},
		{"empty items", map[string]any{"kind": "List", "items": []any{}}, true, 0},
		{"null items: an empty list", map[string]any{"kind": "List", "items": nil}, true, 0},
		{"null items beside spec: an object", map[string]any{"kind": "Widget", "items": nil, "spec": map[string]any{}}, false, 0},
		{"null items beside status: an object", map[string]any{"kind": "Widget", "items": nil, "status": nil}, false, 0},
		{"items a map: an object", map[string]any{"kind": "List", "items": map[string]any{}}, false, 0},
		{"items a string: an object", map[string]any{"kind": "List", "items": "x"}, false, 0},
		{"no items", map[string]any{"kind": "List"}, false, 0},
		{"items under spec only", map[string]any{"kind": "AllowList", "spec": map[string]any{"items": []any{"x"}}}, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			items, isList := manifest.ListItems(tc.obj)
			if isList != tc.wantList || len(items) != tc.wantLen {
				t.Errorf("ListItems(%v) = %d items, %t; want %d, %t", tc.obj, len(items), isList, tc.wantLen, tc.wantList)
			}
		})
	}
}

// FuzzParse: any stream parses or fails cleanly with a *LoadError; what
// parses has documents numbered from 1 whose lines lie inside the stream,
// and writing them back as a YAML stream gives the same documents.
func FuzzParse(f *testing.F) {
	for _, tc := range parseTests {
		f.Add([]byte(tc.stream))
	}
	f.Add([]byte("a: &a [1, 2]\nb: *a\n---\n- *x\n"))
	f.Add([]byte("%TAG ! tag:x,2000:\n--- !foo\nkind: A\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		docs, err := manifest.Parse(stream, "fuzz", manifest.Limits{MaxNodes: 1 << 16})
		if err != nil {
			var le *document.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Parse error %v is not a *document.LoadError", err)
			}
			return
		}
		// YAML breaks lines at \n, \r\n and a lone \r.
		lines := bytes.Count(stream, []byte("\n")) + bytes.Count(stream, []byte("\r")) + 1
		var again bytes.Buffer
		for i, d := range docs {
			if d.Index != i+1 {
				t.Fatalf("document %d has Index %d", i+1, d.Index)
			}
			if d.Value == nil {
				t.Fatalf("document %d is empty", d.Index)
			}
			if d.Line < 1 || d.Line > lines || lineOf(d.Pos) > lines {
				t.Fatalf("document %d at line %d (pos %d) of a %d-line stream", d.Index, d.Line, lineOf(d.Pos), lines)
			}
			again.WriteString("---\n")
			if err := document.Encode(&again, d.Value, document.YAML); err != nil {
				return // NaN and such: the encoder's business, fuzzed in package document
			}
		}
		back, err := manifest.Parse(again.Bytes(), "again", manifest.Limits{})
		if err != nil {
			t.Fatalf("re-parsing %q: %v", again.String(), err)
		}
		if len(back) != len(docs) {
			t.Fatalf("%d documents, %d after writing them back:\n%s", len(docs), len(back), again.String())
		}
	})
}

func lineOf(p *document.Pos) int {
	line, _ := p.At()
	return line
}
