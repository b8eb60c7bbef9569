package schema_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/strata-dev/strata/internal/schema"
)

func mustParse(t testing.TB, src string, opts schema.Options) *schema.Schema {
	t.Helper()
	s, err := schema.Parse([]byte(src), "values.yaml", opts)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

func fieldErrors(t *testing.T, err error) []schema.FieldError {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %T is not a *ValidationError: %v", err, err)
	}
	return ve.Errors
}

const appSchema = `
type: object
additionalProperties: false
required: [image]
properties:
  replicas: {type: integer, minimum: 1}
  ratio: {type: number, maximum: 1}
  image:
    type: object
    required: [tag]
    properties:
      tag: {type: string}
  ports:
    type: array
    items: {type: integer, maximum: 65535}
`

func TestValidate(t *testing.T) {
	s := mustParse(t, appSchema, schema.Options{})
	tests := []struct {
		name string
		tree map[string]any
		want []schema.FieldError
	}{
		{"valid", map[string]any{"replicas": int64(3), "image": map[string]any{"tag": "v1"}}, nil},
		{"type", map[string]any{"replicas": "three", "image": map[string]any{"tag": "v1"}}, []schema.FieldError{
			{Path: "replicas", Rule: "type", Message: `must be of type integer, got string "three"`},
		}},
		{"required nested", map[string]any{"image": map[string]any{}}, []schema.FieldError{
			{Path: "image.tag", Rule: "required", Message: "required property is missing"},
		}},
		{"additional", map[string]any{"image": map[string]any{"tag": "v1"}, "extra": true}, []schema.FieldError{
			{Path: "extra", Rule: "additionalProperties", Message: "property is not allowed"},
		}},
		{"int64 bound", map[string]any{"replicas": int64(0), "image": map[string]any{"tag": "v1"}}, []schema.FieldError{
			{Path: "replicas", Rule: "minimum", Message: "must be greater than or equal to 1, got 0"},
		}},
		{"int64 beyond 2^53 is an integer", map[string]any{"replicas": int64(math.MaxInt64), "image": map[string]any{"tag": "v1"}}, nil},
		{"json.Number is an integer", map[string]any{"replicas": json.Number("123456789012345678901234567890"), "image": map[string]any{"tag": "v1"}}, nil},
		{"json.Number below minimum", map[string]any{"replicas": json.Number("-123456789012345678901234567890"), "image": map[string]any{"tag": "v1"}}, []schema.FieldError{
			{Path: "replicas", Rule: "minimum", Message: "must be greater than or equal to 1, got -123456789012345678901234567890"},
		}},
		{"json.Number decimal is a number", map[string]any{"ratio": json.Number("0.5"), "image": map[string]any{"tag": "v1"}}, nil},
		{"json.Number not an integer", map[string]any{"replicas": json.Number("1.5"), "image": map[string]any{"tag": "v1"}}, []schema.FieldError{
			{Path: "replicas", Rule: "type", Message: "must be of type integer, got number 1.5"},
		}},
		{"integral float is an integer", map[string]any{"replicas": 2.0, "image": map[string]any{"tag": "v1"}}, nil},
		{"Go int types", map[string]any{"replicas": 3, "ports": []any{int32(80), uint16(443), uint8(8)}, "image": map[string]any{"tag": "v1"}}, nil},
		{"indices sort by number", map[string]any{"image": map[string]any{"tag": "v1"}, "ports": manyPorts(12)}, []schema.FieldError{
			{Path: "ports[2]", Rule: "maximum", Message: "must be less than or equal to 65535, got 70000"},
			{Path: "ports[10]", Rule: "maximum", Message: "must be less than or equal to 65535, got 70000"},
		}},
		{"NaN", map[string]any{"ratio": math.NaN(), "image": map[string]any{"tag": "v1"}}, []schema.FieldError{
			{Path: "ratio", Rule: "type", Message: "NaN is not a valid JSON number"},
		}},
		{"unsupported Go type", map[string]any{"image": map[string]string{"tag": "v1"}}, []schema.FieldError{
			{Path: "image", Rule: "type", Message: "unsupported value of Go type map[string]string"},
		}},
		{"nil tree is empty", nil, []schema.FieldError{
			{Path: "image", Rule: "required", Message: "required property is missing"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fieldErrors(t, s.Validate(tt.tree))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors differ (-want +got):\n%s", diff)
			}
		})
	}
}

func manyPorts(n int) []any {
	ports := make([]any, n)
	for i := range ports {
		ports[i] = int64(80)
	}
	ports[2], ports[10] = int64(70000), int64(70000)
	return ports
}

func TestValidationErrorText(t *testing.T) {
	s := mustParse(t, appSchema, schema.Options{})
	err := s.Validate(map[string]any{"replicas": "three", "image": map[string]any{}, "extra": 1})
	want := `values do not match schema values.yaml:
  extra: property is not allowed (rule: additionalProperties)
  image.tag: required property is missing (rule: required)
  replicas: must be of type integer, got string "three" (rule: type)`
	if err == nil || err.Error() != want {
		t.Errorf("Error() =\n%v\nwant\n%s", err, want)
	}
	var ve *schema.ValidationError
	if errors.As(err, &ve); ve.Source != "values.yaml" || s.Source() != "values.yaml" {
		t.Errorf("Source = %q, Schema.Source() = %q", ve.Source, s.Source())
	}
}

func TestValidateIsStable(t *testing.T) {
	s := mustParse(t, appSchema, schema.Options{})
	tree := map[string]any{"a": 1, "b": 2, "c": 3, "d": 4, "replicas": "x", "ports": []any{"a", "b", "c"}}
	first := s.Validate(tree).Error()
	for range 20 {
		if got := s.Validate(tree).Error(); got != first {
			t.Fatalf("unstable:\n%s\nvs\n%s", got, first)
		}
	}
}

func TestApplyDefaults(t *testing.T) {
	s := mustParse(t, `
type: object
properties:
  count: {type: integer, default: 3}
  ratio: {type: number, default: 1.0}
  huge: {type: integer, default: 123456789012345678901234567890}
  labels: {type: object, default: {a: b}}
  list: {type: array, default: [1, 2]}
  nested:
    type: object
    properties:
      deep: {type: string, default: x}
`, schema.Options{})
	in := map[string]any{"nested": map[string]any{}}
	before := dump(in)
	out := s.ApplyDefaults(in)
	if dump(in) != before {
		t.Errorf("input was modified:\n%s", dump(in))
	}
	want := map[string]any{
		"count":  int64(3),
		"ratio":  1.0,
		"huge":   json.Number("123456789012345678901234567890"),
		"labels": map[string]any{"a": "b"},
		"list":   []any{int64(1), int64(2)},
		"nested": map[string]any{"deep": "x"},
	}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("defaults differ (-want +got):\n%s", diff)
	}
	// Defaults are copies: changing one result leaves the next untouched.
	out["labels"].(map[string]any)["a"] = "changed"
	out["list"].([]any)[0] = "changed"
	again := s.ApplyDefaults(nil)
	if again["labels"].(map[string]any)["a"] != "b" || again["list"].([]any)[0] != int64(1) {
		t.Errorf("defaults share storage between calls: %v", again)
	}
	// The output shares nothing with the input.
	out["nested"].(map[string]any)["deep"] = "changed"
	if _, ok := in["nested"].(map[string]any)["deep"]; ok {
		t.Error("output shares a map with the input")
	}
}

func TestApplyDefaultsIdempotent(t *testing.T) {
	s := mustParse(t, `
type: object
properties:
  svc:
    type: object
    default: {}
    properties:
      port: {type: integer, default: 80}
      tls: {type: object, default: {enabled: false}, properties: {enabled: {type: boolean}, mode: {type: string, default: strict}}}
`, schema.Options{})
	once := s.ApplyDefaults(nil)
	twice := s.ApplyDefaults(once)
	if diff := cmp.Diff(once, twice); diff != "" {
		t.Errorf("second ApplyDefaults changed the tree:\n%s", diff)
	}
	want := map[string]any{"svc": map[string]any{"port": int64(80), "tls": map[string]any{"enabled": false, "mode": "strict"}}}
	if diff := cmp.Diff(want, once); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseError(t *testing.T) {
	_, err := schema.Parse([]byte("type: object\nproperties:\n  a:\n    typo: 1\n"), "config.yaml", schema.Options{})
	var pe *schema.ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error %T is not a *ParseError: %v", err, err)
	}
	want := schema.ParseError{Source: "config.yaml", Line: 4, Path: "properties.a.typo"}
	if pe.Source != want.Source || pe.Line != want.Line || pe.Path != want.Path {
		t.Errorf("got %+v, want %+v", *pe, want)
	}
	if got := err.Error(); got != `config.yaml:4: properties.a.typo: unknown schema keyword "typo"` {
		t.Errorf("Error() = %s", got)
	}
}

func TestParseAccepts(t *testing.T) {
	tests := map[string]string{
		"all OpenAPI v3 keywords": `
title: t
description: d
type: object
nullable: false
readOnly: false
writeOnly: false
deprecated: false
example: {a: 1}
externalDocs: {url: "https://example.com"}
xml: {name: x}
discriminator: {propertyName: kind}
minProperties: 0
maxProperties: 10
required: [kind]
properties:
  kind: {type: string, enum: [a, b], default: a, format: k8s-short-name}
  n: {type: number, multipleOf: 0.5, minimum: 0, maximum: 10, exclusiveMinimum: true, exclusiveMaximum: false}
  s: {type: string, minLength: 1, maxLength: 3, pattern: "^[a-z]+$"}
  l: {type: array, minItems: 0, maxItems: 3, uniqueItems: true, items: {type: string}}
  c: {allOf: [{type: string}], anyOf: [{type: string}], oneOf: [{type: string}], not: {type: integer}}
  m: {type: object, additionalProperties: {type: string}}
x-custom: {anything: [1, 2]}
X-Upper: 1
`,
		"JSON Schema annotations": `
$schema: "http://json-schema.org/draft-04/schema#"
$id: "https://example.com/values.json"
$comment: c
type: object
examples: [{}]
`,
		"anchors and merge keys": `
type: object
properties:
  a: &port {type: integer, minimum: 1, maximum: 65535}
  b: *port
  c:
    <<: *port
    default: 80
`,
		"$ref at the root": `
$ref: "#/definitions/root"
description: the root
definitions:
  root: {type: object, properties: {a: {type: string}}}
`,
		"unused recursive definition": `
definitions:
  node: {type: object, properties: {next: {$ref: "#/definitions/node"}}}
type: object
`,
	}
	for name, src := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := schema.Parse([]byte(src), "values.yaml", schema.Options{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestMergeKeysKeepExplicitValues(t *testing.T) {
	s := mustParse(t, `
type: object
properties:
  a: &base {type: integer, minimum: 1, default: 5}
  b:
    <<: *base
    minimum: 10
    default: 20
`, schema.Options{})
	got := fieldErrors(t, s.Validate(map[string]any{"a": int64(2), "b": int64(2)}))
	want := []schema.FieldError{{Path: "b", Rule: "minimum", Message: "must be greater than or equal to 10, got 2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestLimits(t *testing.T) {
	var deep strings.Builder
	deep.WriteString("type: object\n")
	for i := range schema.MaxDepth + 1 {
		deep.WriteString(strings.Repeat("  ", 2*i) + "properties:\n")
		deep.WriteString(strings.Repeat("  ", 2*i+1) + "a:\n")
	}
	deep.WriteString(strings.Repeat("  ", 2*schema.MaxDepth+2) + "type: string\n")

	var chain strings.Builder
	chain.WriteString("type: object\nproperties:\n  a: {$ref: '#/definitions/d0'}\ndefinitions:\n")
	for i := range schema.MaxRefDepth + 1 {
		fmt.Fprintf(&chain, "  d%d: {type: object, properties: {n: {$ref: '#/definitions/d%d'}}}\n", i, i+1)
	}
	fmt.Fprintf(&chain, "  d%d: {type: string}\n", schema.MaxRefDepth+1)

	tests := map[string]struct {
		src  string
		want string
	}{
		"size":       {"type: object\n" + strings.Repeat("#", schema.MaxSchemaSize), "larger than the limit"},
		"depth":      {deep.String(), "nested more than"},
		"ref depth":  {chain.String(), "$refs nested more than"},
		"value tags": {"type: object\ndefault: !!binary aGVsbG8=\n", ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := schema.Parse([]byte(tt.src), "big.yaml", schema.Options{})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestResolver(t *testing.T) {
	files := map[string]string{
		"base.yaml":  "type: object\nrequired: [a]\nadditionalProperties: false\nproperties:\n  a: {type: string}\n",
		"loop1.yaml": "x-extend: {schema: loop2.yaml}\n",
		"loop2.yaml": "x-extend: {schema: loop1.yaml}\n",
	}
	resolve := func(name string) ([]byte, string, error) {
		data, ok := files[name]
		if !ok {
			return nil, "", fmt.Errorf("no file %s: %w", name, fs.ErrNotExist)
		}
		return []byte(data), "mem/" + name, nil
	}
	t.Run("merge does not pull additionalProperties", func(t *testing.T) {
		s := mustParse(t, "x-extend: {schema: base.yaml}\ntype: object\n", schema.Options{Resolve: resolve})
		got := fieldErrors(t, s.Validate(map[string]any{"a": "x", "extra": 1}))
		if got != nil {
			t.Errorf("got %v, want no errors: the child leaves additionalProperties unset", got)
		}
		got = fieldErrors(t, s.Validate(map[string]any{}))
		want := []schema.FieldError{{Path: "a", Rule: "required", Message: "required property is missing"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("resolver error is wrapped", func(t *testing.T) {
		_, err := schema.Parse([]byte("x-extend: {schema: none.yaml}\n"), "values.yaml", schema.Options{Resolve: resolve})
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("error %v does not wrap fs.ErrNotExist", err)
		}
	})
	t.Run("cycle", func(t *testing.T) {
		_, err := schema.Parse([]byte("x-extend: {schema: loop1.yaml}\n"), "values.yaml", schema.Options{Resolve: resolve})
		if err == nil || !strings.Contains(err.Error(), "x-extend cycle: mem/loop1.yaml -> mem/loop2.yaml -> mem/loop1.yaml") {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("self", func(t *testing.T) {
		files["self.yaml"] = "x-extend: {schema: self.yaml}\n"
		_, err := schema.Parse([]byte(files["self.yaml"]), "mem/self.yaml", schema.Options{Resolve: resolve})
		if err == nil || !strings.Contains(err.Error(), "x-extend cycle: mem/self.yaml -> mem/self.yaml") {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("no resolver", func(t *testing.T) {
		_, err := schema.Parse([]byte("x-extend: {schema: base.yaml}\n"), "values.yaml", schema.Options{})
		if err == nil || !strings.Contains(err.Error(), "needs a resolver") {
			t.Errorf("error = %v", err)
		}
	})
}

func TestDirResolver(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "openapi")
	write := func(name, data string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("openapi/sub/config.yaml", "type: object\n")
	write("secret.yaml", "type: object\n")
	resolve := schema.DirResolver(dir)

	data, source, err := resolve("sub/config.yaml")
	if err != nil || string(data) != "type: object\n" || source != filepath.Join(dir, "sub", "config.yaml") {
		t.Errorf("resolve(sub/config.yaml) = %q, %q, %v", data, source, err)
	}
	for _, name := range []string{"../secret.yaml", "/etc/passwd", filepath.Join(root, "secret.yaml"), "sub/../../secret.yaml", ""} {
		if _, _, err := resolve(name); err == nil {
			t.Errorf("resolve(%q) succeeded, want refusal", name)
		}
	}
	if runtime.GOOS != "windows" {
		if err := os.Symlink(filepath.Join(root, "secret.yaml"), filepath.Join(dir, "link.yaml")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := resolve("link.yaml"); err == nil {
			t.Error("resolve(link.yaml) followed a symlink out of the directory")
		}
	}
}

func TestValidateForHelmWithoutExtension(t *testing.T) {
	s := mustParse(t, appSchema, schema.Options{})
	tree := map[string]any{"replicas": "x"}
	if a, b := s.Validate(tree).Error(), s.ValidateForHelm(tree).Error(); a != b {
		t.Errorf("Validate and ValidateForHelm differ without x-required-for-helm:\n%s\n%s", a, b)
	}
}

func TestConcurrentUse(t *testing.T) {
	s := mustParse(t, `
type: object
properties:
  a: {type: string, pattern: "^[a-z]+$", default: x}
  b: {type: object, properties: {c: {type: integer, default: 1}}}
`, schema.Options{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				tree := map[string]any{"a": fmt.Sprint(i), "b": map[string]any{}}
				if err := s.Validate(tree); err == nil {
					t.Error("want a pattern error")
				}
				out := s.ApplyDefaults(tree)
				if out["b"].(map[string]any)["c"] != int64(1) {
					t.Error("default missing")
				}
			}
		})
	}
	wg.Wait()
}

func TestValidateFormats(t *testing.T) {
	s := mustParse(t, `
type: object
properties:
  mail: {type: string, format: email}
  small: {type: integer, format: int32}
  day: {format: date}
  flag: {type: boolean, format: ignored}
`, schema.Options{})
	got := fieldErrors(t, s.Validate(map[string]any{
		"mail":  int64(5),
		"small": true,
		"day":   map[string]any{},
		"flag":  "yes",
	}))
	want := []schema.FieldError{
		{Path: "day", Rule: "type", Message: "must be of type string (format date), got object"},
		{Path: "flag", Rule: "type", Message: `must be of type boolean, got string "yes"`},
		{Path: "mail", Rule: "type", Message: "must be of type string (format email), got integer 5"},
		{Path: "small", Rule: "type", Message: "must be of type integer (format int32), got boolean true"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseRejects(t *testing.T) {
	tests := map[string]string{
		"type: object\nexclusiveMaximum: 5\n":                        "exclusiveMaximum: must be a boolean",
		"type: number\nmultipleOf: 0\n":                              "multipleOf: must be a number greater than 0",
		"type: number\nmaximum: ten\n":                               "maximum: must be a number",
		"type: object\nrequired: a\n":                                "required: must be a list of strings",
		"type: string\nenum: []\n":                                   "enum: must be a non-empty list",
		"type: string\nformat: 1\n":                                  "format: must be a string",
		"type: string\npattern: [a]\n":                               "pattern: must be a string",
		"type: []\n":                                                 "type: must be a type name or a list of type names",
		"type: object\ndiscriminator: kind\n":                        "discriminator: must be a mapping",
		"type: object\nproperties: [a]\n":                            "properties: must be a mapping of names to schemas, not a list",
		"type: object\nproperties: {a: 1}\n":                         "properties.a: a schema must be a mapping, not a scalar (int)",
		"allOf: []\n":                                                "allOf: must be a non-empty list of schemas",
		"type: object\npatternProperties: {'(': {}}\n":               "patternProperties.(: invalid pattern",
		"x-extend: {schema: a.yaml, other: 1}\n":                     `x-extend: unknown key "other"`,
		"x-extend: a.yaml\n":                                         "x-extend: must be a mapping with the key schema",
		"x-extend: {schema: ''}\n":                                   "x-extend: schema must be a non-empty file name",
		"x-required-for-helm: 1\n":                                   "x-required-for-helm: must be a string or a list of strings",
		"x-kubernetes-preserve-unknown-fields: yes please\n":         "must be a boolean",
		"type: object\n<<: 1\n":                                      "a merge key (<<) must refer to a map or a list of maps",
		"type: object\n? [a]\n: 1\n":                                 "a map key must be a plain value",
		"type: object\ndefault: {a: 1, a: 2}\n":                      `values.yaml:2: duplicate key "a"`,
		"type: object\nproperties:\n  a: {$ref: '#/definitions/'}\n": `no definition ""`,
	}
	for src, want := range tests {
		t.Run(want, func(t *testing.T) {
			_, err := schema.Parse([]byte(src), "values.yaml", schema.Options{})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("Parse(%q) error = %v, want one containing %q", src, err, want)
			}
		})
	}
}
