// Package cli is strata's command line: thin cobra commands that bind flags
// onto the library objects of the capability packages and call them.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/startgc"
)

// Main runs strata with args and returns the process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := NewRoot(stdin, stdout, stderr)
	root.SetArgs(joinExplainArg(args))
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	var ex *exitError
	if errors.As(err, &ex) {
		if ex.msg != "" {
			fmt.Fprintln(stderr, ex.msg)
		}
		return ex.code
	}
	fmt.Fprintf(stderr, "Error: %v\n", err)
	if cmd != nil && cmd.Annotations[errorExitAnnotation] == "2" {
		return 2
	}
	return 1
}

// errorExitAnnotation, set to "2" on a command, makes its errors (usage
// errors included) exit 2, for a command whose exit 1 means a "no" answer,
// as grep's does.
const errorExitAnnotation = "strata.dev/error-exit-code"

// exitError ends the program with a code, after its message was printed.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// globals are the flags every command takes.
type globals struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	logLevel       string
	logFormat      string
	// oneShot is set for a command that runs once and ends (not a server,
	// controller or operator): its text logs are the `warning: …` lines
	// of a command-line tool, not a server's log records.
	oneShot       bool
	levelExplicit bool
}

// isServer says whether cmd, or a command above it, serves until stopped.
func isServer(cmd *cobra.Command) bool {
	for c := cmd; c != nil; c = c.Parent() {
		if c.Annotations[serverAnnotation] != "" {
			return true
		}
	}
	return false
}

// serverAnnotation marks a command that serves until stopped: it logs
// records (time, level, message, attributes), as a server does.
const serverAnnotation = "strata.dev/server"

// logger builds the slog logger the flags ask for; logs go to stderr. A
// one-shot command's text logs print as `warning: MESSAGE (key=value …)`
// lines, warnings and errors only unless --log-level is set; JSON logs
// stay records for every command. Durations print in seconds (a float) in
// JSON, as Go duration strings in text.
func (g *globals) logger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", g.logLevel)
	}
	return g.newLogger(level, g.logFormat, false)
}

// newLogger builds the logger of a format and level; noTime leaves the
// time out of records.
func (g *globals) newLogger(level slog.Level, format string, noTime bool) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if noTime && len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}
	switch strings.ToLower(format) {
	case "text", "color", "":
		if g.oneShot {
			if !g.levelExplicit {
				level = max(level, slog.LevelWarn)
			}
			return slog.New(&cliHandler{w: g.stderr, level: level, mu: new(sync.Mutex)}), nil
		}
		return slog.New(slog.NewTextHandler(g.stderr, opts)), nil
	case "json":
		replace := opts.ReplaceAttr
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				a.Value = slog.Float64Value(a.Value.Duration().Seconds())
			}
			return replace(groups, a)
		}
		return slog.New(slog.NewJSONHandler(g.stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}

// NewRoot builds the strata command tree.
func NewRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "strata",
		Short: "Pluggable manifest generation and layered values for Kubernetes GitOps",
		Long: `strata makes Kubernetes manifest generation pluggable and configuration
layered, and explains every value it produces.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			// The collector was held off while the packages initialised.
			startgc.Resume()
			g.oneShot = !isServer(cmd)
			g.levelExplicit = cmd.Flags().Changed("log-level")
			document.SetDecodeCodecs(commandCodecs(cmd))
			_, err := g.logger()
			return err
		},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	pf.StringVar(&g.logFormat, "log-format", "text", "log format: text or json")
	root.AddCommand(newVersionCmd(g), newValuesCmd(g), newCmpCmd(g), newKustomizeCmd(g), newGeneratorCmd(g))
	root.AddCommand(newLayersCmd(g))
	root.AddCommand(newAppsetCmd(g))
	root.AddCommand(newOperatorCmd(g))
	root.AddCommand(newCopySelfCmd(g))
	registerCompletions(root)
	return root
}
