package yamljson

import (
	"fmt"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/document/documenttest"
)

// benchManifest is a rendered Deployment of the usual shape, in the plain
// block style the fast path reads.
func benchManifest(i int) []byte {
	return fmt.Appendf(nil, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-%d
  labels:
    app.kubernetes.io/name: web
    app.kubernetes.io/instance: release-name
    helm.sh/chart: web-1.2.3
  annotations:
    checksum/config: 0123456789abcdef
spec:
  replicas: 3
  selector:
    matchLabels:
      app.kubernetes.io/name: web
  template:
    metadata:
      labels:
        app.kubernetes.io/name: web
    spec:
      containers:
        - name: web
          image: "nginx:1.27.%d"
          args:
            - --port=8080
            - --verbose
          ports:
            - containerPort: 8080
              protocol: TCP
          resources:
            limits:
              cpu: 500m
              memory: 128Mi
          env:
            - name: A
              value: "true"
            - name: B
              value: '1.5'
      nodeSelector: {}
      tolerations: []
`, i, i)
}

// BenchmarkYAMLToJSON reads rendered documents with ToJSON: the fast path
// (parseBlockYAML and the direct JSON writer, document.FastCodecs) and the
// reference it is held to (sigs.k8s.io/yaml.YAMLToJSON and encoding/json
// for the head, document.ReferenceCodecs).
func BenchmarkYAMLToJSON(b *testing.B) {
	docs := make([][]byte, 100)
	size := 0
	for i := range docs {
		docs[i] = benchManifest(i)
		size += len(docs[i])
	}
	for _, codecs := range []document.Codecs{document.FastCodecs, document.ReferenceCodecs} {
		b.Run(fmt.Sprintf("reference=%v", !codecs.Fast()), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				for _, d := range docs {
					if _, _, err := ToJSON(d, codecs); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkValues reads a values.yaml with ValuesFast and with the
// reference, sigs.k8s.io/yaml.Unmarshal into a map (helmrender's
// BenchmarkLoadValues measures the whole of Helm's loader.LoadValues).
func BenchmarkValues(b *testing.B) {
	data := documenttest.BenchValues()
	if _, err := ValuesFast(data); err != nil {
		b.Fatalf("the benchmark's values leave the fast path: %v", err)
	}
	b.Run("reference=false", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := ValuesFast(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference=true", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			m := map[string]any{}
			if err := sigsyaml.Unmarshal(data, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
