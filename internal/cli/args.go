package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// positional is the Args check of a command that takes exactly the named
// positional arguments, in order (none for no names). Its errors name the
// argument that is missing or unexpected and show the command's usage line,
// where cobra's say only "accepts 1 arg(s), received 0".
func positional(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < len(names):
			return fmt.Errorf("missing %s: usage: %s", strings.Join(names[len(args):], " "), cmd.UseLine())
		case len(args) > len(names) && len(names) == 0:
			return fmt.Errorf("unexpected argument %q: %s takes no arguments, only flags: usage: %s", args[0], cmd.CommandPath(), cmd.UseLine())
		case len(args) > len(names):
			return fmt.Errorf("unexpected argument %q after %s: usage: %s", args[len(names)], strings.Join(names, " "), cmd.UseLine())
		}
		return nil
	}
}
