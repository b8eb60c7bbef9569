package cli

import (
	"github.com/spf13/cobra"

	"github.com/strata-dev/strata/internal/kustomize"
)

func newKustomizeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kustomize",
		Short: "Build kustomizations in-process (for plugins that need a kustomize pass)",
	}
	var b kustomize.Build
	build := &cobra.Command{
		Use:   "build DIR",
		Short: "Build the kustomization in DIR and print the YAML stream, as `kustomize build` does",
		Long: `Build the kustomization in DIR with the kustomize API and kustomize's defaults:
files load only from inside each kustomization's directory, no exec or
container plugins run, no Helm charts are inflated, nothing is fetched.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := b.Run(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			_, err = g.stdout.Write(out)
			return err
		},
	}
	cmd.AddCommand(build)
	return cmd
}
