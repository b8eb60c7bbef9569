package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/generator"
	"github.com/strata-dev/strata/internal/memlimit"
)

func newGeneratorCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "generator",
		Short: "ApplicationSet plugin generators: serve them, check their configuration, call them",
		Long: `Serve ApplicationSet plugin generators to Argo CD's ApplicationSet controller
over its HTTP contract (POST <baseUrl>/api/v1/getparams.execute), each backed
by a command or by parameter files, with bearer tokens, caching, limits and
metrics; check a server configuration; call a plugin as the controller does.`,
	}
	cmd.AddCommand(newGeneratorServeCmd(g), newGeneratorCheckCmd(g), newGeneratorCallCmd(g))
	return cmd
}

// loadGeneratorConfig reads --config and applies the address flags.
func loadGeneratorConfig(path, listen, metricsListen string) (*generator.Config, error) {
	if path == "" {
		return nil, errors.New("--config is required: the GeneratorConfig file to serve")
	}
	cfg, err := generator.LoadConfig(path)
	if err != nil {
		return nil, err
	}
	if listen != "" {
		cfg.Listen = listen
	}
	if metricsListen != "" {
		cfg.MetricsListen = metricsListen
	}
	return cfg, nil
}

func newGeneratorServeCmd(g *globals) *cobra.Command {
	var (
		config, listen, metricsListen string
		budgetFlag                    int64
	)
	cmd := &cobra.Command{
		Use:         "serve --config FILE [--listen ADDR] [--metrics-listen ADDR] [--memory-budget BYTES]",
		Annotations: map[string]string{serverAnnotation: "true"},
		Short:       "Serve the plugins of a GeneratorConfig to the ApplicationSet controller",
		Long: `Serve each plugin of the GeneratorConfig at <its path>/api/v1/getparams.execute.
Everything is checked before the server starts listening: the configuration,
the commands, the parameter files, the tokens and the TLS certificate.
Parameter files, token files and the certificate are reloaded when they
change. /healthz and /readyz answer on the listen address, /metrics too unless
a metrics address is set.

The outputs of the plugins' commands, and the answers built from them, are
held in a memory budget shared by all requests (--memory-budget; by default
derived from the container's memory limit): a request whose output does not
fit waits for room until its requestTimeout, one larger than the whole budget
is refused, both with 503 naming --memory-budget.

On SIGTERM /readyz fails for shutdownDelay while requests are still served,
then in-flight requests get shutdownGrace to finish.`,
		Example: `  strata generator serve --config examples/generator/gen.yaml
  strata generator serve --config gen.yaml --listen :4355 --metrics-listen :9090`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadGeneratorConfig(config, listen, metricsListen)
			if err != nil {
				return err
			}
			log, err := g.logger()
			if err != nil {
				return err
			}
			srv, err := generator.New(cfg, log)
			if err != nil {
				return err
			}
			logStart(log, "generator serve")
			var budget requestBudget
			if _, err := setMemoryLimit(log, "generator", func(l memlimit.Limit) []any {
				budget = memoryBudget(budgetFlag, l, generator.DefaultMemoryReserve)
				return []any{"requestMemoryBudget", budget.String(), "requestMemoryBudgetFrom", budget.from}
			}); err != nil {
				return err
			}
			srv.SetMemoryBudget(budget.bytes, budget.from)
			return srv.Run(cmd.Context())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&config, "config", "", "the GeneratorConfig file")
	fs.StringVar(&listen, "listen", "", "address of the plugin API, host:port or unix:PATH (overrides listen; default "+generator.DefaultListen+")")
	fs.StringVar(&metricsListen, "metrics-listen", "", "address of /metrics (overrides metricsListen; default: served on the listen address)")
	fs.Int64Var(&budgetFlag, "memory-budget", 0, "memory the requests may hold at once for their commands' output and the answers built from it, in bytes; "+
		"a request whose output does not fit waits for room until its requestTimeout, one larger than all of it is refused, both answered 503 "+
		"(0: the Go memory limit less 64 MiB, from $STRATA_MEMORY_LIMIT or the cgroup's limit, none without a limit; negative: none)")
	return cmd
}

func newGeneratorCheckCmd(g *globals) *cobra.Command {
	var config, output string
	cmd := &cobra.Command{
		Use:   "check --config FILE",
		Short: "Check a GeneratorConfig as serve would, without serving",
		Long: `Check the configuration, look up the commands, load the parameter files,
read the tokens and the TLS certificate, as serve does before it listens, and
print the plugins with the base URL path to put in each plugin's ConfigMap.`,
		Args: positional(),
		Example: `  strata generator check --config generators.yaml
  strata generator check --config generators.yaml -o json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "text" {
				if _, err := document.ParseFormat(output); err != nil {
					return fmt.Errorf("%w, or text", err)
				}
			}
			cfg, err := loadGeneratorConfig(config, "", "")
			if err != nil {
				return err
			}
			if _, err := generator.New(cfg, nil); err != nil {
				return err
			}
			dir := "."
			if abs, err := filepath.Abs(config); err == nil {
				dir = filepath.Dir(abs)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PLUGIN\tPATH\tBACKEND\tAUTH\tCACHE TTL\tCONCURRENCY")
			list := make([]any, 0, len(cfg.Plugins))
			for _, p := range cfg.Plugins {
				backend := "custom"
				switch b := p.Backend.(type) {
				case *generator.CommandBackend:
					backend = "command " + strings.Join(b.Argv, " ")
				case *generator.StaticBackend:
					backend = "static " + strings.Join(b.Files, " ")
				}
				auth := "none"
				switch {
				case p.Token != nil && p.Token.File != "":
					auth = "token from file " + relTo(dir, p.Token.File)
				case p.Token != nil:
					auth = "token from " + p.Token.String()
				}
				conc := "unbounded"
				if p.Concurrency > 0 {
					conc = fmt.Sprint(p.Concurrency)
				}
				path := p.Path
				if path == "" {
					path = "/"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, path, backend, auth, p.Cache.TTL, conc)
				list = append(list, map[string]any{"name": p.Name, "path": path, "backend": backend, "auth": auth,
					"cacheTTL": p.Cache.TTL.String(), "concurrency": int64(p.Concurrency)})
			}
			if output != "text" {
				f, _ := document.ParseFormat(output)
				return document.Encode(g.stdout, list, f)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "the GeneratorConfig file")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text (a table), yaml or json (concurrency 0: unbounded)")
	return cmd
}

func newGeneratorCallCmd(g *globals) *cobra.Command {
	var (
		c          generator.Client
		tokenFile  string
		tokenEnv   string
		appSet     string
		inputFile  string
		output     string
		maxRespond int64
	)
	cmd := &cobra.Command{
		Use:   "call BASEURL [--input FILE] [--token-file FILE | --token-env NAME] [--appset NAME]",
		Short: "Call a plugin as the ApplicationSet controller does and print the parameter sets",
		Long: `POST <BASEURL>/api/v1/getparams.execute with the headers, body and timeout the
ApplicationSet controller uses, and print the parameter sets the plugin
returned (YAML, or JSON with -o json). --input is a YAML or JSON file holding
the generator's input.parameters ("-" for stdin).`,
		Example: `  strata generator call http://localhost:4355/branches \
    --token-file examples/generator/token --input examples/generator/input.yaml
  strata generator call https://gen.example.com/clusters --token-env GEN_TOKEN -o json`,
		Args: positional("BASEURL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := document.ParseFormat(output)
			if err != nil {
				return err
			}
			c.BaseURL = args[0]
			c.MaxResponseBytes = maxRespond
			switch {
			case tokenFile != "" && tokenEnv != "":
				return errors.New("use --token-file or --token-env, not both")
			case tokenFile != "":
				data, err := os.ReadFile(tokenFile)
				if err != nil {
					return fmt.Errorf("--token-file: %w", err)
				}
				c.Token = strings.TrimRight(string(data), "\r\n")
			case tokenEnv != "":
				v, ok := os.LookupEnv(tokenEnv)
				if !ok {
					return fmt.Errorf("--token-env: %s is not set", tokenEnv)
				}
				c.Token = v
			}
			var input map[string]any
			if inputFile != "" {
				var data []byte
				if inputFile == "-" {
					data, err = document.ReadAll(g.stdin, generator.DefaultMaxRequestBytes, "<stdin>")
				} else {
					data, err = document.ReadFile(inputFile, generator.DefaultMaxRequestBytes)
				}
				if err != nil {
					return fmt.Errorf("--input: %w", err)
				}
				if input, err = document.Parse(data, inputFile); err != nil {
					return err
				}
			}
			log, err := g.logger()
			if err != nil {
				return err
			}
			c.Warn = func(m string) { log.Warn(m) }
			sets, err := c.GetParams(cmd.Context(), appSet, input)
			if err != nil {
				return err
			}
			list := make([]any, len(sets))
			for i, s := range sets {
				list[i] = s
			}
			return document.Encode(g.stdout, list, f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&tokenFile, "token-file", "", "file holding the bearer token")
	fs.StringVar(&tokenEnv, "token-env", "", "environment variable holding the bearer token")
	fs.StringVar(&appSet, "appset", "", "the applicationSetName to send")
	fs.StringVar(&inputFile, "input", "", "YAML or JSON file with the input parameters (- for stdin)")
	fs.DurationVar(&c.Timeout, "timeout", 30*time.Second, "request timeout, as the plugin ConfigMap's requestTimeout")
	fs.Int64Var(&maxRespond, "max-response-bytes", generator.DefaultMaxResponseBytes, "bound on the size of the answer")
	fs.StringVarP(&output, "output", "o", "yaml", "output format: yaml or json")
	return cmd
}

// relTo shows path relative to dir when it lies inside it.
func relTo(dir, path string) string {
	if rel, err := filepath.Rel(dir, path); err == nil && filepath.IsLocal(rel) {
		return rel
	}
	return path
}
