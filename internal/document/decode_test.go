package document_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/strata-dev/strata/internal/document"
)

type decodeCmd struct {
	Command []string `json:"command"`
	Args    []string `json:"args,omitempty"`
}

type decodeMeta struct {
	Name string `json:"name"`
}

type decodeConfig struct {
	decodeMeta `json:",inline"`
	Spec       struct {
		Version  string            `json:"version"`
		Generate *decodeCmd        `json:"generate"`
		Env      map[string]string `json:"env"`
		Steps    []decodeCmd       `json:"steps"`
		Enabled  bool              `json:"enabled"`
	} `json:"spec"`
}

func decodeDoc(t *testing.T, doc string, out any) error {
	t.Helper()
	tree, pos, err := document.Loader{Positions: true}.ParseAny([]byte(doc), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return document.Decode(tree, pos, "c.yaml", out)
}

func TestDecode(t *testing.T) {
	var c decodeConfig
	err := decodeDoc(t, "name: x\nspec:\n  version: v1\n  generate: {command: [sh, -c], args: [echo]}\n  env: {A: b}\n  steps: [{command: [a]}]\n  enabled: true\n", &c)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "x" || c.Spec.Version != "v1" || !c.Spec.Enabled || c.Spec.Env["A"] != "b" {
		t.Errorf("Decode = %+v", c)
	}
	if diff := cmp.Diff(&decodeCmd{Command: []string{"sh", "-c"}, Args: []string{"echo"}}, c.Spec.Generate); diff != "" {
		t.Errorf("generate mismatch (-want +got):\n%s", diff)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
		sentinel        error
	}{
		{"unknown top field", "name: x\nnmae: y\n", `c.yaml:2:1: unknown field "nmae"; known fields here: name, spec`, document.ErrUnknownField},
		{"unknown nested field", "spec:\n  generate:\n    commmand: [a]\n", `c.yaml:3:5: unknown field "spec.generate.commmand"; known fields here: args, command`, document.ErrUnknownField},
		{"unknown field in list item", "spec:\n  steps:\n    - {command: [a]}\n    - {cmd: [b]}\n", `c.yaml:4:8: unknown field "spec.steps[1].cmd"; known fields here: args, command`, document.ErrUnknownField},
		{"wrong type", "spec:\n  version: [1]\n", `c.yaml:2:3: spec.version: expected a string, got a JSON array`, document.ErrSyntax},
		{"wrong case is unknown", "Name: x\n", `c.yaml:1:1: unknown field "Name"; known fields here: name, spec`, document.ErrUnknownField},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c decodeConfig
			err := decodeDoc(t, tc.doc, &c)
			if err == nil || err.Error() != tc.want {
				t.Errorf("Decode(%q) = %v, want %q", tc.doc, err, tc.want)
			}
			if !errors.Is(err, tc.sentinel) {
				t.Errorf("Decode(%q) = %v, want errors.Is %v", tc.doc, err, tc.sentinel)
			}
		})
	}
}
