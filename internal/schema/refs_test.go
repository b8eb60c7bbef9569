package schema_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/strata-dev/strata/internal/schema"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// parseIn parses root/name with a DirResolver on root, as the operator reads
// a module's openapi/ files with the module directory as the root.
func parseIn(t *testing.T, root, name string) (*schema.Schema, error) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return schema.Parse(data, filepath.Join(root, name), schema.Options{
		Resolve: schema.DirResolver(root), Path: name, AdditionalPropertiesFalse: true,
	})
}

// TestRefsBetweenModuleFiles: config-values.yaml, values.yaml (extending
// it) and shared definitions refer to each other by paths relative to the
// file holding the $ref, inside the module.
func TestRefsBetweenModuleFiles(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"openapi/config-values.yaml": "type: object\nproperties:\n  replicas: {$ref: 'shared/types.yaml#/definitions/replicas'}\n",
		"openapi/values.yaml": "x-extend: {schema: config-values.yaml}\ntype: object\nproperties:\n" +
			"  internal: {$ref: 'shared/internal.yaml'}\n  mode: {$ref: 'config-values.yaml#/properties/replicas'}\n",
		"openapi/shared/types.yaml":    "definitions:\n  replicas: {type: integer, minimum: 1}\n",
		"openapi/shared/internal.yaml": "type: object\nproperties:\n  token: {$ref: 'types.yaml#/definitions/replicas'}\n",
	})
	s, err := parseIn(t, root, "openapi/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := fieldErrors(t, s.Validate(map[string]any{
		"replicas": int64(0), "mode": int64(0), "internal": map[string]any{"token": "x", "extra": true},
	}))
	var paths []string
	for _, fe := range got {
		paths = append(paths, fe.Path+" "+fe.Rule)
	}
	want := []string{"internal.extra additionalProperties", "internal.token type", "mode minimum", "replicas minimum"}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("Validate errors (-want +got):\n%s", diff)
	}
}

// TestRefsRebasedThroughExtend: properties pulled by x-extend from a file in
// another directory keep their $refs pointing where that file meant.
func TestRefsRebasedThroughExtend(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"openapi/values.yaml":      "x-extend: {schema: base/parent.yaml}\ntype: object\n",
		"openapi/base/parent.yaml": "type: object\nproperties:\n  port: {$ref: 'types.yaml#/port'}\n",
		"openapi/base/types.yaml":  "port: {type: integer, maximum: 10}\n",
	})
	s, err := parseIn(t, root, "openapi/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := fieldErrors(t, s.Validate(map[string]any{"port": int64(11)}))
	if len(got) != 1 || got[0].Path != "port" || got[0].Rule != "maximum" {
		t.Errorf("Validate = %v, want port's maximum broken", got)
	}
}

func TestRefsRefused(t *testing.T) {
	root := t.TempDir()
	mod := filepath.Join(root, "module")
	writeFiles(t, root, map[string]string{
		"secret.yaml":              "type: string\n",
		"module/openapi/back.yaml": "type: object\nproperties: {b: {$ref: 'values.yaml#/properties/a'}}\n",
	})
	if err := os.Symlink(filepath.Join(root, "secret.yaml"), filepath.Join(mod, "openapi", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	many := "type: object\nproperties:\n"
	files := map[string]string{}
	for i := range schema.MaxRefFiles + 1 {
		many += fmt.Sprintf("  p%d: {$ref: 'many/f%d.yaml'}\n", i, i)
		files[fmt.Sprintf("module/openapi/many/f%d.yaml", i)] = "type: string\n"
	}
	writeFiles(t, root, files)
	for name, tc := range map[string]struct{ src, want string }{
		"parent directory":                {"properties: {a: {$ref: '../../secret.yaml'}}\n", "../secret.yaml is not a path inside " + mod},
		"symbolic link":                   {"properties: {a: {$ref: 'link.yaml'}}\n", "symbolic link"},
		"absolute":                        {"properties: {a: {$ref: '" + filepath.Join(root, "secret.yaml") + "'}}\n", "write the path relative to the file holding the $ref"},
		"file URL":                        {"properties: {a: {$ref: 'file:///etc/passwd'}}\n", "never URLs"},
		"self cycle":                      {"properties: {a: {$ref: 'values.yaml'}}\n", "recursive $ref is not supported: openapi/values.yaml -> openapi/values.yaml"},
		"cycle through the schema itself": {"properties: {a: {$ref: 'back.yaml'}}\n", "recursive $ref is not supported: openapi/back.yaml -> openapi/values.yaml#/properties/a -> openapi/back.yaml"},
		"too many files":                  {many, fmt.Sprintf("more than %d other files", schema.MaxRefFiles)},
	} {
		t.Run(name, func(t *testing.T) {
			writeFiles(t, mod, map[string]string{"openapi/values.yaml": tc.src})
			_, err := parseIn(t, mod, "openapi/values.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
