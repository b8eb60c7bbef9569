package schema_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/schema"
)

// addonOptions are the options addon-operator's schemas are read with:
// additionalProperties false wherever unset, x-extend resolved from the
// files given, defaults not checked against their schemas.
func addonOptions(files map[string]string) schema.Options {
	return schema.Options{AdditionalPropertiesFalse: true, UncheckedDefaults: true, AddonDefaults: true, Resolve: func(name string) ([]byte, string, error) {
		s, ok := files[name]
		if !ok {
			return nil, "", fmt.Errorf("no file %q", name)
		}
		return []byte(s), name, nil
	}}
}

func parseAddon(t *testing.T, src, source string, files map[string]string) *schema.Schema {
	t.Helper()
	s, err := schema.Parse([]byte(src), source, addonOptions(files))
	if err != nil {
		t.Fatalf("parse %s: %v", source, err)
	}
	return s
}

func mustTree(t *testing.T, src string) map[string]any {
	t.Helper()
	m, err := yamlTree(src)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestValidateParityAddonOperator runs the validation cases of
// addon-operator's pkg/values/validation tests on inputs of our own.
func TestValidateParityAddonOperator(t *testing.T) {
	tests := []struct {
		name    string
		schema  string
		values  string
		wantErr []string // substrings; nil: valid
		count   int      // the number of field errors, when wantErr is set and count > 0
	}{
		{name: "required, enum, minProperties hold", schema: `
type: object
required: [a]
minProperties: 2
properties:
  a: {type: string, enum: [x]}
  b: {type: string}
`, values: "a: x\nb: y\n"},
		{name: "a property with a default given as an empty object", schema: `
type: object
required: [a]
properties:
  a: {type: string}
  o:
    type: object
    default: {k: v}
    properties:
      p: {type: string}
`, values: "a: x\no: {}\n"},
		{name: "forbidden properties deep in objects and lists of lists", schema: `
type: object
properties:
  s: {type: string}
  obj:
    type: object
    properties:
      inner:
        type: object
        properties:
          x: {type: string}
      list: {type: array, items: {type: string}}
  grid:
    type: array
    items:
      type: array
      items:
        type: object
        properties:
          u: {type: string}
`, values: `
s: v
obj:
  inner: {x: a, stray: b}
  list: [a, b]
grid:
- [{u: a}]
- [{u: b, extra: c}, {u: d}]
strayTop: [1]
`, wantErr: []string{"obj.inner.stray", "grid[1][0].extra", "strayTop", "additionalProperties"}, count: 3},
		// addon-operator's AdditionalPropertiesTransformer reaches only
		// properties that leave additionalProperties unset, and items.
		{name: "objects of a map are left open", schema: `
type: object
properties:
  byName:
    type: object
    additionalProperties:
      type: object
      properties:
        port: {type: integer}
  byPattern:
    type: object
    patternProperties:
      '^x-':
        type: object
        properties:
          port: {type: integer}
`, values: "byName: {web: {port: 1, host: h}}\nbyPattern: {x-a: {port: 2, host: h}}\n"},
		{name: "below an explicit additionalProperties is left open", schema: `
type: object
properties:
  open:
    type: object
    additionalProperties: true
    properties:
      inner:
        type: object
        properties:
          a: {type: string}
`, values: "open: {inner: {a: x, b: y}, other: 1}\n"},
		{name: "below items is closed", schema: `
type: object
properties:
  list:
    type: array
    items:
      type: object
      properties:
        inner:
          type: object
          properties:
            a: {type: string}
`, values: "list: [{inner: {a: x, b: y}}]\n", wantErr: []string{"list[0].inner.b"}, count: 1},
		{name: "multipleOf a decimal fraction on a whole number", schema: `
type: object
properties:
  rate: {type: number, minimum: 0.01, maximum: 100.0, multipleOf: 0.01}
`, values: "rate: 100\n"},
		{name: "multipleOf a decimal fraction on a decimal", schema: `
type: object
properties:
  rate: {type: number, multipleOf: 0.01}
`, values: "rate: 56.11\n"},
		{name: "multipleOf broken", schema: `
type: object
properties:
  rate: {type: number, multipleOf: 0.01}
`, values: "rate: 56.105\n", wantErr: []string{"rate", "multipleOf"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := parseAddon(t, tt.schema, "config-values.yaml", nil)
			err := s.Validate(mustTree(t, tt.values))
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q:\n%v", w, err)
				}
			}
			if ve, ok := err.(*schema.ValidationError); tt.count > 0 && (!ok || len(ve.Errors) != tt.count) {
				t.Errorf("want %d field errors, got:\n%v", tt.count, err)
			}
		})
	}
}

// TestUncheckedDefaultsParityAddonOperator: addon-operator loads a schema
// whose default breaks the schema; values that set the key validate, and
// the default fails the values it is applied to. Without the option the
// schema is refused when read.
func TestUncheckedDefaultsParityAddonOperator(t *testing.T) {
	src := `
type: object
properties:
  o:
    type: object
    default: {k: v}
    properties:
      p: {type: string}
`
	if _, err := schema.Parse([]byte(src), "config-values.yaml", schema.Options{AdditionalPropertiesFalse: true}); err == nil ||
		!strings.Contains(err.Error(), "properties.o.default") {
		t.Errorf("checked parse: %v, want the default refused", err)
	}
	s := parseAddon(t, src, "config-values.yaml", nil)
	if err := s.Validate(mustTree(t, "o: {p: x}\n")); err != nil {
		t.Errorf("values setting o: %v", err)
	}
	err := s.Validate(s.ApplyDefaults(mustTree(t, "{}")))
	if err == nil || !strings.Contains(err.Error(), "o.k") {
		t.Errorf("values given the default: %v, want o.k refused", err)
	}
}

// TestDefaultsParityAddonOperator: defaults go into absent keys, and a
// default that is an object gets the defaults of its own properties.
func TestDefaultsParityAddonOperator(t *testing.T) {
	s := parseAddon(t, `
type: object
required: [a]
properties:
  a: {type: string}
  str: {type: string, default: d1}
  obj:
    type: object
    default: {inner: {k: v}}
    additionalProperties: true
  deep:
    type: object
    default: {}
    properties:
      p: {type: string, default: pd}
  deeper:
    type: object
    default: {level: {}}
    properties:
      level:
        type: object
        properties:
          p: {type: string, default: ld}
  whole:
    type: object
    default: {level: {p: given}}
    properties:
      level:
        type: object
        properties:
          p: {type: string}
  list: {type: array, default: [z]}
  listGiven: {type: array, default: [], items: {type: string}}
`, "config-values.yaml", nil)
	got := s.ApplyDefaults(mustTree(t, "a: x\nlistGiven: [kept]\n"))
	want := mustTree(t, `
a: x
str: d1
obj: {inner: {k: v}}
deep: {p: pd}
deeper: {level: {p: ld}}
whole: {level: {p: given}}
list: [z]
listGiven: [kept]
`)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("defaults (-want +got):\n%s", d)
	}
}

// TestExtendRequiredForHelmParityAddonOperator: x-extend pulls the config
// schema into values.yaml's, and x-required-for-helm (at the top and
// nested) is checked only for Helm.
func TestExtendRequiredForHelmParityAddonOperator(t *testing.T) {
	files := map[string]string{"config-values.yaml": `
type: object
required: [c1]
properties:
  c1: {type: string, enum: [v]}
  c2: {type: string}
`}
	t.Run("x-extend", func(t *testing.T) {
		s := parseAddon(t, `
x-extend: {schema: config-values.yaml}
type: object
required: [own]
properties:
  own: {type: string, enum: [v]}
`, "values.yaml", files)
		if err := s.Validate(mustTree(t, "c1: v\nc2: w\n")); err == nil || !strings.Contains(err.Error(), "own") {
			t.Errorf("values without own: %v, want own required", err)
		}
		if err := s.Validate(mustTree(t, "c1: v\nown: v\n")); err != nil {
			t.Errorf("valid values: %v", err)
		}
		if err := s.Validate(mustTree(t, "own: v\n")); err == nil || !strings.Contains(err.Error(), "c1") {
			t.Errorf("values without c1: %v, want the config schema's required c1", err)
		}
	})
	t.Run("x-required-for-helm", func(t *testing.T) {
		s := parseAddon(t, `
x-extend: {schema: config-values.yaml}
x-required-for-helm: [internal]
type: object
properties:
  internal:
    type: object
    required: [r1]
    x-required-for-helm: [r2, r3]
    properties:
      r1: {type: string}
      r2: {type: string}
      r3: {type: string}
`, "values.yaml", files)
		for _, tc := range []struct {
			values  string
			helmErr string
		}{
			{"c1: v\ninternal: {r1: a, r2: b}\n", "internal.r3"},
			{"c1: v\ninternal: {r1: a, r3: b}\n", "internal.r2"},
			{"c1: v\n", "internal"},
			{"c1: v\ninternal: {r1: a, r2: b, r3: c}\n", ""},
		} {
			tree := mustTree(t, tc.values)
			if err := s.Validate(tree); err != nil {
				t.Errorf("%q: Validate: %v", tc.values, err)
			}
			err := s.ValidateForHelm(tree)
			switch {
			case tc.helmErr == "" && err != nil:
				t.Errorf("%q: ValidateForHelm: %v", tc.values, err)
			case tc.helmErr != "" && (err == nil || !strings.Contains(err.Error(), tc.helmErr)):
				t.Errorf("%q: ValidateForHelm: %v, want an error naming %s", tc.values, err, tc.helmErr)
			}
		}
	})
}

// TestMergeKeysInSchemaParityAddonOperator: YAML anchors and merge keys
// in a schema work, a merged map gaining keys of its own.
func TestMergeKeysInSchemaParityAddonOperator(t *testing.T) {
	s := parseAddon(t, `
type: object
properties:
  first:
    type: object
    properties: &shared
      n: {type: string}
      v: {type: number}
  second:
    type: object
    properties: *shared
  many:
    type: array
    items:
      type: object
      properties:
        <<: *shared
        note: {type: string}
`, "config-values.yaml", nil)
	if err := s.Validate(mustTree(t, "first: {n: a, v: 1}\nsecond: {v: 2}\nmany: [{n: b, v: 3, note: c}]\n")); err != nil {
		t.Errorf("valid values: %v", err)
	}
	err := s.Validate(mustTree(t, "many: [{v: x, other: 1}]\n"))
	if err == nil || !strings.Contains(err.Error(), "many[0].v") || !strings.Contains(err.Error(), "many[0].other") {
		t.Errorf("invalid values: %v, want many[0].v and many[0].other", err)
	}
}

// TestAddonDefaultsReach: addon-operator's ApplyDefaults follows properties
// and items only, and fills absent keys only; Kubernetes' defaulting (the
// default without AddonDefaults) also fills the values of maps and nulls.
func TestAddonDefaultsReach(t *testing.T) {
	src := `
type: object
properties:
  pools:
    type: object
    additionalProperties:
      type: object
      properties:
        size: {type: integer, default: 3}
  byPattern:
    type: object
    patternProperties:
      '^p-':
        type: object
        properties:
          size: {type: integer, default: 4}
  list:
    type: array
    items:
      type: object
      properties:
        size: {type: integer, default: 5}
  name: {type: string, default: n}
`
	in := "pools: {a: {}}\nbyPattern: {p-a: {}}\nlist: [{}]\nname: null\n"
	addon := parseAddon(t, src, "values.yaml", nil)
	want := mustTree(t, "pools: {a: {}}\nbyPattern: {p-a: {}}\nlist: [{size: 5}]\nname: null\n")
	if d := cmp.Diff(want, addon.ApplyDefaults(mustTree(t, in))); d != "" {
		t.Errorf("addon-operator's defaulting (-want +got):\n%s", d)
	}
	crd, err := schema.Parse([]byte(src), "values.yaml", schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want = mustTree(t, "pools: {a: {size: 3}}\nbyPattern: {p-a: {size: 4}}\nlist: [{size: 5}]\nname: n\n")
	if d := cmp.Diff(want, crd.ApplyDefaults(mustTree(t, in))); d != "" {
		t.Errorf("CRD defaulting (-want +got):\n%s", d)
	}
}
