package cli

import (
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/strata-dev/strata/internal/document"
)

// version is set at build time: -ldflags "-X github.com/strata-dev/strata/internal/cli.version=v1.2.3".
var version = ""

type versionInfo struct {
	Version, Commit, GoVersion, Platform string
}

func buildVersion() versionInfo {
	v := versionInfo{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v.Commit = s.Value
			}
		}
	}
	if v.Version == "" {
		v.Version = "devel"
	}
	return v
}

func newVersionCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print strata's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildVersion()
			if output == "" {
				cmd.Printf("strata %s (%s, %s", v.Version, v.GoVersion, v.Platform)
				if v.Commit != "" {
					cmd.Printf(", commit %s", v.Commit)
				}
				cmd.Println(")")
				return nil
			}
			f, err := document.ParseFormat(output)
			if err != nil {
				return err
			}
			m := map[string]any{"version": v.Version, "goVersion": v.GoVersion, "platform": v.Platform}
			if v.Commit != "" {
				m["commit"] = v.Commit
			}
			return document.Encode(g.stdout, m, f)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: yaml or json")
	return cmd
}
