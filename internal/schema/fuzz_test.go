package schema_test

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/strata-dev/strata/internal/golden"
	"github.com/strata-dev/strata/internal/schema"
)

// goldenSeeds returns the schema and input of every golden case; the
// slow size-limit cases only if withBombs.
func goldenSeeds(f *testing.F, withBombs bool) [][2]string {
	var seeds [][2]string
	for _, c := range golden.Cases(f, "testdata/*.txtar") {
		if !withBombs && strings.Contains(c.Name, "bomb") {
			continue
		}
		src, _ := c.Section("schema.yaml")
		in, _ := c.Section("input.yaml")
		seeds = append(seeds, [2]string{src, in})
	}
	return append(seeds, [2]string{appSchema, "replicas: three\nimage: {}\nextra: 1\n"})
}

// fuzzResolver serves a fixed parent, the fuzzed schema itself (for
// cycles), and nothing else.
func fuzzResolver(self []byte) schema.Resolver {
	return func(name string) ([]byte, string, error) {
		switch name {
		case "config-values.yaml":
			return []byte("type: object\nrequired: [a]\nproperties:\n  a: {type: string, default: x}\n"), name, nil
		case "self.yaml":
			return self, "fuzz.yaml", nil
		}
		return nil, "", fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
}

var fuzzTrees = []string{
	"",
	"a: 1\nb: [1, 2.5, x, null, true]\nc: {d: {e: f}}\n",
	"replicas: 123456789012345678901234567890\nimage: {tag: v1}\nx.y: [{}, null]\n",
	"a: .nan\nb: -.inf\nc: ~\n",
}

func FuzzParse(f *testing.F) {
	for _, s := range goldenSeeds(f, true) {
		f.Add([]byte(s[0]), false)
	}
	for _, s := range goldenSeeds(f, false) {
		f.Add([]byte(s[0]), true)
	}
	f.Add([]byte("x-extend: {schema: self.yaml}\n"), false)
	f.Add([]byte("properties: {a: {$ref: 'self.yaml#/properties/b'}, b: {type: string}}\n"), false)
	f.Add([]byte("x: [{type: object, properties: {a: {$ref: '#/x/0'}}}]\nproperties: {b: {$ref: 'self.yaml#/x/0'}}\n"), true)
	f.Add([]byte("x-extend: {schema: config-values.yaml}\nproperties: {b: {default: 1}}\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, closed bool) {
		s, err := schema.Parse(data, "fuzz.yaml", schema.Options{AdditionalPropertiesFalse: closed, Resolve: fuzzResolver(data)})
		if err != nil {
			var pe *schema.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error %T is not a *ParseError: %v", err, err)
			}
			if pe.Source == "" || pe.Err == nil || err.Error() == "" {
				t.Fatalf("incomplete ParseError %+v", pe)
			}
			return
		}
		for _, src := range fuzzTrees {
			tree, err := yamlTree(src)
			if err != nil {
				t.Fatal(err)
			}
			exercise(t, s, tree)
		}
	})
}

func FuzzValidateDefaults(f *testing.F) {
	for _, s := range goldenSeeds(f, false) {
		f.Add(s[0], s[1], false)
		for _, tree := range fuzzTrees {
			f.Add(s[0], tree, true)
		}
	}
	f.Fuzz(func(t *testing.T, schemaSrc, treeSrc string, closed bool) {
		s, err := schema.Parse([]byte(schemaSrc), "fuzz.yaml", schema.Options{AdditionalPropertiesFalse: closed, Resolve: fuzzResolver([]byte(schemaSrc))})
		if err != nil {
			return
		}
		tree, err := yamlTree(treeSrc)
		if err != nil {
			return
		}
		exercise(t, s, tree)
	})
}

// exercise validates and defaults tree and checks the invariants: errors
// are well formed, sorted, unique and stable; defaulting leaves its input
// alone and is idempotent.
func exercise(t *testing.T, s *schema.Schema, tree map[string]any) {
	t.Helper()
	before := dump(tree)
	for _, validate := range []func(map[string]any) error{s.Validate, s.ValidateForHelm} {
		err := validate(tree)
		checkValidationError(t, err)
		if again := validate(tree); fmt.Sprint(again) != fmt.Sprint(err) {
			t.Fatalf("validation is not stable:\n%v\n%v", err, again)
		}
	}
	out := s.ApplyDefaults(tree)
	if dump(tree) != before {
		t.Fatalf("ApplyDefaults modified its input:\n%s\nwas\n%s", dump(tree), before)
	}
	if diff := cmp.Diff(out, s.ApplyDefaults(out), cmpopts.EquateNaNs()); diff != "" {
		t.Fatalf("ApplyDefaults is not idempotent:\n%s", diff)
	}
	checkValidationError(t, s.Validate(out))
}

func checkValidationError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %T is not a *ValidationError: %v", err, err)
	}
	if len(ve.Errors) == 0 {
		t.Fatal("ValidationError without errors")
	}
	for i, fe := range ve.Errors {
		if fe.Rule == "" || fe.Message == "" {
			t.Fatalf("incomplete FieldError %+v", fe)
		}
		if fe.Rule == "schema" {
			t.Fatalf("kube-openapi error left unshaped: %+v", fe)
		}
		if i > 0 && ve.Errors[i-1] == fe {
			t.Fatalf("duplicate error %v", fe)
		}
	}
	sorted := slices.IsSortedFunc(ve.Errors, func(a, b schema.FieldError) int {
		if a.Path == b.Path {
			return strings.Compare(a.Rule, b.Rule)
		}
		return 0 // paths order by steps, checked by TestValidate
	})
	if !sorted {
		t.Fatalf("errors at one path are not sorted by rule: %v", ve.Errors)
	}
}
