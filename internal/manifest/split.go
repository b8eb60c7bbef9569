package manifest

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"unicode"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/strata-dev/strata/internal/document"
)

// SplitReader cuts a YAML stream into its documents as Kubernetes' YAML
// reader does (k8s.io/apimachinery/pkg/util/yaml.YAMLReader): the way
// Argo CD's repo-server reads the output of `helm template` and of a
// plugin, and Helm's loader.LoadValues a values file of several documents.
// A line starting with "---" ends the document before it, or, first in a
// document, is part of it; every line of a document ends in "\n" (the
// last one too; "\r\n" too); a "---" line followed by more than white
// space and a comment is an error. Unlike Split it knows no "..." marker
// and keeps empty documents: its documents are the reader's, byte for
// byte (TestSplitReaderMatchesReader, FuzzSplitReader). A stream in the
// common shape is cut by a fast path, unless codecs is
// document.ReferenceCodecs; the reader itself cuts any other.
func SplitReader(stream string, codecs document.Codecs) ([]string, error) {
	if codecs.Fast() {
		if docs, ok := splitReaderFast(stream); ok {
			return docs, nil
		}
	}
	var docs []string
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(stream)))
	for {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, string(raw))
	}
}

// splitReaderFast is SplitReader on a stream that ends in a line break
// and holds no carriage return, the common case, without Kubernetes'
// reader, which reads it a line at a time into buffers: the documents
// are the stream's own bytes. ok is false for any other stream, and for
// a "---" line followed by more than white space and a comment, which the
// reader reports as an error.
func splitReaderFast(stream string) (docs []string, ok bool) {
	if len(stream) == 0 || stream[len(stream)-1] != '\n' || strings.IndexByte(stream, '\r') >= 0 {
		return nil, false
	}
	start := 0 // where the document being read starts
	for i := 0; i < len(stream); {
		next := i + strings.IndexByte(stream[i:], '\n') + 1
		if line := stream[i:next]; strings.HasPrefix(line, "---") {
			if rest := strings.TrimSpace(line[3:]); len(rest) > 0 && rest[0] != '#' {
				return nil, false
			}
			if i > start {
				docs = append(docs, stream[start:i])
				start = next
			} // else it starts the document, and stays in it (as in the reader)
		}
		i = next
	}
	if start < len(stream) {
		docs = append(docs, stream[start:])
	}
	return docs, true
}

// SplitRendered splits a file a chart's template rendered into documents
// as Helm's releaseutil.SplitManifests does before sorting them, with the
// same texts, in order (TestSplitRenderedMatchesHelm,
// FuzzSplitRendered): white space dropped from the start of the file; a line starting with "---"
// (and the spaces and tabs after it) separates documents, wherever the
// line ends; documents of white space only are dropped, the others lose
// the white space at their start and keep the rest. It finds the
// separators by hand instead of with Helm's regular expression, which
// costs as much as reading the documents.
func SplitRendered(s string) []string {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	var docs []string
	add := func(d string) {
		if strings.TrimSpace(d) != "" {
			docs = append(docs, strings.TrimLeftFunc(d, unicode.IsSpace))
		}
	}
	beg, from := 0, 0
	for {
		at := -1 // where the next separator starts
		if from == 0 && strings.HasPrefix(s, "---") {
			at = 0
		} else if start := max(from-1, 0); start < len(s) {
			// A separator starts a line: after a line break at from-1 or later.
			if k := strings.Index(s[start:], "\n---"); k >= 0 {
				at = start + k + 1
			}
		}
		if at < 0 {
			add(s[beg:])
			return docs
		}
		add(s[beg:at])
		end := at + len("---")
		for end < len(s) && (s[end] == ' ' || s[end] == '\t') {
			end++
		}
		beg, from = end, end
	}
}
