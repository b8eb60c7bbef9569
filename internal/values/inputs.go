package values

import (
	"fmt"
	"io"
	"os"
	"strings"
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
func (in Inputs) Layers(l Loader) ([]*Layer, error) {
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
				m, err := Parse([]byte(arg), "--set-json")
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

func (in Inputs) file(l Loader, name string) (*Layer, error) {
	if name != "-" {
		return l.ReadFile(name)
	}
	data, err := in.read(l, name)
	if err != nil {
		return nil, err
	}
	m, pos, err := l.Parse(data, "<stdin>")
	if err != nil {
		return nil, err
	}
	return &Layer{Name: "<stdin>", Source: "<stdin>", Values: m, Pos: pos}, nil
}

func (in Inputs) read(l Loader, name string) ([]byte, error) {
	if name != "-" {
		return l.readBounded(name)
	}
	if in.Stdin == nil {
		return nil, fmt.Errorf("reading standard input: no input attached")
	}
	lim := l.limits().MaxBytes
	data, err := io.ReadAll(io.LimitReader(in.Stdin, lim+1))
	if err != nil {
		return nil, fmt.Errorf("reading standard input: %w", err)
	}
	if int64(len(data)) > lim {
		return nil, &LoadError{Source: "<stdin>", Msg: fmt.Sprintf("input is larger than the limit of %d bytes", lim), Err: ErrTooLarge}
	}
	return data, nil
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
