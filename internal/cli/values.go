package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/values"
)

func newValuesCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "values",
		Short: "Merge, explain, flatten and validate values files",
	}
	cmd.AddCommand(newValuesMergeCmd(g), newValuesFlattenCmd(g), newValuesValidateCmd(g))
	return cmd
}

// inputFlags binds Helm's value flags onto values.Inputs.
type inputFlags struct {
	in        values.Inputs
	sensitive []string
}

func (f *inputFlags) bind(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.in.Values, "set", nil, "set a value: key=val, several separated by commas (Helm --set)")
	fs.StringArrayVar(&f.in.StringValues, "set-string", nil, "set a string value: key=val (Helm --set-string)")
	fs.StringArrayVar(&f.in.JSONValues, "set-json", nil, "set a JSON value: key=json (Helm --set-json)")
	fs.StringArrayVar(&f.in.FileValues, "set-file", nil, "set a value to a file's content: key=path (Helm --set-file)")
	fs.StringArrayVar(&f.in.LiteralValues, "set-literal", nil, "set a literal string: key=val, commas included (Helm --set-literal)")
	fs.StringArrayVar(&f.in.JSONPatches, "json-patch", nil, "apply an RFC 6902 JSON patch file after the values files")
	fs.BoolVar(&f.in.IgnoreMissingRemove, "ignore-missing-remove", false, "a JSON patch remove of a missing path is a no-op")
	fs.StringArrayVar(&f.sensitive, "sensitive", nil, "treat this values file as secret: never print its values in explanations or errors")
}

func (f *inputFlags) layers(g *globals, files []string) ([]*values.Layer, error) {
	in := f.in
	in.Files = files
	in.Stdin = g.stdin
	layers, err := in.Layers(document.Loader{Positions: true})
	if err != nil {
		return nil, err
	}
	for _, s := range f.sensitive {
		found := false
		for _, l := range layers {
			if l.Source == s {
				l.Sensitive, found = true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("--sensitive %s: no such values file among the arguments", s)
		}
	}
	return layers, nil
}

func newValuesMergeCmd(g *globals) *cobra.Command {
	var (
		flags       inputFlags
		output      string
		explain     string
		showSecrets bool
	)
	cmd := &cobra.Command{
		Use:   "merge FILE... [--set key=val]... [--explain[=PATH]]",
		Short: "Merge values files and flags the way Helm does, and explain where each value came from",
		Long: `Merge values files (later files win; maps merge deeply; lists and scalars are
replaced whole; null removes a key), then JSON patches, then --set-json, --set,
--set-string, --set-file and --set-literal, as Helm applies them.

--explain prints, for every leaf, the final value, the layer that set it and
every value it overrode. --explain=PATH restricts it to one key (or subtree).`,
		Example: `  strata values merge examples/values/base.yaml examples/values/prod.yaml --set image.tag=v2
  strata values merge base.yaml prod.yaml --explain
  strata values merge base.yaml prod.yaml --explain=image.tag -o json`,
		RunE: func(cmd *cobra.Command, files []string) error {
			explaining := cmd.Flags().Changed("explain")
			if !explaining && showSecrets {
				return errors.New("--show-secrets only applies with --explain")
			}
			layers, err := flags.layers(g, files)
			if err != nil {
				return err
			}
			res, err := values.Merge(layers, values.MergeOptions{Provenance: explaining})
			if err != nil {
				return err
			}
			if !explaining {
				f, err := document.ParseFormat(output)
				if err != nil {
					return err
				}
				return document.Encode(g.stdout, res.Values, f)
			}
			path, err := explainPath(explain)
			if err != nil {
				return err
			}
			exps, err := res.Explain(path, values.ExplainOptions{ShowSensitive: showSecrets})
			if err != nil {
				return err
			}
			format := output
			if !cmd.Flags().Changed("output") {
				format = "text"
			}
			return values.WriteExplanations(g.stdout, exps, format)
		},
	}
	fs := cmd.Flags()
	flags.bind(fs)
	fs.StringVarP(&output, "output", "o", "yaml", "output format: yaml or json (with --explain also text, the default)")
	addExplainFlag(fs, &explain)
	fs.BoolVar(&showSecrets, "show-secrets", false, "do not redact values of --sensitive files in explanations")
	return cmd
}

// explainAll is --explain given without a path: the root, in jq's
// notation. As a --set path "." would name the empty key inside the empty
// key, which no values file has a use for.
const explainAll = "."

// addExplainFlag adds --explain[=PATH] to fs, storing the path in p.
func addExplainFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "explain", "", "explain every value, or with =`PATH` one key or subtree")
	fs.Lookup("explain").NoOptDefVal = explainAll
}

// explainPath parses the value of --explain; the root is nil.
func explainPath(s string) (document.Path, error) {
	if s == explainAll {
		return nil, nil
	}
	p, err := document.ParsePath(s)
	if err != nil {
		return nil, fmt.Errorf("--explain: %w", err)
	}
	return p, nil
}

// joinExplainArg turns "--explain PATH" into "--explain=PATH" when PATH is
// not a file, so the flag reads the way people type it. pflag cannot do this
// for a flag whose value is optional.
func joinExplainArg(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "--explain" && i+1 < len(args) {
			next := args[i+1]
			if next != "" && !strings.HasPrefix(next, "-") {
				if _, err := os.Stat(next); err != nil {
					out = append(out, "--explain="+next)
					i++
					continue
				}
			}
		}
		out = append(out, a)
	}
	return out
}

func newValuesFlattenCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "flatten FILE",
		Short: "List a values file's leaves as dotted keys (image.tag, ports[0].port, a\\.b)",
		Long: `Flatten a values file to one entry per leaf, keyed by its path in Helm --set
notation, in path order. Empty maps and lists are leaves. The keys parse back
with --set exactly.`,
		Example: `  strata values flatten examples/values/base.yaml
  strata values flatten examples/values/base.yaml -o properties`,
		Args: positional("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			layers, err := (&inputFlags{}).layers(g, args)
			if err != nil {
				return err
			}
			keys, vals := values.FlattenStrings(layers[0].Values)
			switch output {
			case "properties":
				var b bytes.Buffer
				for i, k := range keys {
					fmt.Fprintf(&b, "%s=%s\n", k, propertyValue(vals[i]))
				}
				_, err := g.stdout.Write(b.Bytes())
				return err
			}
			f, err := document.ParseFormat(output)
			if err != nil {
				return fmt.Errorf("%w (or properties)", err)
			}
			return document.EncodeOrdered(g.stdout, keys, vals, f)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml, json or properties (key=value lines)")
	return cmd
}

// propertyValue writes a leaf for a key=value line: strings as they are,
// other values as JSON.
func propertyValue(v any) string {
	if s, ok := v.(string); ok {
		return strings.ReplaceAll(s, "\n", `\n`)
	}
	var b bytes.Buffer
	if err := document.Encode(&b, v, document.JSON); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(b.String())
}
