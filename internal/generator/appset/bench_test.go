package appset_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/generator/appset"
)

// benchSet is an ApplicationSet of n list elements whose template calls a
// few functions and ranges over a list: the cost of parsing and of the
// template budgets' checks.
func benchSet(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: bench, namespace: argocd}\nspec:\n  goTemplate: true\n  generators:\n    - list:\n        elements:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "          - {cluster: c%d, region: eu-west-%d, tags: [a, b, c], replicas: %d}\n", i, i%3, i%5)
	}
	b.WriteString(`  template:
    metadata:
      name: '{{ .cluster | normalize }}-app'
      labels:
        region: '{{ .region | upper | replace "-" "_" | lower }}'
      annotations:
        tags: '{{ join "," .tags }}'
        loop: '{{ range $i, $t := .tags }}{{ $i }}={{ $t }};{{ end }}'
        json: '{{ toJson . | b64enc }}'
        printf: '{{ printf "%s-%03.0f" .cluster .replicas }}'
    spec:
      project: default
      source: {repoURL: https://example.com/repo.git, targetRevision: HEAD, path: 'apps/{{ .region }}'}
      destination: {server: https://kubernetes.default.svc, namespace: '{{ .cluster }}'}
`)
	return []byte(b.String())
}

// BenchmarkRenderFile parses and renders 1000 Applications.
func BenchmarkRenderFile(b *testing.B) {
	data := benchSet(1000)
	for b.Loop() {
		sets, err := appset.ParseAll(data, "bench.yaml")
		if err != nil {
			b.Fatal(err)
		}
		f := appset.File{}
		if _, err := f.Render(context.Background(), sets); err != nil {
			b.Fatal(err)
		}
	}
}
