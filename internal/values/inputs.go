package values

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/strata-dev/strata/internal/document"
)

// Inputs are the value sources of a command line, as Helm takes them: values
// files, then --set-json, --set, --set-string, --set-file and --set-literal
// (in that order, as Helm applies them), each flag in the order given.
// strata adds JSON patches, applied after the files and before the flags.
type Inputs struct {
	Files         []string // "-" reads standard input
	JSONPatches   []string // files holding RFC 6902 patches
	JSONValues    []string // --set-json
	Values        []string // --set
	StringValues  []string // --set-string
	FileValues    []string // --set-file
	LiteralValues []string // --set-literal

	// IgnoreMissingRemove lets a patch remove paths that do not exist.
	IgnoreMissingRemove bool
	Stdin               io.Reader
}

// Layers loads the inputs into a stack of layers, bottom first.
func (in Inputs) Layers(l document.Loader) ([]*Layer, error) {
	var layers []*Layer
	for _, f := range in.Files {
		layer, err := in.file(l, f)
		if err != nil {
			return nil, err
		}
		layers = append(layers, layer)
	}
	for _, f := range in.JSONPatches {
		data, err := in.read(l, f)
		if err != nil {
			return nil, err
		}
		p, err := ParseJSONPatch(data, f)
		if err != nil {
			return nil, err
		}
		p.IgnoreMissingRemove = in.IgnoreMissingRemove
		layers = append(layers, &Layer{Name: "--json-patch " + f, Source: f, Op: p})
	}
	readFile := func(path string) ([]byte, error) { return in.read(l, path) }
	for _, set := range []struct {
		kind SetKind
		args []string
	}{
		{SetJSON, in.JSONValues},
		{SetValue, in.Values},
		{SetString, in.StringValues},
		{SetFile, in.FileValues},
		{SetLiteral, in.LiteralValues},
	} {
		for _, arg := range set.args {
			if set.kind == SetJSON && strings.HasPrefix(strings.TrimSpace(arg), "{") {
				// A whole JSON object merges like a values file, as in Helm.
				m, err := document.Parse([]byte(arg), "--set-json")
				if err != nil {
					return nil, fmt.Errorf("--set-json %q: %w", arg, err)
				}
				layers = append(layers, &Layer{Name: "--set-json " + arg, Values: m})
				continue
			}
			a := Assignment{Kind: set.kind, Arg: arg, ReadFile: readFile}
			// Check the syntax now, so errors come before any work.
			if _, err := ParseSet(set.kind, arg, readFile); err != nil {
				return nil, err
			}
			layers = append(layers, a.Layer())
		}
	}
	return layers, nil
}

func (in Inputs) file(l document.Loader, name string) (*Layer, error) {
	data, err := in.read(l, name)
	if err != nil {
		return nil, err
	}
	source := name
	if name == "-" {
		source = "<stdin>"
	}
	m, pos, err := l.Parse(data, source)
	if err != nil {
		return nil, err
	}
	return &Layer{Name: source, Source: source, Values: m, Pos: pos}, nil
}

func (in Inputs) read(l document.Loader, name string) ([]byte, error) {
	if name != "-" {
		data, err := document.ReadFile(name, l.MaxBytes())
		if err != nil && !errors.Is(err, document.ErrTooLarge) {
			return nil, fmt.Errorf("reading values: %w", err)
		}
		return data, err
	}
	if in.Stdin == nil {
		return nil, fmt.Errorf("reading standard input: no input attached")
	}
	return document.ReadAll(in.Stdin, l.MaxBytes(), "<stdin>")
}

// Assignment is one --set style flag argument, usable as a layer's Op.
type Assignment struct {
	Kind     SetKind
	Arg      string
	ReadFile ReadFileFunc // for SetFile; nil reads the local file system
}

var _ Op = Assignment{}

// Apply applies the assignment onto tree, in place.
func (a Assignment) Apply(tree map[string]any) (map[string]any, error) {
	read := a.ReadFile
	if read == nil {
		read = os.ReadFile
	}
	if err := ApplySet(tree, a.Kind, a.Arg, read); err != nil {
		return nil, err
	}
	return tree, nil
}

// Layer returns a layer applying the assignment, named after the flag.
func (a Assignment) Layer() *Layer {
	return &Layer{Name: a.Kind.Flag() + " " + a.Arg, Op: a}
}

// RedactedName names the layer without its values, for sensitive layers.
func (a Assignment) RedactedName() string {
	return a.Kind.Flag() + " " + Redacted
}
