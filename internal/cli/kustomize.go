package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/strata-dev/strata/internal/document"

	"github.com/strata-dev/strata/internal/kustomize"
)

func newKustomizeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kustomize",
		Short: "Build kustomizations in-process (for plugins that need a kustomize pass)",
	}
	var (
		b      kustomize.Build
		output string
	)
	build := &cobra.Command{
		Use:   "build DIR",
		Short: "Build the kustomization in DIR and print the YAML stream, as `kustomize build` does (-o json: a JSON list)",
		Long: `Build the kustomization in DIR with the kustomize API and kustomize's defaults:
files load only from inside each kustomization's directory, no exec or
container plugins run, no Helm charts are inflated, nothing is fetched.`,
		Args: positional("DIR"),
		Example: `  strata kustomize build overlays/prod
  strata kustomize build overlays/prod -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := document.ParseFormat(output)
			if err != nil {
				return err
			}
			out, err := b.Run(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if format == document.YAML {
				_, err = g.stdout.Write(out)
				return err
			}
			docs, err := document.Loader{Limits: document.Limits{MaxBytes: int64(len(out)) + 1}}.ParseDocuments(out, "kustomize build "+args[0])
			if err != nil {
				return fmt.Errorf("reading kustomize's output: %w", err)
			}
			list := make([]any, len(docs))
			for i, d := range docs {
				list[i] = d.Value
			}
			return document.Encode(g.stdout, list, document.JSON)
		},
	}
	build.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml (kustomize's stream) or json (a list of the objects)")
	cmd.AddCommand(build)
	return cmd
}
