package schema_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/strata-dev/strata/internal/schema/zzold"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the want section of testdata/*.txtar")

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
	paths, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := runGolden(t, ar)
			want, hasWant := section(ar, "want")
			if *update {
				setSection(ar, "want", got)
				if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !hasWant {
				t.Fatalf("no want section; run with -update")
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("output differs (-want +got):\n%s", diff)
			}
		})
	}
}

func section(ar *txtar.Archive, name string) (string, bool) {
	for _, f := range ar.Files {
		if f.Name == name {
			return string(f.Data), true
		}
	}
	return "", false
}

func setSection(ar *txtar.Archive, name, data string) {
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			ar.Files[i].Data = []byte(data)
			return
		}
	}
	ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(data)})
}

// runGolden parses, validates and defaults one case and describes it.
func runGolden(t *testing.T, ar *txtar.Archive) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range ar.Files {
		switch f.Name {
		case "schema.yaml", "input.yaml", "options", "want":
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := schema.Options{Resolve: schema.DirResolver(filepath.Join(dir, "files"))}
	optText, _ := section(ar, "options")
	for _, o := range strings.Fields(optText) {
		switch o {
		case "additionalPropertiesFalse":
			opts.AdditionalPropertiesFalse = true
		default:
			t.Fatalf("unknown option %q", o)
		}
	}
	src, ok := section(ar, "schema.yaml")
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
	input, _ := section(ar, "input.yaml")
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
