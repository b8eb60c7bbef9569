package schema_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/schema"
	"github.com/strata-dev/strata/internal/values"
	"golang.org/x/tools/txtar"
)

var diffCases = []string{
	"null\n", "~\n", "---\n", "a: 1\n---\n", "---\n---\ntype: object\n", "type: object\n---\n# c\n",
	"type: object\n...\n", "", "   \n", "[]\n", "1\n", "\"x\"\n",
	"type: object\nproperties:\n  a:\n    type: string\n    typo:\n      x: 1\n",
	"type: object\nproperties:\n  a:\n    type: integer\n    maximum:\n      .nan\n",
	"type: object\ndefault: [1, .inf, 2]\n",
	"type: object\ndefault: {a: -.Inf}\n",
	"type: object\nx-foo: .NaN\n",
	"type: object\nminLength: !!float 5\n",
	"type: object\ndefault: !!float 123456789012345678901234567890\n",
	"type: object\ndefault: 0x1F\n",
	"type: object\ndefault: [<<]\n",
	"type: object\nproperties:\n  a: !custom {type: string}\n",
	"type: object\nproperties:\n  a: !custom x\n",
	"type: object\nproperties: {a: {type: string, default: !!binary aGVsbG8=}}\n",
	"type: object\nproperties: {a: {type: string, default: !!timestamp 2001-12-14}}\n",
	"type: object\ndefault: {!custom a: 1}\n",
	"base: &b {type: string}\n",
	"definitions:\n  b: &b {type: string, minLength: 1}\nproperties:\n  c:\n    <<: *b\n    typo: 1\n",
	"definitions:\n  b: &b {type: string, typo: 1}\nproperties:\n  c:\n    <<: *b\n",
	"properties:\n  c:\n    <<: [{type: string}, {type: integer, format: x}]\n    description: d\n",
	"properties:\n  c:\n    <<: [1]\n",
	"properties:\n  c:\n    type: object\n    properties:\n      d:\n        type: integer\n        format: int32\n        maximum: 1e12\n",
	"properties:\n  c:\n    type: object\n    properties:\n      d:\n        type: object\n        default: {x: 1}\n        properties:\n          x: {type: string}\n",
	"properties:\n  c:\n    $ref: '#/definitions/nope'\n",
	"definitions:\n  a:\n    $ref: '#/definitions/b'\n  b:\n    $ref: '#/definitions/a'\nproperties:\n  c:\n    $ref: '#/definitions/a'\n",
	"type: object\nkey: \xff\n",
	"type: object\nproperties:\n  a: {type: string}\n  b: *nope\n",
	"type: object\nproperties:\n  a: {type: string}\n  b: [1, 2\n",
	"type: object\nrequired: [a, a]\nproperties:\n  ? a\n  : {type: string}\n",
	"type: object\nproperties:\n  a: {type: string}\n  a: {type: string}\n",
	"type: object\nproperties:\n  a: {type: string}\ndefault:\n  x: 1\n  y: [1, 2, {z: 1, z: 2}]\n",
	"properties:\n  a:\n    items:\n      - type: string\n",
	"properties:\n  a: {additionalProperties: true}\n  b: {additionalProperties: {type: string}}\n  c: {additionalProperties: 1}\n",
	"allOf: {}\n", "allOf:\n- 1\n", "not: []\n", "patternProperties: {'[': {}}\n",
	"{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"strin\"}}}",
	"{\"type\": \"object\",\n \"properties\": {\"a\": {\"type\": \"string\"}},\n \"required\": \"a\"}",
	"x-extend: {schema: a.yaml}\nproperties:\n  a: {type: string}\n",
	"type: object\ndescription: |\n  multi\n  line\nfoo: 1\n",
	"type: object\nproperties:\n  a: {type: string}\n  zz: {type: string, typo: 1}\n  b: {type: string, typo2: 1}\n",
	"type: object\ndefault: 1e400\n",
	"type: object\ndefault: !!int 99999999999999999999999\n",
	"type: object\ndefault: -99999999999999999999999\n",
	"type: object\ndefault: +0x7fffffffffffffffffff\n",
	"type: object\ndefault: 1_000\n",
	"type: object\ndefault: !!float 1_000\n",
	"type: object\ndefault: !!bool yes\n",
	"%TAG !e! tag:example.com,2000:\n---\ntype: object\ndefault: !e!foo x\n",
	"type: object\ndefault: !<tag:yaml.org,2002:str> x\n",
	"type: object\ndefault: !!str 1\n",
	"type: object\nmaxLength: !!str 1\n",
	"type: object\nproperties:\n  a: &x\n    type: string\n  b: *x\n  c:\n    type: object\n    properties:\n      d: *x\n      e: {type: integer, maximum: 1e30, format: int64}\n",
	"type: object\nproperties:\n  b:\n    allOf:\n      - type: string\n      - type: integer\n        format: int32\n        minimum: -1e10\n",
}

func deepSchema(n int, kw string) string {
	var b strings.Builder
	b.WriteString("type: object\n")
	for i := range n {
		switch kw {
		case "properties":
			b.WriteString(strings.Repeat("  ", 2*i) + "properties:\n")
			b.WriteString(strings.Repeat("  ", 2*i+1) + "a:\n")
		}
	}
	b.WriteString(strings.Repeat("  ", 2*n) + "type: string\n")
	return b.String()
}

func deepNot(n int, leaf string) string {
	return strings.Repeat("{not: ", n) + leaf + strings.Repeat("}", n) + "\n"
}

func deepValue(n int, leaf string) string {
	return "type: object\ndefault: " + strings.Repeat("[", n) + leaf + strings.Repeat("]", n) + "\n"
}

func deepMap(n int) string {
	return "type: object\ndefault: " + strings.Repeat("{a: ", n) + "1" + strings.Repeat("}", n) + "\n"
}

func TestZZDiff(t *testing.T) {
	cases := append([]string{}, diffCases...)
	for n := 60; n <= 70; n++ {
		cases = append(cases, deepSchema(n, "properties"), deepNot(n, "{}"), deepNot(n, "{type: string}"), deepValue(n, "1"), deepValue(n, ""), deepMap(n))
		cases = append(cases, "type: object\nproperties:\n  x:\n    items:\n"+strings.Repeat("  ", 3)+strings.Repeat("{items: ", n)+"{}"+strings.Repeat("}", n)+"\n")
	}
	paths, _ := filepath.Glob("testdata/*.txtar")
	for _, p := range paths {
		ar, _ := txtar.ParseFile(p)
		for _, f := range ar.Files {
			if f.Name == "schema.yaml" || strings.HasPrefix(f.Name, "files/") {
				cases = append(cases, string(f.Data))
			}
		}
	}
	var out strings.Builder
	for i, c := range cases {
		_, err := schema.Parse([]byte(c), "s.yaml", schema.Options{Resolve: func(string) ([]byte, string, error) { return nil, "", errors.New("nores") }})
		q := fmt.Sprintf("%q", c)
		if len(q) > 100 {
			q = q[:100]
		}
		fmt.Fprintf(&out, "== %d %s\n", i, q)
		if err != nil {
			var pe *schema.ParseError
			errors.As(err, &pe)
			fmt.Fprintf(&out, "   %v [line=%d path=%q syntax=%v dup=%v large=%v deep=%v]\n", err, pe.Line, pe.Path, errors.Is(err, values.ErrSyntax), errors.Is(err, values.ErrDuplicateKey), errors.Is(err, values.ErrTooLarge), errors.Is(err, values.ErrTooDeep))
		} else {
			out.WriteString("   ok\n")
		}
	}
	os.WriteFile(os.Getenv("ZZOUT"), []byte(out.String()), 0o644)
}
