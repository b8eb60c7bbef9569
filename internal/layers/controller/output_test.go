package controller

import (
	"bytes"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/document"
)

// TestYAMLSizeExceeds: the bound is a lower bound of the YAML written,
// and catches what the encoding-neutral bound lets through: 480,000
// one-digit numbers are 960 KB of JSON, 2.9 MB of YAML.
func TestYAMLSizeExceeds(t *testing.T) {
	list := make([]any, 480_000)
	for i := range list {
		list[i] = int64(1)
	}
	flows := map[string]any{"flows": list}
	if document.SizeExceeds(flows, maxOutputBytes) {
		t.Fatal("document.SizeExceeds caught the flow list: this test no longer shows what yamlSizeExceeds adds")
	}
	if !yamlSizeExceeds(flows, maxOutputBytes) {
		t.Error("yamlSizeExceeds missed 480,000 list items")
	}
	if _, err := encodeValues(flows, "ConfigMap chain"); err == nil || !strings.Contains(err.Error(), "more than 1048576 bytes of YAML") {
		t.Errorf("encodeValues = %v, want it refused before encoding", err)
	}
	for _, v := range []map[string]any{
		{"a": int64(-12345), "b": 2.5, "c": true, "d": nil, "e": "text", "f": map[string]any{}, "g": []any{"x", int64(1), map[string]any{"k": "v"}}},
		{"list": list[:1000]},
	} {
		var b bytes.Buffer
		if err := document.Encode(&b, v, document.YAML); err != nil {
			t.Fatal(err)
		}
		if yamlSizeExceeds(v, int64(b.Len())) {
			t.Errorf("yamlSizeExceeds(%d bytes of YAML) passed them: it must be a lower bound", b.Len())
		}
	}
}
