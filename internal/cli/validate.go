package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/schema"
	"github.com/strata-dev/strata/internal/values"
)

func newValuesValidateCmd(g *globals) *cobra.Command {
	var (
		flags      inputFlags
		schemaFile string
		forHelm    bool
		closed     bool
		output     string
	)
	cmd := &cobra.Command{
		Use:   "validate --schema SCHEMA.yaml FILE... [--set key=val]...",
		Short: "Validate merged values against an OpenAPI v3 schema, with defaults",
		Long: `Merge the values files and flags as "strata values merge" does, apply the
schema's defaults the way Kubernetes defaults CRDs, and validate the result
against the OpenAPI v3 schema. Every error names the path in the data, the rule
broken and the layer that set the value. Exits 1 when the values are invalid.`,
		Example: `  strata values validate --schema values.schema.yaml base.yaml prod.yaml
  strata values validate --schema openapi/values.yaml --additional-properties-false --for-helm values.yaml -o yaml`,
		RunE: func(cmd *cobra.Command, files []string) error {
			if schemaFile == "" {
				return errors.New("--schema is required: the OpenAPI v3 schema (YAML or JSON) to validate against")
			}
			data, err := os.ReadFile(schemaFile)
			if err != nil {
				return fmt.Errorf("reading schema: %w", err)
			}
			s, err := schema.Parse(data, schemaFile, schema.Options{
				AdditionalPropertiesFalse: closed,
				Resolve:                   schema.DirResolver(filepath.Dir(schemaFile)),
				Path:                      filepath.Base(schemaFile),
			})
			if err != nil {
				return err
			}
			layers, err := flags.layers(g, files)
			if err != nil {
				return err
			}
			res, err := values.Merge(layers, values.MergeOptions{Provenance: true})
			if err != nil {
				return err
			}
			defaulted := s.ApplyDefaults(res.Values)
			validate := s.Validate
			if forHelm {
				validate = s.ValidateForHelm
			}
			if err := validate(defaulted); err != nil {
				var verr *schema.ValidationError
				if !errors.As(err, &verr) {
					return err
				}
				return &exitError{code: 1, msg: describeInvalid(verr, res)}
			}
			if output == "" {
				fmt.Fprintf(g.stdout, "valid: the values match %s\n", schemaFile)
				return nil
			}
			f, err := document.ParseFormat(output)
			if err != nil {
				return err
			}
			return document.Encode(g.stdout, defaulted, f)
		},
	}
	fs := cmd.Flags()
	flags.bind(fs)
	fs.StringVar(&schemaFile, "schema", "", "OpenAPI v3 schema file (YAML or JSON)")
	fs.BoolVar(&forHelm, "for-helm", false, "also require the keys listed in x-required-for-helm")
	fs.BoolVar(&closed, "additional-properties-false", false, "treat unset additionalProperties as false (addon-operator's rule)")
	fs.StringVarP(&output, "output", "o", "", "print the defaulted values when valid: yaml or json")
	return cmd
}

// describeInvalid lists the validation errors, each with the layer that set
// the offending value when one did (defaults and missing keys have none).
// Messages about values of sensitive layers do not quote the value.
func describeInvalid(verr *schema.ValidationError, res *values.Result) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Error: the values do not match %s:", verr.Source)
	for _, fe := range verr.Errors {
		line := fe.String()
		var from string
		if w, ok := winner(res, fe.Path); ok {
			from = "\n      set by " + values.DescribeOrigin(w.Origin)
			if w.Sensitive {
				line = fmt.Sprintf("%s: the value (redacted) breaks the rule %s", fe.Path, fe.Rule)
			}
		}
		fmt.Fprintf(&b, "\n  %s%s", line, from)
	}
	return b.String()
}

// winner returns the write that decided the value at path, if any.
func winner(res *values.Result, path string) (values.Setting, bool) {
	if path == "" {
		return values.Setting{}, false
	}
	p, err := document.ParsePath(path)
	if err != nil {
		return values.Setting{}, false
	}
	exps, err := res.Explain(p, values.ExplainOptions{})
	if err != nil || len(exps) != 1 || exps[0].Deleted {
		return values.Setting{}, false
	}
	return exps[0].Winner, true
}
