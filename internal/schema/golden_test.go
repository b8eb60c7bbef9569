package schema_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-dev/strata/internal/golden"
	"github.com/strata-dev/strata/internal/schema"
)

// TestGolden runs every testdata/*.txtar case. A case holds:
//
//	-- schema.yaml --   the schema (required)
//	-- input.yaml --    the value tree (default: empty)
//	-- options --       option names, one a line: additionalPropertiesFalse
//	-- files/<name> --  files x-extend can name; the resolver is DirResolver($DIR/files)
//	-- <other> --       any other file, written to $DIR/<other>
//	-- want --          the output: parse, validate, validate-for-helm, defaults
//
// Run with -update to rewrite want.
func TestGolden(t *testing.T) {
	golden.Run(t, "testdata/*.txtar", func(t *testing.T, c golden.Case) {
		golden.Check(t, c.Path, "want", runGolden(t, c))
	})
}

// runGolden parses, validates and defaults one case and describes it.
func runGolden(t *testing.T, c golden.Case) string {
	t.Helper()
	dir := t.TempDir()
	c.WriteFiles(t, dir, "schema.yaml", "input.yaml", "options", "want")
	opts := schema.Options{Resolve: schema.DirResolver(filepath.Join(dir, "files"))}
	optText, _ := c.Section("options")
	for _, o := range strings.Fields(optText) {
		switch o {
		case "additionalPropertiesFalse":
			opts.AdditionalPropertiesFalse = true
		default:
			t.Fatalf("unknown option %q", o)
		}
	}
	src, ok := c.Section("schema.yaml")
	if !ok {
		t.Fatal("no schema.yaml section")
	}
	clean := func(s string) string { return strings.ReplaceAll(s, dir+string(filepath.Separator), "$DIR/") }

	var out strings.Builder
	s, err := schema.Parse([]byte(src), "schema.yaml", opts)
	if err != nil {
		var pe *schema.ParseError
		if !errors.As(err, &pe) {
			t.Errorf("Parse error is %T, want *schema.ParseError", err)
		}
		out.WriteString("parse error: " + clean(err.Error()) + "\n")
		return out.String()
	}
	input, _ := c.Section("input.yaml")
	tree, err := yamlTree(input)
	if err != nil {
		t.Fatalf("input.yaml: %v", err)
	}
	out.WriteString("validate:\n" + describeResult(t, s.Validate(tree)))
	out.WriteString("validate-for-helm:\n" + describeResult(t, s.ValidateForHelm(tree)))
	out.WriteString("defaults:\n" + indent(dump(s.ApplyDefaults(tree))))
	return out.String()
}

func describeResult(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return "  ok\n"
	}
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("validation error is %T, want *schema.ValidationError", err)
	}
	var b strings.Builder
	for _, fe := range ve.Errors {
		b.WriteString("  " + fe.String() + "\n")
	}
	return b.String()
}

func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if line != "" {
			b.WriteString("  " + line)
		}
	}
	return b.String()
}
