package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/tarball"
	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/params"
	"github.com/strata-dev/strata/internal/values"
)

func newCmpCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cmp",
		Short: "Argo CD config management plugins: serve them as a sidecar, run them locally",
		Long: `Serve a config management plugin to Argo CD's repo-server over its gRPC
protocol, or run the same plugin on a local checkout with no Argo CD: generate
its manifests, print its parameters announcement, check its discovery rules.`,
	}
	cmd.AddCommand(newCmpServeCmd(g), newCmpGenerateCmd(g), newCmpParametersCmd(g), newCmpMatchCmd(g))
	return cmd
}

// pluginFlags choose and tune the plugin: a plugin.yaml (--config) or a
// built-in plugin (--builtin).
type pluginFlags struct {
	config  string
	builtin string
	timeout time.Duration
	helm    helmFlags
	metrics *cmpserver.Metrics // cmp serve --metrics-listen: record the commands
}

// helmFlags tune the built-in Helm plugin as a long-running sidecar.
type helmFlags struct {
	bound              bool // the flags exist on this command
	chartCacheBytes    int64
	documentCacheBytes int64
	maxConcurrent      int
}

// bindHelm adds the sidecar's Helm tuning flags (cmp serve only).
func (f *pluginFlags) bindHelm(fs *pflag.FlagSet) {
	f.helm.bound = true
	fs.Int64Var(&f.helm.chartCacheBytes, "helm-chart-cache-bytes", 256<<20, "with --builtin helm: size of the loaded charts kept by content digest (0 keeps none)")
	fs.Int64Var(&f.helm.documentCacheBytes, "helm-document-cache-bytes", 64<<20, "with --builtin helm: size of the rendered documents kept by content digest (0 keeps none)")
	fs.IntVar(&f.helm.maxConcurrent, "helm-max-concurrent", 0, "with --builtin helm: renders running at once (0: one per CPU)")
}

// options maps the flags onto the plugin's options (where 0 means the
// default and a negative number none); unbound flags leave the defaults.
func (h helmFlags) options() helmplugin.Options {
	none := func(n int64) int64 {
		if n <= 0 {
			return -1
		}
		return n
	}
	o := helmplugin.Options{MaxConcurrent: max(h.maxConcurrent, 0)}
	if h.bound {
		o.ChartCacheBytes = none(h.chartCacheBytes)
		o.DocumentCacheBytes = none(h.documentCacheBytes)
	}
	return o
}

func (f *pluginFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "the plugin's plugin.yaml (ConfigManagementPlugin)")
	fs.StringVar(&f.builtin, "builtin", "", "a built-in plugin instead of a plugin.yaml: helm (renders Helm charts in-process, like Argo CD's Helm source)")
	fs.DurationVar(&f.timeout, "timeout", 0, "bound on each command the plugin runs (for --builtin helm: on each render), besides the request deadline (0: none)")
}

func (f *pluginFlags) plugin(g *globals) (cmpserver.Plugin, error) {
	log, err := g.logger()
	if err != nil {
		return nil, err
	}
	switch {
	case f.config != "" && f.builtin != "":
		return nil, errors.New("--config and --builtin are mutually exclusive: run either a plugin.yaml or a built-in plugin")
	case f.builtin != "":
		if f.builtin != helmplugin.Name {
			return nil, fmt.Errorf("--builtin %q: unknown built-in plugin; the built-in plugins are: %s", f.builtin, helmplugin.Name)
		}
		opts := f.helm.options()
		opts.Timeout, opts.Logger = f.timeout, log
		return helmPlugin{helmplugin.New(opts)}, nil
	case f.config == "":
		return nil, errors.New("--config or --builtin is required: the plugin.yaml to run, or a built-in plugin (helm)")
	}
	cfg, err := cmpserver.LoadConfig(f.config)
	if err != nil {
		return nil, err
	}
	for _, w := range cfg.Warnings {
		log.Warn("plugin configuration", "file", f.config, "warning", w)
	}
	opts := cmpserver.CommandOptions{Timeout: f.timeout, Env: os.Environ(), Logger: log}
	if f.metrics != nil {
		opts.Observe = f.metrics.ObserveCommand
	}
	return cmpserver.NewCommandPlugin(cfg, opts), nil
}

// helmPlugin serves the built-in Helm plugin: it needs no plugin.yaml,
// matches directories holding a Chart.yaml, and listens on helm.sock.
type helmPlugin struct{ *helmplugin.Plugin }

var _ cmpserver.Plugin = helmPlugin{}

func (helmPlugin) Info() cmpserver.Info {
	return cmpserver.Info{Name: helmplugin.Name, DiscoveryConfigured: true}
}

func newCmpServeCmd(g *globals) *cobra.Command {
	var (
		flags      pluginFlags
		socketDir  string
		cacheDir   string
		cacheBytes int64
		grace      time.Duration
		metrics    string
	)
	cmd := &cobra.Command{
		Use:   "serve --config PLUGIN.yaml|--builtin helm [--socket-dir DIR] [--metrics-listen ADDR]",
		Short: "Serve a plugin to Argo CD's repo-server (run as a sidecar)",
		Long: `Serve the plugin on the unix socket Argo CD's repo-server looks for:
<socket dir>/<name>.sock, or <name>-<version>.sock when the plugin has a version.
The built-in Helm plugin (--builtin helm) listens on helm.sock.
The socket directory defaults to $ARGOCD_PLUGINSOCKFILEPATH, else
/home/argocd/cmp-server/plugins. Repositories are cached by checksum, so a
repeated request does not unpack the same tarball again. The built-in Helm
plugin also keeps the charts it loaded and the documents it read, by the
SHA-256 of their contents, handing each render a private copy.

With --metrics-listen ADDR, Prometheus metrics are served on ADDR/metrics,
with /healthz and /readyz (see docs/cmp.md).

On SIGTERM the server stops accepting requests, lets in-flight requests finish
(up to --shutdown-grace) and removes its socket.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if metrics != "" {
				flags.metrics = cmpserver.NewMetrics()
			}
			p, err := flags.plugin(g)
			if err != nil {
				return err
			}
			log, err := g.logger()
			if err != nil {
				return err
			}
			if socketDir == "" {
				socketDir = os.Getenv("ARGOCD_PLUGINSOCKFILEPATH")
			}
			if socketDir == "" {
				socketDir = cmpserver.DefaultSocketDir
			}
			if cacheDir == "" {
				cacheDir = filepath.Join(os.TempDir(), "strata-cmp-"+p.Info().Name)
			}
			store, err := tarball.NewStore(cacheDir, cacheBytes)
			if err != nil {
				return err
			}
			srv := &cmpserver.Server{Plugin: p, Store: store, ShutdownGrace: grace, Logger: log, Metrics: flags.metrics}
			if metrics == "" {
				return srv.Serve(cmd.Context(), filepath.Join(socketDir, p.Info().SocketName()))
			}
			return serveWithMetrics(cmd.Context(), srv, filepath.Join(socketDir, p.Info().SocketName()), metrics, log)
		},
	}
	fs := cmd.Flags()
	flags.bind(fs)
	flags.bindHelm(fs)
	fs.StringVar(&socketDir, "socket-dir", "", "directory of the plugin socket (default $ARGOCD_PLUGINSOCKFILEPATH or "+cmpserver.DefaultSocketDir+")")
	fs.StringVar(&cacheDir, "cache-dir", "", "directory of the repository cache (default a directory under $TMPDIR)")
	fs.Int64Var(&cacheBytes, "cache-bytes", 2<<30, "size of the repository cache; 0 keeps no repository between requests (concurrent identical requests still share one extraction)")
	fs.DurationVar(&grace, "shutdown-grace", 30*time.Second, "how long in-flight requests may run after SIGTERM")
	fs.StringVar(&metrics, "metrics-listen", "", "serve Prometheus /metrics, /healthz and /readyz on this address (host:port, or unix:PATH); off when empty")
	return cmd
}

// localFlags describe a local run: the application, its repository, its
// parameters and environment.
type localFlags struct {
	plugin      pluginFlags
	repoRoot    string
	paramsFile  string
	params      []string
	arrayParams []string
	mapParams   []string
	env         []string
	appName     string
	namespace   string
	kubeVersion string
	apiVersions []string
	argocdEnv   bool
}

func (f *localFlags) bind(fs *pflag.FlagSet) {
	f.plugin.bind(fs)
	fs.StringVar(&f.repoRoot, "repo-root", "", "the repository root (default: the enclosing git work tree, else APPDIR)")
	fs.StringVar(&f.paramsFile, "parameters", "", "parameters in ARGOCD_APP_PARAMETERS JSON: [{\"name\":...,\"string\":...}]")
	fs.StringArrayVar(&f.params, "param", nil, "a string parameter: name=value")
	fs.StringArrayVar(&f.arrayParams, "param-array", nil, "an array parameter: name=v1,v2 (repeat the flag to append)")
	fs.StringArrayVar(&f.mapParams, "param-map", nil, "a map parameter entry: name.key=value")
	fs.StringArrayVar(&f.env, "env", nil, "an Application plugin env entry NAME=VALUE, passed as ARGOCD_ENV_NAME")
	fs.StringVar(&f.appName, "app-name", "", "the Application's name (default: the directory's name)")
	fs.StringVar(&f.namespace, "namespace", "default", "the Application's destination namespace")
	fs.StringVar(&f.kubeVersion, "kube-version", "", "KUBE_VERSION as the repo-server would set it")
	fs.StringArrayVar(&f.apiVersions, "api-versions", nil, "KUBE_API_VERSIONS entries")
	fs.BoolVar(&f.argocdEnv, "argocd-env", false, "with --builtin: run inside another plugin's command, in place: the application, its parameters and the build environment come from the environment Argo CD gives plugin commands (ARGOCD_APP_*, ARGOCD_APP_PARAMETERS, KUBE_*), the repository root from ARGOCD_APP_SOURCE_PATH")
}

func (f *localFlags) local(g *globals, appDir string) (*cmpserver.Local, error) {
	p, err := f.plugin.plugin(g)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(appDir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", appDir)
	}
	root := f.repoRoot
	if root == "" {
		root = gitRoot(appDir)
	}
	ps, err := f.parameters()
	if err != nil {
		return nil, err
	}
	l := &cmpserver.Local{
		Plugin: p, RepoRoot: root, AppDir: appDir, AppName: f.appName, Namespace: f.namespace,
		KubeVersion: f.kubeVersion, APIVersions: f.apiVersions, Parameters: ps,
	}
	for _, e := range f.env {
		name, value, ok := strings.Cut(e, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--env %q: write NAME=VALUE", e)
		}
		l.Env = append(l.Env, "ARGOCD_ENV_"+name+"="+value)
	}
	return l, nil
}

// run prepares a local request for the application in dir, as the sidecar
// would receive it, calls fn, and removes the private copy. With
// --argocd-env the request is read from the environment instead, and the
// plugin runs in place.
func (f *localFlags) run(cmd *cobra.Command, g *globals, dir string, fn func(cmpserver.Plugin, *params.Request) error) error {
	if f.argocdEnv {
		if f.plugin.builtin == "" {
			return errors.New("--argocd-env needs --builtin: a plugin.yaml's commands already get Argo CD's environment")
		}
		p, err := f.plugin.plugin(g)
		if err != nil {
			return err
		}
		req, err := f.envRequest(dir)
		if err != nil {
			return err
		}
		return fn(p, req)
	}
	l, err := f.local(g, dir)
	if err != nil {
		return err
	}
	req, cleanup, err := l.Request(cmd.Context())
	if err != nil {
		return err
	}
	defer cleanup()
	return fn(l.Plugin, req)
}

// envRequest builds a request from the environment Argo CD gives a
// plugin's commands, for a built-in plugin run by another plugin's
// command: the application directory is dir (the command's working
// directory, usually "."), the repository root is dir less
// ARGOCD_APP_SOURCE_PATH (or --repo-root), the parameters are
// ARGOCD_APP_PARAMETERS followed by the --param flags.
func (f *localFlags) envRequest(dir string) (*params.Request, error) {
	app, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(app); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	root := f.repoRoot
	if root == "" {
		root = app
		if src := filepath.Clean(filepath.FromSlash(os.Getenv("ARGOCD_APP_SOURCE_PATH"))); src != "." && src != "" {
			suffix := string(filepath.Separator) + src
			if !filepath.IsLocal(src) || !strings.HasSuffix(app, suffix) {
				return nil, fmt.Errorf("--argocd-env: the directory %s does not end in ARGOCD_APP_SOURCE_PATH %q; run in the application's directory, or give --repo-root", app, src)
			}
			root = strings.TrimSuffix(app, suffix)
		}
	}
	var ps []params.Parameter
	if raw := os.Getenv(params.ParametersVar); raw != "" {
		if ps, err = params.ParseParameters([]byte(raw), params.ParametersVar); err != nil {
			return nil, err
		}
	}
	more, err := f.parameters()
	if err != nil {
		return nil, err
	}
	req := &params.Request{AppName: os.Getenv("ARGOCD_APP_NAME"), RepoRoot: root, AppPath: app, Parameters: append(ps, more...)}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == params.ParametersVar || strings.HasPrefix(name, "PARAM_") {
			continue
		}
		if strings.HasPrefix(name, "ARGOCD_APP_") || strings.HasPrefix(name, "ARGOCD_ENV_") || name == "KUBE_VERSION" || name == "KUBE_API_VERSIONS" {
			req.Env = append(req.Env, kv)
		}
	}
	return req, nil
}

// gitRoot returns the work tree enclosing dir, or dir. It runs git only to
// ask; a missing git is no error.
func gitRoot(dir string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return dir
	}
	return strings.TrimSpace(string(out))
}

// parameters reads --parameters and the single-parameter flags, in that order.
func (f *localFlags) parameters() ([]params.Parameter, error) {
	var ps []params.Parameter
	if f.paramsFile != "" {
		data, err := os.ReadFile(f.paramsFile)
		if err != nil {
			return nil, fmt.Errorf("reading --parameters: %w", err)
		}
		if ps, err = params.ParseParameters(data, f.paramsFile); err != nil {
			return nil, err
		}
	}
	index := map[string]int{}
	get := func(name string) *params.Parameter {
		if i, ok := index[name]; ok {
			return &ps[i]
		}
		ps = append(ps, params.Parameter{Name: name})
		index[name] = len(ps) - 1
		return &ps[len(ps)-1]
	}
	for _, a := range f.params {
		name, value, ok := strings.Cut(a, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--param %q: write name=value", a)
		}
		get(name).String = &value
	}
	for _, a := range f.arrayParams {
		name, value, ok := strings.Cut(a, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--param-array %q: write name=v1,v2", a)
		}
		p := get(name)
		p.Array = append(p.Array, strings.Split(value, ",")...)
	}
	for _, a := range f.mapParams {
		kv, value, ok := strings.Cut(a, "=")
		name, key, ok2 := strings.Cut(kv, ".")
		if !ok || !ok2 || name == "" || key == "" {
			return nil, fmt.Errorf("--param-map %q: write name.key=value", a)
		}
		p := get(name)
		if p.Map == nil {
			p.Map = map[string]string{}
		}
		p.Map[key] = value
	}
	return ps, nil
}

func newCmpGenerateCmd(g *globals) *cobra.Command {
	var (
		flags  localFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "generate APPDIR --config PLUGIN.yaml|--builtin helm [--parameters FILE] [--param name=value]... [--env NAME=VALUE]...",
		Short: "Run a plugin's init and generate commands on a local application, as the sidecar would",
		Long: `Run the plugin on APPDIR exactly as the sidecar runs it for Argo CD: the
repository is copied into a private directory (your checkout is never
written to), the commands get the environment Argo CD would give them
(ARGOCD_APP_*, KUBE_*, ARGOCD_ENV_*, ARGOCD_APP_PARAMETERS, PARAM_*), and
their output is parsed and checked as the repo-server would. Prints the
manifests as a YAML stream (or a JSON list with -o json).

--builtin helm renders APPDIR's Helm chart in-process instead, as Argo CD's
Helm source would (see docs/helm.md). With --argocd-env it runs in place,
inside another plugin's command, reading the application from the
environment Argo CD gives that command: a plugin.yaml can wrap it, say with
a kustomize pass after Helm.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return flags.run(cmd, g, args[0], func(p cmpserver.Plugin, req *params.Request) error {
				manifests, err := p.Generate(cmd.Context(), req)
				if err != nil {
					return err
				}
				return writeManifests(g, manifests, output)
			})
		},
	}
	flags.bind(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml (a stream) or json (a list)")
	return cmd
}

func writeManifests(g *globals, manifests []string, output string) error {
	f, err := values.ParseFormat(output)
	if err != nil {
		return err
	}
	list := make([]any, 0, len(manifests))
	for i, m := range manifests {
		v, _, err := values.Loader{JSON: true}.ParseAny([]byte(m), fmt.Sprintf("manifest %d", i))
		if err != nil {
			return err
		}
		list = append(list, v)
	}
	if f == values.JSON {
		return values.Encode(g.stdout, list, f)
	}
	for _, v := range list {
		if _, err := fmt.Fprintln(g.stdout, "---"); err != nil {
			return err
		}
		if err := values.Encode(g.stdout, v, values.YAML); err != nil {
			return err
		}
	}
	return nil
}

func newCmpParametersCmd(g *globals) *cobra.Command {
	var flags localFlags
	cmd := &cobra.Command{
		Use:   "parameters APPDIR --config PLUGIN.yaml|--builtin helm",
		Short: "Print the plugin's parameters announcement for an application, as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return flags.run(cmd, g, args[0], func(p cmpserver.Plugin, req *params.Request) error {
				anns, err := p.Announce(cmd.Context(), req)
				if err != nil {
					return err
				}
				if anns == nil {
					anns = []params.Announcement{}
				}
				return values.EncodeJSONValue(g.stdout, anns)
			})
		},
	}
	flags.bind(cmd.Flags())
	return cmd
}

func newCmpMatchCmd(g *globals) *cobra.Command {
	var flags localFlags
	cmd := &cobra.Command{
		Use:   "match APPDIR --config PLUGIN.yaml|--builtin helm",
		Short: "Say whether the plugin's discovery rules match an application (exit 1 if not)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return flags.run(cmd, g, args[0], func(p cmpserver.Plugin, req *params.Request) error {
				info := p.Info()
				if !info.DiscoveryConfigured {
					return &exitError{code: 1, msg: fmt.Sprintf("no match: plugin %s has no discover rules; Argo CD uses it only when an Application names it", info.Name)}
				}
				ok, err := p.Match(cmd.Context(), req)
				if err != nil {
					return err
				}
				if !ok {
					return &exitError{code: 1, msg: fmt.Sprintf("no match: plugin %s does not match %s", info.Name, args[0])}
				}
				fmt.Fprintf(g.stdout, "match: plugin %s matches %s\n", info.Name, args[0])
				return nil
			})
		},
	}
	flags.bind(cmd.Flags())
	return cmd
}
