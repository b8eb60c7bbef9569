package document_test

import (
	"errors"
	"fmt"
	"strings"
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

// port is a Checker: a number or null, said in its own words.
type port int

var errPort = errors.New("bad port")

func (port) CheckTree(v any) error {
	switch v.(type) {
	case string, bool, []any, map[string]any:
		return fmt.Errorf("%w: must be a port number, not %s", errPort, document.Describe(v))
	}
	return nil
}

type checked struct {
	Name  string          `json:"name"`
	Port  port            `json:"port"`
	Ports []port          `json:"ports"`
	ByKey map[string]port `json:"byKey"`
	Opt   *port           `json:"opt"`
}

func TestDecodeChecker(t *testing.T) {
	tests := []struct {
		name, doc, want string
		path            document.Path
	}{
		{"field", "name: a\nport: http\n", `c.yaml:2:1: bad port: must be a port number, not the string "http"`, document.Path{document.Key("port")}},
		{"list item", "ports: [1,\n  x]\n", `c.yaml:2:3: bad port: must be a port number, not the string "x"`, document.Path{document.Key("ports"), document.Index(1)}},
		{"map value", "byKey:\n  a: 1\n  b: [2]\n", `c.yaml:3:3: bad port: must be a port number, not a list`, document.Path{document.Key("byKey"), document.Key("b")}},
		{"through a pointer", "opt: true\n", `c.yaml:1:1: bad port: must be a port number, not the boolean true`, document.Path{document.Key("opt")}},
		// The first problem written is reported, whatever the names.
		{"first written", "zzz: 1\nport: x\n", `c.yaml:1:1: unknown field "zzz"; known fields here: byKey, name, opt, port, ports`, document.Path{document.Key("zzz")}},
		{"first written, map", "byKey:\n  z: x\n  a: y\n", `c.yaml:2:3: bad port: must be a port number, not the string "x"`, document.Path{document.Key("byKey"), document.Key("z")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var c checked
			err := decodeDoc(t, tc.doc, &c)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("Decode(%q) = %v, want %q", tc.doc, err, tc.want)
			}
			var le *document.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Decode(%q) = %T, want *document.LoadError", tc.doc, err)
			}
			if diff := cmp.Diff(tc.path, le.Path); diff != "" {
				t.Errorf("Decode(%q) path mismatch (-want +got):\n%s", tc.doc, diff)
			}
			if strings.HasPrefix(tc.name, "first written") && strings.Contains(tc.want, "unknown") != errors.Is(err, document.ErrUnknownField) {
				t.Errorf("Decode(%q) = %v, ErrUnknownField mismatch", tc.doc, err)
			}
		})
	}

	var c checked
	if err := decodeDoc(t, "name: a\nport: 80\nports: [1, 2]\nbyKey: {a: 3}\nopt: null\n", &c); err != nil {
		t.Fatal(err)
	}
	want := checked{Name: "a", Port: 80, Ports: []port{1, 2}, ByKey: map[string]port{"a": 3}}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("Decode mismatch (-want +got):\n%s", diff)
	}
	if err := decodeDoc(t, "port: x\n", &c); !errors.Is(err, errPort) {
		t.Errorf("Decode(port: x) = %v, want errors.Is %v", err, errPort)
	}
}

// renamed has a message of its own for its fields' old names.
type renamed struct {
	decodeMeta
	Interval string `json:"interval"`
	Burst    int    `json:"burst"`
}

func (renamed) UnknownField(key string, known []string) string {
	if key == "period" {
		return "the field is called interval now"
	}
	return ""
}

func TestDecodeUnknownField(t *testing.T) {
	tests := []struct {
		name, doc string
		want      document.UnknownFieldError
		msg       string // the error's text
		path      document.Path
	}{
		{"a misspelt name", "name: a\nintervl: 5s\n",
			document.UnknownFieldError{Key: "intervl", Known: []string{"name", "interval", "burst"}, Suggestion: "interval"},
			`c.yaml:2:1: unknown field "intervl"; known fields here: burst, interval, name`, document.Path{document.Key("intervl")}},
		{"a case slip", "Burst: 1\n",
			document.UnknownFieldError{Key: "Burst", Known: []string{"name", "interval", "burst"}, Suggestion: "burst"},
			`c.yaml:1:1: unknown field "Burst"; known fields here: burst, interval, name`, document.Path{document.Key("Burst")}},
		{"nothing close", "colour: red\n",
			document.UnknownFieldError{Key: "colour", Known: []string{"name", "interval", "burst"}},
			`c.yaml:1:1: unknown field "colour"; known fields here: burst, interval, name`, document.Path{document.Key("colour")}},
		{"the type's own message", "period: 5s\n",
			document.UnknownFieldError{Key: "period", Known: []string{"name", "interval", "burst"}, Reason: "the field is called interval now"},
			`c.yaml:1:1: the field is called interval now`, document.Path{document.Key("period")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r renamed
			err := decodeDoc(t, tc.doc, &r)
			if err == nil || err.Error() != tc.msg {
				t.Fatalf("Decode(%q) = %v, want %q", tc.doc, err, tc.msg)
			}
			if !errors.Is(err, document.ErrUnknownField) {
				t.Errorf("Decode(%q) = %v, want errors.Is ErrUnknownField", tc.doc, err)
			}
			var ue *document.UnknownFieldError
			if !errors.As(err, &ue) {
				t.Fatalf("Decode(%q) = %v, want an *UnknownFieldError", tc.doc, err)
			}
			if diff := cmp.Diff(tc.want, *ue); diff != "" {
				t.Errorf("Decode(%q) UnknownFieldError mismatch (-want +got):\n%s", tc.doc, diff)
			}
			var le *document.LoadError
			if errors.As(err, &le); !cmp.Equal(le.Path, tc.path) {
				t.Errorf("Decode(%q) path = %v, want %v", tc.doc, le.Path, tc.path)
			}
		})
	}
}

func TestUnknownFieldErrorText(t *testing.T) {
	for _, tc := range []struct {
		e    document.UnknownFieldError
		want string
	}{
		{document.UnknownFieldError{Key: "nmae", Known: []string{"name", "spec"}, Suggestion: "name"}, `unknown field "nmae"; did you mean name?`},
		{document.UnknownFieldError{Key: "x", Known: []string{"name", "spec"}}, `unknown field "x"; known fields are name, spec`},
		{document.UnknownFieldError{Key: "x", Known: []string{"name"}, Suggestion: "name", Reason: "x is gone"}, `x is gone`},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v.Error() = %q, want %q", tc.e, got, tc.want)
		}
	}
}
