package appset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/strata-dev/strata/internal/document"
)

// parseYAML11 parses every non-empty document of a YAML stream (or one
// JSON document) the way kubectl and the argocd CLI read manifests
// (sigs.k8s.io/yaml: YAML 1.1 scalars and JSON keys, document.Loader's
// YAML11), keeping positions so errors still name file:line. positions
// keeps the position of every node.
func parseYAML11(data []byte, source string, lim document.Limits, positions bool) ([]document.Document, error) {
	text := bytes.Trim(bytes.TrimPrefix(data, []byte("\ufeff")), " \t\r\n")
	if len(text) > 0 && (text[0] == '{' || text[0] == '[') && json.Valid(text) {
		// JSON reads the same in YAML 1.1 and 1.2; the document layer
		// gives the better errors and positions for it.
		return document.Loader{Positions: positions, Limits: lim, JSON: true}.ParseDocuments(data, source)
	}
	return document.Loader{Positions: positions, Limits: lim, YAML11: true}.ParseDocuments(data, source)
}

// parseOneYAML11 parses a stream holding at most one document; empty is nil.
func parseOneYAML11(data []byte, source string, lim document.Limits, positions bool) (any, *document.Pos, error) {
	docs, err := parseYAML11(data, source, lim, positions)
	if err != nil {
		return nil, nil, err
	}
	switch len(docs) {
	case 0:
		return nil, nil, nil
	case 1:
		return docs[0].Value, docs[0].Pos, nil
	}
	return nil, nil, &document.LoadError{Source: source, Line: lineOf(docs[1].Pos), Err: document.ErrSyntax,
		Msg: "a second YAML document starts here; this input holds exactly one document"}
}

// checkYAMLExpansion refuses YAML for fromYaml whose aliases would expand
// it beyond the value limit, before the YAML library builds it.
func checkYAMLExpansion(s string, lim Limits) error {
	if !strings.Contains(s, "*") {
		return nil
	}
	maxNodes := int(lim.MaxValueBytes / 16)
	_, err := parseYAML11([]byte(s), "fromYaml", document.Limits{MaxBytes: lim.MaxValueBytes, MaxDepth: maxValueDepth, MaxNodes: maxNodes}, false)
	if err != nil && (errors.Is(err, document.ErrTooLarge) || errors.Is(err, document.ErrTooDeep)) {
		return fmt.Errorf("%w: %w", ErrTooLarge, err)
	}
	return nil
}
