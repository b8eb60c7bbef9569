// Package argoread reads `helm template`'s output as Argo CD's repo-server
// reads it, for the hack commands that compare strata with the helm CLI
// (helmbench, helmparity): one line break dropped from the end, split by
// Kubernetes' YAML reader, each document read with sigs.k8s.io/yaml, empty
// documents dropped, Lists unpacked. Each document comes back as canonical
// JSON (keys sorted, numbers as written).
package argoread

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// Docs reads helm template's output as Argo CD's repo-server does.
func Docs(out []byte) ([]string, error) {
	var docs []string
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(bytes.TrimSuffix(out, []byte("\n")))))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		js, err := sigsyaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		if s := strings.TrimSpace(string(js)); s == "null" || s == "" {
			continue
		}
		more, err := unpack(js)
		if err != nil {
			return nil, err
		}
		docs = append(docs, more...)
	}
}

// JSONList reads a JSON list of manifests (strata's -o json) as canonical
// documents.
func JSONList(out []byte) ([]string, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, err
	}
	docs := make([]string, len(list))
	for i, m := range list {
		var err error
		if docs[i], err = Canonical(m); err != nil {
			return nil, err
		}
	}
	return docs, nil
}

func unpack(js []byte) ([]string, error) {
	var obj map[string]any
	if err := json.Unmarshal(js, &obj); err != nil {
		return nil, err
	}
	kind, _ := obj["kind"].(string)
	items, ok := obj["items"].([]any)
	if !strings.HasSuffix(kind, "List") || !ok {
		c, err := Canonical(js)
		return []string{c}, err
	}
	var out []string
	for _, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			return nil, err
		}
		more, err := unpack(b)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

// Canonical re-encodes a JSON document: keys sorted, numbers as written.
func Canonical(js []byte) (string, error) {
	v, err := Decode(js)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// Decode reads a JSON document with its numbers as written.
func Decode(js []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
