package helmrender

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/strata-dev/strata/internal/document"
)

// splitCases are rendered files for the splitter's corners: separators at
// the start, after white space, with spaces, tabs and text after them, in
// a row, indented (not separators), "----", CRLF line ends, vertical tabs
// and Unicode white space (which Helm's trimming drops and its separator
// does not take), empty and blank documents.
var splitCases = []string{
	"", " ", "\n\n", "---", "---\n", "--- \n", "---\t\t\n", "---x\nkind: A\n", "----\nkind: A",
	"kind: A\n", "kind: A\n---\nkind: B\n", "---\nkind: A\n---\n---\nkind: B\n---\n",
	"\n\n---\nkind: A\n", "  ---\nkind: A\n", "kind: A\n  ---\nkind: B\n", "kind: A\n--- # c\nkind: B\n",
	"kind: A\r\n---\r\nkind: B\r\n", "kind: A\n---\n\n\n   \nkind: B\n", "\v\u00a0kind: A\n---\v\nkind: B\n",
	"a: |\n  x\n  ---\n  y\n---\nb: 1\n", "------\n", "--- ---\n---", "x\n---", "x\n--", "\u2028---\nkind: A",
	"kind: A\n---kind: B\n---\t kind: C", "\n---\n\n---\n \t\n---\n",
}

// readerSplit splits a stream with Kubernetes' YAML reader only, as Argo
// CD reads helm's output.
func readerSplit(stream []byte) ([]string, error) {
	var docs []string
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, string(doc))
	}
}

// checkSplitStream wants splitStream to give what Kubernetes' reader
// gives, documents and the sources their "# Source:" comments name, or
// the same error.
func checkSplitStream(t *testing.T, stream []byte) {
	want, wantErr := readerSplit(stream)
	for _, codecs := range []document.Codecs{document.FastCodecs, document.ReferenceCodecs} {
		checkSplitStreamWith(t, stream, codecs, want, wantErr)
	}
}

func checkSplitStreamWith(t *testing.T, stream []byte, codecs document.Codecs, want []string, wantErr error) {
	docs, err := splitStream(string(stream), "file.yaml", codecs)
	if (err == nil) != (wantErr == nil) || err != nil && !strings.Contains(err.Error(), wantErr.Error()) {
		t.Fatalf("splitStream(%q, %v): error %v, the reader's %v", stream, codecs, err, wantErr)
	}
	var got []string
	source := "file.yaml"
	for i, d := range docs {
		got = append(got, d.text)
		if s := sourceOf(want[i]); s != "" {
			source = s
		}
		if d.source != source {
			t.Errorf("splitStream(%q, %v): document %d names %q, want %q", stream, codecs, i, d.source, source)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("splitStream(%q, %v) = %q, the reader's %q", stream, codecs, got, want)
	}
}

func TestSplitStreamMatchesReader(t *testing.T) {
	more := []string{"---\n# Source: a.yaml\nkind: A\n---\n# Source: b.yaml\nkind: B\n", "kind: A\n--- x\nkind: B\n",
		"kind: A\n--- #c\nkind: B\n", "kind: A\r\n---\r\nkind: B\r\n", "kind: A\n---\n", "kind: A", "\n\n---\n\n"}
	for _, s := range append(slices.Clone(splitCases), more...) {
		checkSplitStream(t, []byte(s))
		checkSplitStream(t, []byte(printedText(s, middle)))
	}
}

// FuzzSplitStream holds splitStream to Kubernetes' YAML reader.
func FuzzSplitStream(f *testing.F) {
	for _, s := range splitCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkSplitStream(t, []byte(s))
		checkSplitStream(t, []byte(printedText(s, middle)))
	})
}
