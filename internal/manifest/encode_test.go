package manifest_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/manifest"
)

// encodeCases are manifests as plugins write them, and some the fast paths
// leave to the reference: a list in a list, a key to quote, a float, an
// escaped surrogate, a string of several lines.
var encodeCases = []string{
	`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web"}},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.27","args":["--port=8080"]}]}}}}`,
	`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"script":"#!/bin/sh\necho hi\n","yes":"yes","empty":""}}`,
	`{"kind":"X","a":[["nested"]],"key with: colon":1.5,"s":"\ud83d\ude00","n":null,"t":true,"big":123456789012345678901234567890}`,
	"{\n  \"kind\": \"Pretty\",\n  \"items\": []\n}\n",
}

func encode(t *testing.T, e manifest.Encoder, manifests []string) (string, error) {
	t.Helper()
	var b bytes.Buffer
	err := e.Encode(&b, manifests)
	return b.String(), err
}

// TestEncoder: the fast paths write what the reference writes, in both
// formats, and the YAML stream is the one expected.
func TestEncoder(t *testing.T) {
	for _, f := range []document.Format{document.YAML, document.JSON} {
		fast, err := encode(t, manifest.Encoder{Format: f}, encodeCases)
		if err != nil {
			t.Fatalf("Encode(%s) error = %v", f, err)
		}
		ref, err := encode(t, manifest.Encoder{Format: f, Codecs: document.ReferenceCodecs}, encodeCases)
		if err != nil {
			t.Fatalf("Encode(%s, reference) error = %v", f, err)
		}
		if fast != ref {
			t.Errorf("Encode(%s) =\n%s\nwant the reference's\n%s", f, fast, ref)
		}
	}
	got, _ := encode(t, manifest.Encoder{Format: document.YAML}, encodeCases[:2])
	const want = `---
apiVersion: apps/v1
kind: Deployment
metadata:
  labels:
    app: web
  name: web
spec:
  replicas: 2
  template:
    spec:
      containers:
        - args:
            - --port=8080
          image: nginx:1.27
          name: web
---
apiVersion: v1
data:
  empty: ""
  script: |
    #!/bin/sh
    echo hi
  "yes": "yes"
kind: ConfigMap
metadata:
  name: c
`
	if got != want {
		t.Errorf("Encode(yaml) =\n%s\nwant\n%s", got, want)
	}
}

func TestEncoderErrors(t *testing.T) {
	for _, codecs := range []document.Codecs{document.FastCodecs, document.ReferenceCodecs} {
		for _, f := range []document.Format{document.YAML, document.JSON} {
			_, err := encode(t, manifest.Encoder{Format: f, Codecs: codecs}, []string{`{"kind":"A"}`, `{"kind":`})
			if err == nil || !strings.HasPrefix(err.Error(), "manifest 1:") {
				t.Errorf("Encode(%s, %v codecs) of a broken manifest: error = %v, want one naming manifest 1", f, codecs, err)
			}
		}
	}
}

// FuzzEncoder holds the fast paths to the reference on any manifest the
// reference reads.
func FuzzEncoder(f *testing.F) {
	for _, m := range encodeCases {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, m string) {
		ref, err := encode(t, manifest.Encoder{Format: document.YAML, Codecs: document.ReferenceCodecs}, []string{m})
		if err != nil {
			return
		}
		fast, err := encode(t, manifest.Encoder{Format: document.YAML}, []string{m})
		if err != nil || fast != ref {
			t.Fatalf("Encode(%q) = %q, %v; the reference writes %q", m, fast, err, ref)
		}
	})
}
