package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	runtimedebug "runtime/debug"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/manifest"
	"github.com/strata-dev/strata/internal/operator"
	"github.com/strata-dev/strata/internal/operator/debug"
	"github.com/strata-dev/strata/internal/operator/queue"
)

func newOperatorCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Run flant addon-operator modules and hooks, with or without a cluster",
		Long: `An addon operator compatible with flant/addon-operator: modules (Helm charts
with hooks and enabled scripts), global hooks, layered values and the config
store, run the way addon-operator runs them. Without a cluster (no kubeconfig,
not in a pod, or --local) every backend is local: the config store is a YAML
file (--config), releases go to a directory (--state-dir) and kubernetes
bindings watch a directory of object files (--objects).

Settings come from addon-operator's environment variables (MODULES_DIR or
ADDON_OPERATOR_MODULES_DIR, GLOBAL_HOOKS_DIR, ADDON_OPERATOR_NAMESPACE, ...);
a flag wins over its variable. See docs/operator.md.`,
	}
	cmd.AddCommand(newOperatorRunCmd(g), newOperatorRenderCmd(g))
	cmd.AddCommand(newOperatorQueueCmd(g), newOperatorHookCmd(g), newOperatorGlobalCmd(g), newOperatorModuleCmd(g))
	return cmd
}

// bindSettings reads the environment into s and binds the flags onto it,
// with the environment's values as the flags' defaults, so a flag given
// on the command line wins.
func bindSettings(fs *pflag.FlagSet, s *operator.Settings, envErr *error) {
	*s = operator.DefaultSettings()
	*envErr = s.FromEnv(os.LookupEnv)
	fs.StringVar(&s.ModulesDir, "modules-dir", s.ModulesDir, "module directories, ':'-separated ($MODULES_DIR, $ADDON_OPERATOR_MODULES_DIR)")
	fs.StringVar(&s.GlobalHooksDir, "global-hooks-dir", s.GlobalHooksDir, "global hooks and their openapi/ ($GLOBAL_HOOKS_DIR, $ADDON_OPERATOR_GLOBAL_HOOKS_DIR)")
	fs.IntVar(&s.UnnumberedModuleOrder, "unnumbered-modules-order", s.UnnumberedModuleOrder, "order of modules without an NNN- prefix ($UNNUMBERED_MODULE_ORDER)")
	fs.StringVar(&s.Namespace, "namespace", s.Namespace, "the operator's namespace, the releases' namespace ($ADDON_OPERATOR_NAMESPACE)")
	fs.StringVar(&s.ConfigMapName, "config-map", s.ConfigMapName, "name of the config store's ConfigMap ($ADDON_OPERATOR_CONFIG_MAP)")
	fs.StringVar(&s.CRDExtraLabels, "crd-extra-labels", s.CRDExtraLabels, "labels added to modules' CRDs, k=v,... ($ADDON_OPERATOR_CRD_EXTRA_LABELS)")
	fs.StringVar(&s.CRDFilterPrefixes, "crd-filters", s.CRDFilterPrefixes, "crds/ files with these name prefixes are skipped ($ADDON_OPERATOR_CRD_FILTER_PREFIXES)")
	fs.StringVar(&s.TempDir, "tmp-dir", s.TempDir, "directory for the files hooks exchange ($ADDON_OPERATOR_TMP_DIR)")
	fs.IntVar(&s.HelmHistoryMax, "helm-history-max", s.HelmHistoryMax, "revisions kept per release ($HELM_HISTORY_MAX)")
	fs.DurationVar(&s.HelmTimeout, "helm-timeout", s.HelmTimeout, "on a cluster, how long one Helm install, upgrade or uninstall may take, its hooks included (default 20m; $HELM_TIMEOUT)")
	fs.StringVar(&s.HelmIgnoreRelease, "helm-ignore-release", s.HelmIgnoreRelease, "a release never purged as unknown ($HELM_IGNORE_RELEASE)")
	fs.StringVar(&s.KubeConfig, "kube-config", s.KubeConfig, "kubeconfig of a cluster ($KUBE_CONFIG); none means local backends")
	fs.StringVar(&s.KubeContext, "kube-context", s.KubeContext, "kubeconfig context ($KUBE_CONTEXT)")
	fs.BoolVar(&s.Local, "local", s.Local, "use the local backends even when a cluster is configured")
	fs.StringVar(&s.ConfigFile, "config", s.ConfigFile, "local config store: a YAML file shaped like the ConfigMap's data (global, <moduleKey>, <moduleKey>Enabled), or the ConfigMap manifest itself")
	fs.StringVar(&s.ObjectsDir, "objects", s.ObjectsDir, "local objects: a directory of Kubernetes YAML files kubernetes bindings watch")
	fs.StringVar(&s.StateDir, "state-dir", s.StateDir, "local release store directory (default <tmp-dir>/releases)")
	fs.DurationVar(&s.Retry, "retry", s.Retry, "first delay before a failed task runs again, doubling up to --retry-max (default 5s)")
	fs.DurationVar(&s.RetryMax, "retry-max", s.RetryMax, "longest delay between retries (default 30s)")
	fs.DurationVar(&s.HookTimeout, "hook-timeout", s.HookTimeout, "time limit of one hook run (default 10m)")
	bindCodecs(fs, &s.Codecs, "fast-codecs", fmt.Sprintf(fastCodecsUsage, "the documents the modules' charts render"))
}

// operatorLogger builds the logger: the root's --log-level wins over
// $LOG_LEVEL, --log-type over $LOG_TYPE.
func operatorLogger(cmd *cobra.Command, g *globals, s *operator.Settings) (*slog.Logger, error) {
	level := s.LogLevel
	if f := cmd.Flags().Lookup("log-level"); f != nil && f.Changed {
		level = g.logLevel
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q ($LOG_LEVEL or --log-level): use debug, info, warn or error", level)
	}
	typ := s.LogType
	if f := cmd.Flags().Lookup("log-format"); f != nil && f.Changed {
		typ = g.logFormat
	}
	switch strings.ToLower(typ) {
	case "text", "color", "", "json":
		return g.newLogger(lv, typ, s.LogNoTime)
	}
	return nil, fmt.Errorf("log type %q ($LOG_TYPE or --log-type): use text, json or color", typ)
}

// operatorGCPercent is `operator run`'s GOGC when the environment sets none.
const operatorGCPercent = 50

func newOperatorRunCmd(g *globals) *cobra.Command {
	var s operator.Settings
	var envErr error
	cmd := &cobra.Command{
		Use:         "run",
		Annotations: map[string]string{serverAnnotation: "true"},
		Short:       "Run the operator: start-up, converge, then react to changes until stopped",
		Long: `Run the operator the way addon-operator runs: global onStartup hooks,
kubernetes and schedule bindings, 'reload all modules', then the main loop
reacting to events, values and config changes. Serves /metrics, /healthz and
/readyz (ready after the first converge) on ADDON_OPERATOR_LISTEN_ADDRESS:PORT
and the debug API on DEBUG_UNIX_SOCKET. Stops on SIGINT or SIGTERM.

With ADDON_OPERATOR_HA=true (--ha) replicas elect a leader through the Lease
addon-operator-leader-election in ADDON_OPERATOR_NAMESPACE; only the leader
works. On SIGTERM the leader finishes the task in hand, stops and gives the
Lease up; a leader that loses the Lease exits non-zero to restart clean.`,
		Example: `  MODULES_DIR=modules GLOBAL_HOOKS_DIR=global-hooks ADDON_OPERATOR_NAMESPACE=addons \
    strata operator run --config config.yaml --objects objects/ --debug-unix-socket /tmp/op.sock`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if envErr != nil {
				return envErr
			}
			log, err := operatorLogger(cmd, g, &s)
			if err != nil {
				return err
			}
			logStart(log, "operator run")
			routeClientLogs(log)
			if _, err := setMemoryLimit(log, "operator", nil); err != nil {
				return err
			}
			if _, set := os.LookupEnv("GOGC"); !set {
				// A long-running process with a small live heap: the
				// collector runs twice as often as Go's default for about
				// 4 MB less resident memory (GOGC overrides it).
				runtimedebug.SetGCPercent(operatorGCPercent)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			e, err := operator.New(s, log)
			if err != nil {
				return err
			}
			return e.Run(ctx)
		},
	}
	fs := cmd.Flags()
	bindSettings(fs, &s, &envErr)
	bindWebhookFlags(fs, &s)
	fs.StringVar(&s.ListenAddress, "listen-address", s.ListenAddress, "address of /metrics, /healthz, /readyz ($ADDON_OPERATOR_LISTEN_ADDRESS)")
	fs.StringVar(&s.ListenPort, "listen-port", s.ListenPort, "port of /metrics, /healthz, /readyz; empty disables them ($ADDON_OPERATOR_LISTEN_PORT)")
	// addon-operator's names of the two.
	fs.StringVar(&s.ListenAddress, "prometheus-listen-address", s.ListenAddress, "the same as --listen-address (addon-operator's name)")
	fs.StringVar(&s.ListenPort, "prometheus-listen-port", s.ListenPort, "the same as --listen-port (addon-operator's name)")
	fs.StringVar(&s.MetricsPrefix, "prometheus-metrics-prefix", s.MetricsPrefix, "prefix of the operator's metrics ($ADDON_OPERATOR_PROMETHEUS_METRICS_PREFIX)")
	fs.StringVar(&s.DebugUnixSocket, "debug-unix-socket", s.DebugUnixSocket, "debug API socket; empty disables it ($DEBUG_UNIX_SOCKET)")
	fs.BoolVar(&s.ReloadOnChange, "reload-on-change", s.ReloadOnChange, "reload a module when its files change; global hooks still need a restart ($STRATA_RELOAD_ON_CHANGE)")
	fs.StringVar(&s.DebugHTTPAddr, "debug-http-addr", s.DebugHTTPAddr, "also serve the debug API over HTTP at host:port, unauthenticated: bind to loopback ($DEBUG_HTTP_SERVER_ADDR)")
	fs.StringVar(&s.LogType, "log-type", s.LogType, "log format: text, json or color ($LOG_TYPE)")
	fs.BoolVar(&s.LogNoTime, "log-no-time", s.LogNoTime, "no timestamps in logs ($LOG_NO_TIME)")
	fs.BoolVar(&s.NoQueueActionMetrics, "no-queue-action-metrics", s.NoQueueActionMetrics, "do not export tasks_queue_action_duration_seconds ($QUEUE_ACTIONS_METRICS=no)")
	fs.Float32Var(&s.KubeClientQPS, "kube-client-qps", s.KubeClientQPS, "requests per second each cluster client may make; negative: no limit ($KUBE_CLIENT_QPS)")
	fs.IntVar(&s.KubeClientBurst, "kube-client-burst", s.KubeClientBurst, "burst of requests above --kube-client-qps ($KUBE_CLIENT_BURST)")
	fs.BoolVar(&s.HA, "ha", s.HA, "elect a leader among replicas through the Lease "+operator.LeaseName+"; only the leader works ($ADDON_OPERATOR_HA=true)")
	fs.StringVar(&s.PodName, "pod-name", s.PodName, "this replica's pod name, part of its Lease identity; required with --ha ($ADDON_OPERATOR_POD)")
	fs.DurationVar(&s.LeaseDuration, "ha-lease-duration", s.LeaseDuration, "how long a standby waits for a leader that stopped renewing (default 35s)")
	fs.DurationVar(&s.RenewDeadline, "ha-renew-deadline", s.RenewDeadline, "how long the leader tries to renew before it gives up and exits (default 30s)")
	fs.DurationVar(&s.RetryPeriod, "ha-retry-period", s.RetryPeriod, "how often the Lease is tried and renewed (default 10s)")
	fs.DurationVar(&s.ShutdownGrace, "shutdown-grace", s.ShutdownGrace, "with --ha: how long the task in hand may finish after SIGTERM before the Lease is given up (default 30s)")
	return cmd
}

// clientLogs makes routeClientLogs take effect once per process: klog's
// logger may not change while clients log.
var clientLogs sync.Once

// routeClientLogs sends client-go's own logs (leader election, watches)
// through the operator's logger, so that LOG_TYPE=json holds for them too.
func routeClientLogs(log *slog.Logger) {
	clientLogs.Do(func() { klog.SetSlogLogger(log) })
}

func newOperatorRenderCmd(g *globals) *cobra.Command {
	var s operator.Settings
	var envErr error
	var valuesOnly bool
	var output string
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Start up, converge once in a private workspace and print what each module renders",
		Long: `Run start-up and one converge with local backends in a private workspace
(global hooks, module discovery with enabled scripts, module hooks, Helm
rendering) and print each enabled module's manifests (--values-only: the values
Helm got), then, as YAML comments, the disabled modules with the reason and the
hooks that ran, in order. Nothing is written outside the workspace: the config
file is read, never written back. Exits non-zero on the first failure, with the
hook's stderr.`,
		Example: `  strata operator render --modules-dir modules --global-hooks-dir global-hooks --config config.yaml
  MODULES_DIR=modules strata operator render --values-only`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if envErr != nil {
				return envErr
			}
			log, err := operatorLogger(cmd, g, &s)
			if err != nil {
				return err
			}
			var format document.Format
			if output != "text" {
				if format, err = document.ParseFormat(output); err != nil {
					return fmt.Errorf("%w (or text)", err)
				}
			}
			res, err := operator.Render(cmd.Context(), s, log)
			if res != nil {
				var werr error
				if output == "text" {
					werr = res.Write(g.stdout, valuesOnly)
				} else {
					werr = writeRenderData(g, res, format)
				}
				if werr != nil && err == nil {
					err = werr
				}
			}
			return err
		},
	}
	fs := cmd.Flags()
	bindSettings(fs, &s, &envErr)
	fs.BoolVar(&valuesOnly, "values-only", false, "print the values each module's chart got instead of its manifests")
	fs.StringVarP(&output, "output", "o", "text", "output format: text (the manifests as a YAML stream, the rest as comments), yaml or json (one object: modules with their values and manifests, disabled modules, lifecycle)")
	return cmd
}

// writeRenderData prints operator render's result as one object: each
// module's values and manifests (parsed), the disabled modules with their
// reason, and the lifecycle in order.
func writeRenderData(g *globals, res *operator.RenderResult, f document.Format) error {
	type module struct {
		Name      string `json:"name"`
		Values    any    `json:"values"`
		Manifests []any  `json:"manifests"`
	}
	type disabled struct {
		Name   string `json:"name"`
		Reason string `json:"reason"`
	}
	out := struct {
		Modules   []module   `json:"modules"`
		Disabled  []disabled `json:"disabled"`
		Lifecycle []string   `json:"lifecycle"`
	}{Modules: []module{}, Disabled: []disabled{}, Lifecycle: res.History}
	for _, m := range res.Modules {
		var vals any
		if err := json.Unmarshal(m.Values, &vals); err != nil {
			return fmt.Errorf("module %s: its values: %w", m.Name, err)
		}
		docs, err := manifest.Parse(m.Manifests, "module "+m.Name, manifest.DefaultLimits())
		if err != nil {
			return err
		}
		mod := module{Name: m.Name, Values: vals, Manifests: []any{}}
		for _, d := range docs {
			mod.Manifests = append(mod.Manifests, d.Value)
		}
		out.Modules = append(out.Modules, mod)
	}
	for _, d := range res.Disabled {
		out.Disabled = append(out.Disabled, disabled{d.Name, d.Reason})
	}
	if out.Lifecycle == nil {
		out.Lifecycle = []string{}
	}
	if f == document.YAML {
		return document.EncodeValue(g.stdout, out)
	}
	return document.EncodeJSONValue(g.stdout, out)
}

// debugFlags are the flags of the debug commands.
type debugFlags struct {
	socket  string
	output  string
	explain bool
	global  bool
}

// The optional flags of a debug command.
const (
	withExplain = 1 << iota // --explain
	withGlobal              // --global
)

func (f *debugFlags) bind(fs *pflag.FlagSet, with int) {
	socket := operator.DefaultDebugUnixSocket
	if v, ok := os.LookupEnv("DEBUG_UNIX_SOCKET"); ok {
		socket = v
	}
	fs.StringVar(&f.socket, "debug-unix-socket", socket, "the running operator's debug socket ($DEBUG_UNIX_SOCKET)")
	fs.StringVarP(&f.output, "output", "o", "text", "output format: text, yaml or json")
	if with&withExplain != 0 {
		fs.BoolVar(&f.explain, "explain", false, "for every key, the layer that set it and what it overrode")
	}
	if with&withGlobal != 0 {
		fs.BoolVarP(&f.global, "global", "g", false, "print the global section beside the module's, as addon-operator's -g")
	}
}

// debugCmd builds a debug command asking the socket for the path that
// path(args) returns.
func debugCmd(g *globals, use, short string, args cobra.PositionalArgs, with int, path func(args []string) string) *cobra.Command {
	var f debugFlags
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  args,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch f.output {
			case "text", "yaml", "json":
			default:
				return fmt.Errorf("-o %q: use text, yaml or json", f.output)
			}
			p := path(args) + ".json"
			switch {
			case f.explain:
				p += "?explain=true"
			case f.global:
				p += "?global=true"
			}
			data, err := debug.Get(cmd.Context(), f.socket, p)
			if err != nil {
				return err
			}
			return printDebug(g.stdout, data, f.output, p)
		},
	}
	f.bind(cmd.Flags(), with)
	if strings.HasSuffix(use, " NAME") && strings.Contains(path([]string{"x"}), "/module/") {
		cmd.ValidArgsFunction = completeModules(&f)
	}
	return cmd
}

func newOperatorQueueCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "queue", Short: "Inspect the running operator's task queues"}
	cmd.AddCommand(
		debugCmd(g, "list", "List the tasks of every queue", positional(), 0, func([]string) string { return "/queue/list" }),
		debugCmd(g, "history", "List the last task runs (500), oldest first, with their outcome and duration", positional(), 0, func([]string) string { return "/queue/history" }),
	)
	setDebugExamples(cmd)
	return cmd
}

func newOperatorHookCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "hook", Short: "Inspect the running operator's hooks"}
	cmd.AddCommand(debugCmd(g, "list", "List the hooks (global, then those of modules enabled once) with their parsed configuration (-o yaml|json)", positional(), 0, func([]string) string { return "/hook/list" }))
	setDebugExamples(cmd)
	return cmd
}

func newOperatorGlobalCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "global", Short: "Inspect the running operator's global values"}
	cmd.AddCommand(
		debugCmd(g, "list", "List the global hooks", positional(), 0, func([]string) string { return "/global/list" }),
		debugCmd(g, "values", "Print the global values (--explain: where each key came from)", positional(), withExplain, func([]string) string { return "/global/values" }),
		debugCmd(g, "patches", "Print the JSON patches global hooks made, in order", positional(), 0, func([]string) string { return "/global/patches" }),
		debugCmd(g, "config", "Print the global section of the config store", positional(), 0, func([]string) string { return "/global/config" }),
		debugCmd(g, "snapshots", "Print the snapshots of global hooks' kubernetes bindings", positional(), 0, func([]string) string { return "/global/snapshots" }),
	)
	setDebugExamples(cmd)
	return cmd
}

func newOperatorModuleCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "module", Short: "Inspect the running operator's modules"}
	one := func(what string) func(args []string) string {
		return func(args []string) string { return "/module/" + args[0] + "/" + what }
	}
	cmd.AddCommand(
		debugCmd(g, "list", "List the modules, enabled or not, and why", positional(), 0, func([]string) string { return "/module/list" }),
		debugCmd(g, "values NAME", "Print a module's values (--explain: where each key came from; --global: with the global values)", positional("NAME"), withExplain|withGlobal, one("values")),
		debugCmd(g, "patches NAME", "Print the JSON patches a module's hooks made, in order", positional("NAME"), 0, one("patches")),
		debugCmd(g, "config NAME", "Print a module's section of the config store (--global: with the global section)", positional("NAME"), withGlobal, one("config")),
		debugCmd(g, "render NAME", "Render a module's chart with its current values", positional("NAME"), 0, one("render")),
		debugCmd(g, "snapshots NAME", "Print the snapshots of a module's hooks' kubernetes bindings", positional("NAME"), 0, one("snapshots")),
	)
	setDebugExamples(cmd)
	return cmd
}

// setDebugExamples gives each debug command under group an example: the
// command on the running operator's default socket, then -o yaml on another.
// A module is named as in examples/operator/basic.
func setDebugExamples(group *cobra.Command) {
	for _, c := range group.Commands() {
		line := "strata operator " + group.Name() + " " + c.Name()
		if strings.Contains(c.Use, " NAME") {
			line += " echo-server"
		}
		c.Example = "  " + line + "\n  " + line + " -o yaml --debug-unix-socket /tmp/op.sock"
	}
}

// printDebug prints a debug API answer (JSON) as format.
func printDebug(w io.Writer, data []byte, format, path string) error {
	switch format {
	case "json":
		var buf bytes.Buffer
		if err := json.Indent(&buf, data, "", "  "); err != nil {
			return err
		}
		buf.WriteByte('\n')
		_, err := w.Write(buf.Bytes())
		return err
	case "yaml":
		out, err := yaml.JSONToYAML(data)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	}
	return printDebugText(w, data, path)
}

// printDebugText prints the answers that have a table form as tables and
// the rest as YAML.
func printDebugText(w io.Writer, data []byte, path string) error {
	switch {
	case strings.HasPrefix(path, "/queue/list"):
		var qs []operator.QueueView
		if err := json.Unmarshal(data, &qs); err != nil {
			return err
		}
		return operator.WriteQueuesText(w, qs)
	case strings.HasPrefix(path, "/queue/history"):
		var runs []queue.RunInfo
		if err := json.Unmarshal(data, &runs); err != nil {
			return err
		}
		return operator.WriteHistoryText(w, runs)
	case strings.HasPrefix(path, "/hook/list"):
		var hs []operator.HookView
		if err := json.Unmarshal(data, &hs); err != nil {
			return err
		}
		return operator.WriteHooksText(w, hs)
	case strings.HasPrefix(path, "/module/list"):
		var ms []operator.ModuleView
		if err := json.Unmarshal(data, &ms); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tORDER\tSTATE\tREASON")
		for _, m := range ms {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", m.Name, m.Order, m.State, m.Reason)
		}
		return tw.Flush()
	case strings.Contains(path, "explain=true"):
		var rows []operator.ExplainRow
		if err := json.Unmarshal(data, &rows); err != nil {
			return err
		}
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].Path < rows[j].Path })
		return operator.WriteExplainText(w, rows)
	case strings.HasSuffix(strings.TrimSuffix(path, ".json"), "/render"):
		var s string
		if err := json.Unmarshal(data, &s); err == nil {
			_, err := io.WriteString(w, s)
			return err
		}
	}
	out, err := yaml.JSONToYAML(data)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}
