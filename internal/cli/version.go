package cli

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/stamp"
)

func newVersionCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print strata's version",
		Long: `Print the version of this strata binary: the release version, the commit it
was built from and that commit's time, whether the tree had uncommitted
changes (dirty), the Go version and the platform.

Release builds (make build, make dist, make image) carry these from the
linker; a plain go build or go install takes them from the build
information the go command records.`,
		Example: `  strata version
  strata version -o json`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := stamp.Get()
			if output == "" {
				cmd.Println(v.String())
				return nil
			}
			f, err := document.ParseFormat(output)
			if err != nil {
				return err
			}
			m := map[string]any{"version": v.Version, "commit": v.Commit, "date": v.Date, "dirty": v.Dirty,
				"goVersion": v.GoVersion, "platform": v.Platform}
			return document.Encode(g.stdout, m, f)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: yaml or json (default: one line of text)")
	return cmd
}

// logStart logs that a server starts, with the build stamp, so its logs say
// which strata runs: `starting strata cmp serve build.version=v1.2.3 ...`.
func logStart(log *slog.Logger, server string) {
	log.Info("starting strata "+server, stamp.Get().Attr())
}
