package helmrender

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
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

// benchValues is a values.yaml of 2,000 keys in sections, with comments.
func benchValues() []byte {
	var b strings.Builder
	for s := range 100 {
		fmt.Fprintf(&b, "# section %d\nsection%d:\n  enabled: true\n  list:\n    - a\n    - b: c\n", s, s)
		for k := range 17 {
			fmt.Fprintf(&b, "  key%d: value %d # comment\n", k, k)
		}
	}
	return []byte(b.String())
}

// BenchmarkYAMLToJSON reads rendered documents with the fast path alone
// (parseBlockYAML and the direct JSON writer, ReferenceYAML false) and
// with the reference it is held to (sigs.k8s.io/yaml.YAMLToJSON and
// encoding/json for the head, ReferenceYAML true).
func BenchmarkYAMLToJSON(b *testing.B) {
	docs := make([][]byte, 100)
	size := 0
	for i := range docs {
		docs[i] = benchManifest(i)
		size += len(docs[i])
	}
	for _, reference := range []bool{false, true} {
		b.Run(fmt.Sprintf("reference=%v", reference), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				for _, d := range docs {
					if _, _, err := convertDoc(d, reference); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkLoadValues reads a values.yaml with the fast path alone and
// with Helm's loader.LoadValues.
func BenchmarkLoadValues(b *testing.B) {
	data := benchValues()
	if _, err := LoadValuesFast(data); err != nil {
		b.Fatalf("the benchmark's values leave the fast path: %v", err)
	}
	b.Run("reference=false", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := LoadValues(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference=true", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := loader.LoadValues(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
