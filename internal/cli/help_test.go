package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/strata-dev/strata/internal/cli"
)

// walk calls fn on cmd and every command below it, hidden ones included.
func walk(cmd *cobra.Command, fn func(*cobra.Command)) {
	fn(cmd)
	for _, c := range cmd.Commands() {
		walk(c, fn)
	}
}

// commandArgs is the argument list that names cmd, without the root.
func commandArgs(cmd *cobra.Command) []string {
	path := strings.Fields(cmd.CommandPath())
	return path[1:]
}

// quotedPadding is a flag default shown with the padding that replaced a
// NUL byte inside it: pflag aligns the usage column on the first NUL of a
// line, so a NUL in a NoOptDefVal garbles the line.
var quotedPadding = regexp.MustCompile(`\[="\s`)

// TestHelpClean runs --help on every command and checks that the text has
// no control characters and no flag default garbled by alignment padding.
func TestHelpClean(t *testing.T) {
	walk(cli.NewRoot(nil, nil, nil), func(cmd *cobra.Command) {
		args := append(commandArgs(cmd), "--help")
		var stdout, stderr bytes.Buffer
		if code := cli.Main(context.Background(), args, nil, &stdout, &stderr); code != 0 {
			t.Errorf("strata %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
			return
		}
		help := stdout.String()
		if help == "" {
			t.Errorf("strata %s printed no help", strings.Join(args, " "))
		}
		for i, line := range strings.Split(help, "\n") {
			for _, r := range line {
				if r < 0x20 && r != '\t' || r == 0x7f {
					t.Errorf("strata %s: line %d has control character %q: %q", strings.Join(args, " "), i+1, r, line)
					break
				}
			}
			if quotedPadding.MatchString(line) {
				t.Errorf("strata %s: line %d has a garbled flag default: %q", strings.Join(args, " "), i+1, line)
			}
		}
	})
}

// noDataOutput lists the runnable commands that print no data a script
// would parse, and so take no -o.
var noDataOutput = map[string]string{
	"strata cmp serve":             "a server",
	"strata cmp match":             "its answer is the exit code",
	"strata cmp preview":           "a server",
	"strata generator serve":       "a server",
	"strata layers controller":     "a controller",
	"strata operator run":          "the operator",
	"strata copy-self":             "copies the binary",
	"strata completion":            "a shell script",
	"strata completion bash":       "a shell script",
	"strata completion zsh":        "a shell script",
	"strata completion fish":       "a shell script",
	"strata completion powershell": "a shell script",
	"strata help":                  "help text",
}

// TestOutputFlag checks that every command that prints data takes
// -o/--output, with yaml and json among its formats.
func TestOutputFlag(t *testing.T) {
	root := cli.NewRoot(nil, nil, nil)
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpCmd()
	walk(root, func(cmd *cobra.Command) {
		if !cmd.Runnable() {
			return
		}
		path := cmd.CommandPath()
		o := cmd.Flags().Lookup("output")
		if _, exempt := noDataOutput[path]; exempt {
			if o != nil {
				t.Errorf("%s takes -o but is listed as printing no data", path)
			}
			return
		}
		if o == nil || o.Shorthand != "o" {
			t.Errorf("%s prints data but takes no -o/--output", path)
			return
		}
		if !strings.Contains(o.Usage, "yaml") || !strings.Contains(o.Usage, "json") {
			t.Errorf("%s: -o %q does not offer yaml and json", path, o.Usage)
		}
	})
}

// TestArgErrors gives every command that checks its positional arguments
// one too many, and those that take one none: the error names the
// argument and shows the command's usage line.
func TestArgErrors(t *testing.T) {
	walk(cli.NewRoot(nil, nil, nil), func(cmd *cobra.Command) {
		if !cmd.Runnable() || cmd.Args == nil {
			return
		}
		usage := "usage: " + cmd.UseLine()
		var wantName string // the first required positional the Use line names
		for _, f := range strings.Fields(cmd.Use)[1:] {
			if strings.HasPrefix(f, "[") && !strings.HasPrefix(f, "[-") && strings.ToUpper(f) == f {
				continue // an optional positional, [NAME]
			}
			if !strings.HasPrefix(f, "-") && !strings.HasPrefix(f, "[") {
				wantName = f
			}
			break
		}
		run := func(args []string, want string) {
			t.Helper()
			var stdout, stderr bytes.Buffer
			code := cli.Main(context.Background(), args, nil, &stdout, &stderr)
			if code == 0 || !strings.Contains(stderr.String(), want) || !strings.Contains(stderr.String(), usage) {
				t.Errorf("strata %s: exit %d, stderr %q; want an error with %q and %q", strings.Join(args, " "), code, stderr.String(), want, usage)
			}
		}
		args := commandArgs(cmd)
		if wantName != "" {
			run(args, "missing "+wantName+": ")
		}
		extra := append(append([]string{}, args...), "a1", "a2", "a3", "a4")
		want := `unexpected argument "a1"`
		if wantName != "" {
			want = `unexpected argument "a2" after ` + wantName
		}
		run(extra, want)
	})
}

// examplePath is a path into the repository's examples/ in a help example.
var examplePath = regexp.MustCompile(`(?:^|[\s=])(examples/[^\s'"]+)`)

// TestHelpExamples checks that every command a user runs has examples in its
// help, that they run that command, and that the files of examples/ they
// name exist (relative to the repository root, where the examples run).
func TestHelpExamples(t *testing.T) {
	walk(cli.NewRoot(nil, nil, nil), func(cmd *cobra.Command) {
		if !cmd.Runnable() || cmd.Hidden {
			return
		}
		path := cmd.CommandPath()
		if cmd.Example == "" {
			t.Errorf("%s has no examples in its help", path)
			return
		}
		if !strings.Contains(cmd.Example, path+" ") && !strings.HasSuffix(strings.TrimSpace(cmd.Example), path) && !strings.Contains(cmd.Example, path+"\n") {
			t.Errorf("%s: no example runs it:\n%s", path, cmd.Example)
		}
		for _, m := range examplePath.FindAllStringSubmatch(cmd.Example, -1) {
			if _, err := os.Stat(filepath.Join("..", "..", m[1])); err != nil {
				t.Errorf("%s: its example names %s, which the repository does not hold", path, m[1])
			}
		}
	})
}
