package cli

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/strata-dev/strata/internal/generator/appset"
	"github.com/strata-dev/strata/internal/operator/debug"
)

// outputFormats are the -o values a command's help may name.
var outputFormats = []string{"text", "yaml", "json", "name", "properties"}

var formatWord = regexp.MustCompile(`[a-z]+`)

// registerCompletions gives every command's flags their values for shell
// completion: -o the formats its help names, --builtin, --argocd-version,
// --log-level and --log-format theirs.
func registerCompletions(root *cobra.Command) {
	fixed := func(vals ...string) cobra.CompletionFunc {
		return cobra.FixedCompletions(vals, cobra.ShellCompDirectiveNoFileComp)
	}
	// The releases --argocd-version takes: the oldest (2.14, the last
	// 2.x), then every 3.x up to the newest.
	versions := []string{fmt.Sprintf("%d.%d", appset.Oldest.Major, appset.Oldest.Minor)}
	for minor := 0; minor <= appset.Latest.Minor; minor++ {
		versions = append(versions, fmt.Sprintf("%d.%d", appset.Latest.Major, minor))
	}
	root.RegisterFlagCompletionFunc("log-level", fixed("debug", "info", "warn", "error"))
	root.RegisterFlagCompletionFunc("log-format", fixed("text", "json"))
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		fs := c.LocalNonPersistentFlags()
		if f := fs.Lookup("output"); f != nil {
			var vals []string
			for _, w := range formatWord.FindAllString(f.Usage, -1) {
				if slices.Contains(outputFormats, w) && !slices.Contains(vals, w) {
					vals = append(vals, w)
				}
			}
			c.RegisterFlagCompletionFunc("output", fixed(vals...))
		}
		if fs.Lookup("builtin") != nil {
			c.RegisterFlagCompletionFunc("builtin", fixed("helm"))
		}
		if fs.Lookup("argocd-version") != nil {
			c.RegisterFlagCompletionFunc("argocd-version", fixed(versions...))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeModules completes a module name from the running operator's
// debug socket (the command's --debug-unix-socket).
func completeModules(f *debugFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		data, err := debug.Get(cmd.Context(), f.socket, "/module/list.json")
		if err != nil {
			cobra.CompDebugln(err.Error(), false) // to BASH_COMP_DEBUG_FILE, not the terminal
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var mods []struct {
			Name  string `json:"name"`
			State string `json:"state"`
		}
		if err := json.Unmarshal(data, &mods); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, m := range mods {
			if strings.HasPrefix(m.Name, prefix) {
				out = append(out, cobra.CompletionWithDesc(m.Name, m.State))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
