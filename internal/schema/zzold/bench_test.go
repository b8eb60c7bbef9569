package schema_test

import (
	"fmt"
	"testing"

	"github.com/strata-dev/strata/internal/schema/zzold"
)

const benchSchema = `
type: object
additionalProperties: false
properties:
  services:
    type: object
    additionalProperties:
      type: object
      additionalProperties: false
      required: [name, port]
      properties:
        name: {type: string, pattern: '^[a-z0-9-]+$', maxLength: 63}
        port: {type: integer, minimum: 1, maximum: 65535}
        enabled: {type: boolean, default: true}
        protocol: {type: string, enum: [TCP, UDP], default: TCP}
        weight: {type: number, minimum: 0, default: 1.0}
`

// benchTree returns a tree of 2,000 services with 5 leaves each. Every
// bad-th service breaks three rules (0: none).
func benchTree(bad int) map[string]any {
	services := make(map[string]any, 2000)
	for i := range 2000 {
		svc := map[string]any{
			"name":     fmt.Sprintf("svc-%d", i),
			"port":     int64(1024 + i),
			"enabled":  true,
			"protocol": "TCP",
			"weight":   0.5,
		}
		if bad > 0 && i%bad == 0 {
			svc["name"] = "Not Valid"
			svc["port"] = int64(70000)
			svc["protocol"] = "SCTP"
		}
		services[fmt.Sprintf("svc%d.example.com", i)] = svc
	}
	return map[string]any{"services": services}
}

func BenchmarkValidate10kLeaves(b *testing.B) {
	s := mustParse(b, benchSchema, schema.Options{})
	tree := benchTree(0)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(tree); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate10kLeaves600Errors(b *testing.B) {
	s := mustParse(b, benchSchema, schema.Options{})
	tree := benchTree(10)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(tree); err == nil {
			b.Fatal("want errors")
		}
	}
}

func BenchmarkApplyDefaults10kLeaves(b *testing.B) {
	s := mustParse(b, benchSchema, schema.Options{})
	tree := benchTree(0)
	for _, svc := range tree["services"].(map[string]any) {
		delete(svc.(map[string]any), "enabled")
	}
	b.ReportAllocs()
	for b.Loop() {
		s.ApplyDefaults(tree)
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := schema.Parse([]byte(benchSchema), "bench.yaml", schema.Options{AdditionalPropertiesFalse: true}); err != nil {
			b.Fatal(err)
		}
	}
}
