package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/strata-dev/strata/internal/cmpserver"
	"github.com/strata-dev/strata/internal/cmpserver/builtin"
	"github.com/strata-dev/strata/internal/cmpserver/tarball"
	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/hookexec"
	"github.com/strata-dev/strata/internal/manifest"
	"github.com/strata-dev/strata/internal/memlimit"
	"github.com/strata-dev/strata/internal/params"
)

func newCmpCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cmp",
		Short: "Argo CD config management plugins: serve them as a sidecar, run them locally",
		Long: `Serve a config management plugin to Argo CD's repo-server over its gRPC
protocol, or run the same plugin on a local checkout with no Argo CD: generate
its manifests, print its parameters announcement, check its discovery rules.`,
	}
	cmd.AddCommand(newCmpServeCmd(g), newCmpGenerateCmd(g), newCmpParametersCmd(g), newCmpMatchCmd(g), newCmpPreviewCmd(g))
	return cmd
}

// pluginFlags choose and tune the plugin: a plugin.yaml (--config) or a
// built-in plugin (--builtin).
type pluginFlags struct {
	config    string
	builtin   string
	timeout   time.Duration
	noSandbox bool
	helm      helmFlags
	deps      helmDepFlags
	// codecs is the reference switch of the fast codecs (--fast-codecs,
	// and --helm-fast-yaml, its older name).
	codecs  document.Codecs
	metrics *cmpserver.Metrics // cmp serve --metrics-listen: record the commands
	// maxManifestValues bounds a generate command's output (cmp serve
	// --max-manifest-values); 0 is the default.
	maxManifestValues int
}

// helmFlags tune the built-in Helm plugin as a long-running sidecar.
type helmFlags struct {
	chartCacheBytes    int64
	documentCacheBytes int64
	maxConcurrent      int
	// The render budgets (cmp serve only): a render runs in a worker
	// process unless inProcess.
	renderMemory   int64
	renderTimeout  time.Duration
	inProcess      bool
	serve          bool
	maxValuesNodes int
}

// bindHelm adds the sidecar's Helm tuning flags (cmp serve only).
func (f *pluginFlags) bindHelm(fs *pflag.FlagSet) {
	fs.Int64Var(&f.helm.chartCacheBytes, "helm-chart-cache-bytes", 256<<20, "with --builtin helm: size of the loaded charts kept by content digest (0: the default; negative: keep none)")
	fs.Int64Var(&f.helm.documentCacheBytes, "helm-document-cache-bytes", 64<<20, "with --builtin helm: size of the rendered documents kept by content digest (0: the default; negative: keep none)")
	fs.IntVar(&f.helm.maxConcurrent, "helm-max-concurrent", 0, "with --builtin helm: renders running at once, each in a render worker process of its own (0: one per CPU)")
	fs.Int64Var(&f.helm.renderMemory, "helm-render-memory", helmplugin.DefaultRenderMemory, "with --builtin helm: memory one render may use, in bytes; a render past it is stopped and fails (0: the default, 1 GiB; negative: no bound)")
	fs.DurationVar(&f.helm.renderTimeout, "helm-render-timeout", defaultRenderTimeout, "with --builtin helm: time one render may take; a render past it (or past --timeout) is stopped and fails (0: the default, 90s; negative: no bound but --timeout and the request's deadline)")
	fs.BoolVar(&f.helm.inProcess, "helm-render-in-process", false, "with --builtin helm: render inside the server process instead of render worker processes, for debugging (profiles, a debugger); a render past its time budget then keeps its slot until it ends, and one past the memory there is ends the server, so --helm-render-memory does not apply")
	f.helm.serve = true
}

// defaultRenderTimeout is the time budget of one render of the built-in
// Helm plugin in cmp serve: what Argo CD's repo-server allows the helm
// command by default (ARGOCD_EXEC_TIMEOUT).
const defaultRenderTimeout = 90 * time.Second

// workers are the render worker options of cmp serve: strata runs
// itself as its render workers (`strata helm-worker`,
// helmplugin.WorkerEntry, which cmd/strata's main runs).
func (h helmFlags) workers() helmplugin.WorkerOptions {
	if !h.serve || h.inProcess {
		return helmplugin.WorkerOptions{}
	}
	return helmplugin.WorkerOptions{Enabled: true, Memory: h.renderMemory}
}

// renderTimeoutWith is the time budget of a render in cmp serve: the shorter of
// --helm-render-timeout and --timeout (0: none).
func (h helmFlags) renderTimeoutWith(timeout time.Duration) time.Duration {
	if !h.serve {
		return timeout
	}
	t := h.renderTimeout
	switch {
	case t == 0:
		t = defaultRenderTimeout
	case t < 0:
		t = 0
	}
	if timeout > 0 && (t == 0 || timeout < t) {
		t = timeout
	}
	return t
}

// options maps the flags onto the plugin's options. Flags and options
// share the convention (DEVELOPERS.md): 0 is the default, a negative
// number none; concurrency has no "none". Unbound flags are 0.
func (h helmFlags) options() helmplugin.Options {
	return helmplugin.Options{
		MaxConcurrent:      max(h.maxConcurrent, 0),
		ChartCacheBytes:    h.chartCacheBytes,
		DocumentCacheBytes: h.documentCacheBytes,
		Limits:             helmplugin.Limits{MaxValuesNodes: max(h.maxValuesNodes, 0)},
	}
}

// oneShot turns off the caches a long-running sidecar keeps across
// requests (unless the flags set them): a one-shot run renders once, and
// copying the chart into a cache and hashing every document for one is
// work for nothing.
func (h helmFlags) oneShot() helmFlags {
	if h.chartCacheBytes == 0 {
		h.chartCacheBytes = -1
	}
	if h.documentCacheBytes == 0 {
		h.documentCacheBytes = -1
	}
	return h
}

func (f *pluginFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "the plugin's plugin.yaml (ConfigManagementPlugin)")
	fs.StringVar(&f.builtin, "builtin", "", "a built-in plugin instead of a plugin.yaml: helm (renders Helm charts in-process, like Argo CD's Helm source)")
	fs.DurationVar(&f.timeout, "timeout", 0, "bound on each command the plugin runs (for --builtin helm: on each render), besides the request deadline (0: none of its own)")
	fs.BoolVar(&f.noSandbox, "insecure-no-sandbox", false, "run a plugin.yaml's commands unconfined: they may then write the repository cache and other requests' workspaces (without it they are confined with Landlock, and a kernel without Landlock is an error)")
	f.deps.bind(fs)
	bindCodecs(fs, &f.codecs, "fast-codecs", fmt.Sprintf(fastCodecsUsage, "the built-in Helm plugin's values files and rendered documents, the printed manifests"))
	bindCodecs(fs, &f.codecs, "helm-fast-yaml", "the older name of --fast-codecs")
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
		helm := f.helm.options()
		helm.Dependencies = f.deps.options()
		helm.Codecs = f.codecs
		helm.Workers = f.helm.workers()
		p, err := builtin.New(f.builtin, builtin.Options{Timeout: f.helm.renderTimeoutWith(f.timeout), Logger: log, Helm: helm})
		if err != nil {
			return nil, fmt.Errorf("--builtin %w", err)
		}
		return p, nil
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
	if f.noSandbox {
		log.Warn("--insecure-no-sandbox: the plugin's commands run unconfined; a repository's scripts can change the repository cache and other requests' workspaces")
	} else if _, err := hookexec.LandlockABI(); err != nil {
		return nil, fmt.Errorf("%w: a plugin.yaml's commands run confined to their request's workspace with Landlock; "+
			"use a kernel with Landlock, or pass --insecure-no-sandbox to run them unconfined", err)
	}
	opts := cmpserver.CommandOptions{Timeout: f.timeout, Env: os.Environ(), Logger: log, NoSandbox: f.noSandbox, MaxManifestNodes: f.maxManifestValues}
	size := 0
	if size, opts.MaxManifestBytes, err = cmpserver.MessageSizeFromEnv(opts.Env); err != nil {
		return nil, err
	}
	opts.MaxOutput = cmpserver.MaxOutputFor(size)
	if f.metrics != nil {
		opts.Observe = f.metrics.ObserveCommand
	}
	return cmpserver.NewCommandPlugin(cfg, opts), nil
}

func newCmpServeCmd(g *globals) *cobra.Command {
	var (
		flags        pluginFlags
		socketDir    string
		cacheDir     string
		cacheBytes   int64
		grace        time.Duration
		metrics      string
		repoLimits   tarball.Limits
		diskBytes    int64
		recycleBytes int64
		namespaces   bool
		processTree  bool
		memoryBudget int64
		written      int64
		writtenTotal int64
	)
	cmd := &cobra.Command{
		Use:         "serve --config PLUGIN.yaml|--builtin helm [--socket-dir DIR] [--metrics-listen ADDR]",
		Annotations: map[string]string{serverAnnotation: "true"},
		Short:       "Serve a plugin to Argo CD's repo-server (run as a sidecar)",
		Long: `Serve the plugin on the unix socket Argo CD's repo-server looks for:
<socket dir>/<name>.sock, or <name>-<version>.sock when the plugin has a version.
The built-in Helm plugin (--builtin helm) listens on helm.sock.
The socket directory defaults to $ARGOCD_PLUGINSOCKFILEPATH, else
/home/argocd/cmp-server/plugins. Repositories are cached by checksum, so a
repeated request does not unpack the same tarball again. With --config, a
finished request's private copy of its repository is checked and kept for
the next request of the same repository (--recycle-bytes; see docs/cmp.md).
What a request's commands write into its copy and temporary directory is
measured while they run, and a request past --max-written-bytes (or all
requests past --max-written-bytes-total) is stopped.
The built-in Helm plugin also keeps the charts it loaded and the documents
it read, by the SHA-256 of their contents, handing each render a private
copy.

With --metrics-listen ADDR, Prometheus metrics are served on ADDR/metrics,
with /healthz and /readyz (see docs/cmp.md).

On SIGTERM the server stops accepting requests, lets in-flight requests finish
(up to --shutdown-grace), then cancels those still running: each command's
process group gets SIGTERM, then SIGKILL 5 s later (a command that ignores
SIGTERM and its children included). It waits for them to stop (up to 15 s
more), removes the workspaces and the repository cache, and removes its socket.`,
		Example: `  strata cmp serve --config /home/argocd/cmp-server/config/plugin.yaml
  strata cmp serve --builtin helm --metrics-listen :9090`,
		Args: positional(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := g.logger()
			if err != nil {
				return err
			}
			logStart(log, "cmp serve")
			var budget requestBudget
			if _, err := setMemoryLimit(log, "cmp", func(l memlimit.Limit) []any {
				budget = cmpMemoryBudget(memoryBudget, l)
				return []any{"requestMemoryBudget", budget.String(), "requestMemoryBudgetFrom", budget.from}
			}); err != nil {
				return err
			}
			if metrics != "" {
				flags.metrics = cmpserver.NewMetrics()
			}
			p, err := flags.plugin(g)
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
			store.SetDiskBudget(diskBytes)
			defer func() {
				if err := store.Close(); err != nil {
					log.Warn("cleaning up", "err", err)
				}
			}()
			if cp, ok := p.(*cmpserver.CommandPlugin); ok {
				p = cp.Hiding(store.Root())
				namespaces = namespaces && !processTree
				nsErr, err := cmpserver.TrackCommands(cmd.Context())
				switch {
				case err != nil:
					log.Warn("processes the commands leave behind cannot be followed; workspaces are not recycled", "reason", err)
					recycleBytes = -1
				case !namespaces:
					log.Info("commands run in the server's namespaces: what they leave behind is found through the process tree")
				case nsErr != nil:
					log.Info("commands run in the server's namespaces: what they leave behind is found through the process tree", "reason", nsErr)
				default:
					log.Info("each command runs in its own user, PID and IPC namespaces (--command-namespaces)")
				}
				switch {
				case recycleBytes < 0:
				case flags.noSandbox:
					log.Info("workspaces are not recycled: the commands run unconfined (--insecure-no-sandbox)")
				default:
					if err := cmpserver.RecycleWorkspaces(store, recycleBytes, flags.metrics); err != nil {
						log.Warn("workspaces are not recycled; each request gets a new copy of its repository", "reason", err)
					}
				}
			}
			if c, ok := p.(io.Closer); ok {
				defer c.Close() // the Helm plugin's render workers
			}
			srv := &cmpserver.Server{Plugin: p, Store: store, Limits: repoLimits, ShutdownGrace: grace, Logger: log, Metrics: flags.metrics,
				CommandNamespaces: namespaces, MemoryBudget: budget.bytes, MemoryBudgetFrom: budget.from,
				MaxWrittenBytes: written, MaxWrittenBytesTotal: writtenTotal}
			if _, ok := p.(*cmpserver.CommandPlugin); ok {
				logDiskBudget(log, written, writtenTotal)
			}
			if srv.MaxMessageSize, _, err = cmpserver.MessageSizeFromEnv(os.Environ()); err != nil {
				return err
			}
			if srv.KeepAliveMin, err = cmpserver.KeepAliveMinFromEnv(os.Environ()); err != nil {
				return err
			}
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
	fs.Int64Var(&cacheBytes, "cache-bytes", tarball.DefaultCacheBytes, "size of the repository cache (0: the default; negative: keep no repository between requests, though concurrent identical requests still share one extraction)")
	fs.Int64Var(&recycleBytes, "recycle-bytes", tarball.DefaultRecycleBytes, "with --config: repository bytes kept in the workspaces of finished requests for later requests of the same repository, "+
		"each checked before it is handed out again (0: the default; negative: remove every workspace after its request)")
	fs.BoolVar(&namespaces, "command-namespaces", false, "with --config: run each command in its own user, PID and IPC namespaces where the kernel allows it, instead of following what it leaves behind through the process tree; "+
		"each start then copies the server's page tables, a cost that grows with the server's memory (see docs/cmp.md)")
	fs.BoolVar(&processTree, "process-tree-only", false, "the default now")
	_ = fs.MarkDeprecated("process-tree-only", "the process tree is the default; --command-namespaces asks for namespaces")
	fs.DurationVar(&grace, "shutdown-grace", 30*time.Second, "how long in-flight requests may run after SIGTERM")
	fs.StringVar(&metrics, "metrics-listen", "", "serve Prometheus /metrics, /healthz and /readyz on this address (host:port, or unix:PATH); off when empty")
	d := tarball.DefaultLimits()
	fs.Int64Var(&repoLimits.MaxCompressed, "max-repo-compressed-bytes", d.MaxCompressed, "largest repository tarball a request may stream, compressed (0: the default)")
	fs.Int64Var(&repoLimits.MaxBytes, "max-repo-bytes", d.MaxBytes, "largest content of an unpacked repository (0: the default)")
	fs.IntVar(&repoLimits.MaxFiles, "max-repo-files", d.MaxFiles, "most files, directories and links in a repository (0: the default)")
	fs.IntVar(&repoLimits.MaxPathLen, "max-repo-path-length", d.MaxPathLen, "longest path of a repository entry or link target, in bytes (0: the default)")
	fs.Int64Var(&diskBytes, "max-disk-bytes", tarball.DefaultDiskBudget, "repository bytes on disk that requests in flight may hold at once, besides the cache: extractions and private copies; "+
		"a request over it waits for others to finish, or fails when its deadline comes first (0: the default; negative: no budget)")
	fs.Int64Var(&written, "max-written-bytes", cmpserver.DefaultMaxWrittenBytes, "with --config: what the commands of one request may write into its copy of the repository and its temporary directory, in bytes, "+
		"each file, directory and link counted at least 4 KiB, measured while they run; also each command's RLIMIT_FSIZE; a request past it is stopped, its commands killed (0: the default; negative: none)")
	fs.Int64Var(&writtenTotal, "max-written-bytes-total", cmpserver.DefaultMaxWrittenBytesTotal, "with --config: what the commands of all requests in flight may have written at once, in bytes; "+
		"the request whose writes pass it is stopped (0: the default; negative: none)")
	fs.Int64Var(&memoryBudget, "memory-budget", 0, "with --config: memory the requests may hold at once to read their commands' output, in bytes; "+
		"a request whose output needs more is refused, one that needs more than is free waits (0: the Go memory limit less 128 MiB, from $STRATA_MEMORY_LIMIT or the cgroup's limit, none without a limit; negative: none)")
	fs.IntVar(&flags.maxManifestValues, "max-manifest-values", cmpserver.DefaultMaxManifestNodes, "with --config: most maps, lists and values in a generate command's output, YAML aliases counted each time they are used, counted before parsing; reading costs some 350 bytes of memory a value (0: the default)")
	fs.IntVar(&flags.helm.maxValuesNodes, "helm-max-values-nodes", helmplugin.DefaultLimits().MaxValuesNodes, "with --builtin helm: most maps, lists and values in one values document (values.yaml, a values file, the inline values), counted before parsing (0: the default)")
	return cmd
}

// logDiskBudget logs how what a plugin.yaml's commands write is bounded.
func logDiskBudget(log *slog.Logger, perRequest, total int64) {
	if perRequest == 0 {
		perRequest = cmpserver.DefaultMaxWrittenBytes
	}
	if total == 0 {
		total = cmpserver.DefaultMaxWrittenBytesTotal
	}
	if perRequest < 0 && total < 0 {
		log.Warn("what the commands write is not bounded (--max-written-bytes and --max-written-bytes-total are negative): a repository's scripts can fill the work volume")
		return
	}
	log.Info("what the commands write into their workspaces is measured while they run (the work volume's free space every 50ms, a walk of the workspace when it shrinks or every 250ms), and each file is bounded by RLIMIT_FSIZE",
		"maxWrittenBytes", perRequest, "maxWrittenBytesTotal", total, "fileSizeLimit", hookexec.FileSizeLimitMode())
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
	// helm holds helm template's own flags (cmp generate and cmp
	// parameters); nil where a command takes none.
	helm *helmCLIFlags
	// cpuProfile and trace name files for a CPU profile and an execution
	// trace of the command (hidden flags, for measuring one run).
	cpuProfile, trace string
}

func (f *localFlags) bind(fs *pflag.FlagSet) {
	f.plugin.bind(fs)
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the command to this file (go tool pprof reads it)")
	fs.StringVar(&f.trace, "trace", "", "write an execution trace of the command to this file (go tool trace reads it)")
	_ = fs.MarkHidden("cpuprofile")
	_ = fs.MarkHidden("trace")
	fs.StringVar(&f.repoRoot, "repo-root", "", "the repository root (default: the enclosing git work tree, else APPDIR)")
	fs.StringVar(&f.paramsFile, "parameters", "", "parameters in ARGOCD_APP_PARAMETERS JSON: [{\"name\":...,\"string\":...}]")
	fs.StringArrayVar(&f.params, "param", nil, "a string parameter: name=value")
	fs.StringArrayVar(&f.arrayParams, "param-array", nil, "an array parameter: name=v1,v2 (repeat the flag to append)")
	fs.StringArrayVar(&f.mapParams, "param-map", nil, "a map parameter entry: name.key=value")
	fs.StringArrayVar(&f.env, "env", nil, "an Application plugin env entry NAME=VALUE, passed as ARGOCD_ENV_NAME")
	fs.StringVar(&f.appName, "app-name", "", "the Application's name (default: the directory's name)")
	fs.StringVarP(&f.namespace, "namespace", "n", "default", "the Application's destination namespace (with --builtin helm: .Release.Namespace, as helm's -n)")
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
	ps, err := f.parameters(appDir, root)
	if err != nil {
		return nil, err
	}
	l := &cmpserver.Local{
		Plugin: p, RepoRoot: root, AppDir: appDir, AppName: f.appName, Namespace: f.namespace,
		KubeVersion: f.kubeVersion, APIVersions: f.apiVersions, Parameters: ps,
	}
	for _, e := range f.env {
		kv, err := params.AppEnv(e)
		if err != nil {
			return nil, fmt.Errorf("--env %w", err)
		}
		l.Env = append(l.Env, kv)
	}
	return l, nil
}

// run prepares a local request for the application in dir, as the sidecar
// would receive it, calls fn, and removes the private copy. With
// --argocd-env the request is read from the environment instead, and the
// plugin runs in place.
func (f *localFlags) run(cmd *cobra.Command, g *globals, dir string, fn func(cmpserver.Plugin, *params.Request) error) (err error) {
	stop, err := f.profile()
	if err != nil {
		return err
	}
	defer func() {
		if serr := stop(); err == nil {
			err = serr
		}
	}()
	f.plugin.helm = f.plugin.helm.oneShot()
	if err := f.checkHelmFlags(); err != nil {
		return err
	}
	if f.argocdEnv {
		if f.plugin.builtin == "" {
			return errors.New("--argocd-env needs --builtin: a plugin.yaml's commands already get Argo CD's environment")
		}
		p, err := f.plugin.plugin(g)
		if err != nil {
			return err
		}
		oneShotGC()
		req, err := f.envRequest(dir)
		if err != nil {
			return err
		}
		return fn(p, req)
	}
	oneShotGC()
	if f.plugin.builtin == "helm" && f.helm != nil {
		if _, serr := os.Stat(dir); serr != nil && helmplugin.IsChartReference(dir) {
			appDir, root, cleanup, err := f.remoteChart(cmd.Context(), dir)
			if err != nil {
				return err
			}
			defer cleanup()
			dir, f.repoRoot = appDir, root
		} else if f.helm.version != "" {
			return fmt.Errorf("--version %s: %s is a directory; --version applies to a chart from a repository (oci://HOST/PATH/CHART or REPO/CHART)", f.helm.version, dir)
		}
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

// profile starts the CPU profile and the execution trace the hidden
// --cpuprofile and --trace flags ask for; stop ends them and closes the
// files.
func (f *localFlags) profile() (stop func() error, err error) {
	var stops []func() error
	stop = func() error {
		var errs []error
		for _, s := range slices.Backward(stops) {
			errs = append(errs, s())
		}
		return errors.Join(errs...)
	}
	start := func(name, flag string, begin func(io.Writer) error, end func()) error {
		if name == "" {
			return nil
		}
		file, err := os.Create(name)
		if err != nil {
			return fmt.Errorf("--%s: %w", flag, err)
		}
		if err := begin(file); err != nil {
			file.Close()
			return fmt.Errorf("--%s: %w", flag, err)
		}
		stops = append(stops, func() error {
			end()
			if err := file.Close(); err != nil {
				return fmt.Errorf("--%s: %w", flag, err)
			}
			return nil
		})
		return nil
	}
	if err := start(f.cpuProfile, "cpuprofile", pprof.StartCPUProfile, pprof.StopCPUProfile); err != nil {
		return nil, err
	}
	if err := start(f.trace, "trace", trace.Start, trace.Stop); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}

// oneShotGC tunes the collector for a one-shot local run, unless GOGC says
// otherwise: a render allocates a lot for a short time, and collecting it
// costs a tenth of its CPU. The heap grows without collections until the
// Go runtime's memory nears oneShotHeap, which most renders never reach;
// from the first collection on, it grows to five times the live data
// between collections (GOGC=400), as it did from the start with GOMEMLIMIT
// set.
func oneShotGC() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		debug.SetGCPercent(oneShotGOGC)
		return
	}
	// Not -1, which would wait for a collection under way to end.
	debug.SetGCPercent(1_000_000)
	debug.SetMemoryLimit(oneShotHeap)
	runtime.AddCleanup(&gcSentinel{}, func(struct{}) {
		debug.SetGCPercent(oneShotGOGC)
		debug.SetMemoryLimit(math.MaxInt64)
	}, struct{}{})
}

const (
	// oneShotHeap is the memory a one-shot run's heap grows to before its
	// first collection.
	oneShotHeap = 128 << 20
	// oneShotGOGC is its GOGC after that.
	oneShotGOGC = 400
)

// A gcSentinel is unreachable once made: the first collection after
// oneShotGC frees it, which runs its cleanup. It holds a pointer so that
// it is not allocated with other small objects, which would keep it.
type gcSentinel struct{ _ *byte }

// envRequest builds a request from the environment Argo CD gives a
// plugin's commands (params.BuildEnv), for a built-in plugin run by another
// plugin's command; the --param flags follow ARGOCD_APP_PARAMETERS.
func (f *localFlags) envRequest(dir string) (*params.Request, error) {
	req, err := params.BuildEnv(dir, f.repoRoot, os.Environ())
	if err != nil {
		return nil, fmt.Errorf("--argocd-env: %w", err)
	}
	more, err := f.parameters(dir, f.repoRoot)
	if err != nil {
		return nil, err
	}
	req.Parameters = append(req.Parameters, more...)
	return req, nil
}

// gitRoot returns the work tree enclosing dir (the nearest directory
// holding a .git directory or file, as git finds it), or dir. It runs no
// git: a one-shot render should not pay for a process.
func gitRoot(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	for d := abs; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// parameters reads --parameters, the single-parameter flags and Helm's
// own flags, in that order: a later string replaces, array items append,
// map entries are set. Helm's flags name files relative to the working
// directory; they become paths from appDir inside root.
func (f *localFlags) parameters(appDir, root string) ([]params.Parameter, error) {
	var b params.Builder
	if f.paramsFile != "" {
		data, err := os.ReadFile(f.paramsFile)
		if err != nil {
			return nil, fmt.Errorf("reading --parameters: %w", err)
		}
		ps, err := params.ParseParameters(data, f.paramsFile)
		if err != nil {
			return nil, err
		}
		b.Add(ps...)
	}
	for _, a := range f.params {
		if err := b.String(a); err != nil {
			return nil, fmt.Errorf("--param %w", err)
		}
	}
	for _, a := range f.arrayParams {
		if err := b.Array(a); err != nil {
			return nil, fmt.Errorf("--param-array %w", err)
		}
	}
	for _, a := range f.mapParams {
		if err := b.MapEntry(a); err != nil {
			return nil, fmt.Errorf("--param-map %w", err)
		}
	}
	if f.helm != nil {
		if err := f.helm.apply(&b, appDir, root); err != nil {
			return nil, err
		}
	}
	return b.Parameters(), nil
}

// checkHelmFlags refuses Helm's own flags where they do not apply.
func (f *localFlags) checkHelmFlags() error {
	if f.helm == nil {
		return nil
	}
	used := f.helm.used()
	if len(used) == 0 {
		return nil
	}
	if f.plugin.builtin != "helm" {
		return fmt.Errorf("%s: Helm's flags apply with --builtin helm; a plugin.yaml's parameters are set with --param, --param-array and --param-map", strings.Join(used, ", "))
	}
	if f.argocdEnv {
		return fmt.Errorf("%s: with --argocd-env the parameters come from ARGOCD_APP_PARAMETERS", strings.Join(used, ", "))
	}
	return nil
}

// printParameters prints the Application's spec.source.plugin.parameters
// the flags stand for, as YAML or JSON.
func (f *localFlags) printParameters(cmd *cobra.Command, g *globals, appDir, output string) error {
	format := document.YAML // an Application's YAML, unless -o says otherwise
	if cmd.Flags().Changed("output") {
		var err error
		if format, err = document.ParseFormat(output); err != nil {
			return err
		}
	}
	if fi, err := os.Stat(appDir); err != nil || !fi.IsDir() {
		if f.plugin.builtin == "helm" && helmplugin.IsChartReference(appDir) {
			return fmt.Errorf("--print-parameters: %s is a chart from a repository; an Application's plugin source is a directory of its own repository", appDir)
		}
		return fmt.Errorf("%s is not a directory", appDir)
	}
	root := f.repoRoot
	if root == "" {
		root = gitRoot(appDir)
	}
	ps, err := f.parameters(appDir, root)
	if err != nil {
		return err
	}
	if ps == nil {
		ps = []params.Parameter{}
	}
	if format == document.YAML {
		return document.EncodeValue(g.stdout, ps)
	}
	return document.EncodeJSONValue(g.stdout, ps)
}

func newCmpGenerateCmd(g *globals) *cobra.Command {
	var (
		flags   localFlags
		output  string
		explain string
	)
	cmd := &cobra.Command{
		Use:   "generate [NAME] APPDIR --config PLUGIN.yaml|--builtin helm [--parameters FILE] [--param name=value]... [-f FILE] [--set K=V]... [--env NAME=VALUE]...",
		Short: "Run a plugin's init and generate commands on a local application, as the sidecar would",
		Long: `Run the plugin on APPDIR exactly as the sidecar runs it for Argo CD: the
repository is copied into a private directory (your checkout is never
written to; the built-in Helm plugin, which never writes, reads it in place
once no symbolic link in it leads outside the repository), the commands get the environment Argo CD would give them
(ARGOCD_APP_*, KUBE_*, ARGOCD_ENV_*, ARGOCD_APP_PARAMETERS, PARAM_*), and
their output is parsed and checked as the repo-server would. Prints the
manifests as a YAML stream (or a JSON list with -o json).

--builtin helm renders APPDIR's Helm chart in-process instead, as Argo CD's
Helm source would (see docs/helm.md). Its YAML output is what helm template
--include-crds prints for the same render, # Source comments included, which
Argo CD reads as the manifests -o json prints. With --argocd-env it runs in
place, inside another plugin's command, reading the application from the
environment Argo CD gives that command: a plugin.yaml can wrap it, say with
a kustomize pass after Helm.`,
		Example: `  strata cmp generate examples/cmp/trivial/app --config examples/cmp/trivial/plugin.yaml \
    --app-name demo --param cm-name-suffix=blue
  strata cmp generate examples/helm/chart --builtin helm --param-array values-files=values-prod.yaml -o json
  strata cmp generate guestbook examples/helm/chart --builtin helm -n web \
    -f examples/helm/chart/values-prod.yaml --set replicaCount=3
  strata cmp generate examples/helm/chart --builtin helm -f examples/helm/chart/values-prod.yaml --print-parameters`,
		Args: helmArgs(&flags),
		RunE: func(cmd *cobra.Command, args []string) error {
			args = flags.helm.takeReleaseName(args)
			if flags.helm.printParameter {
				return flags.printParameters(cmd, g, args[0], output)
			}
			if cmd.Flags().Changed("explain") {
				return flags.explain(cmd, g, args[0], explain, output)
			}
			return flags.run(cmd, g, args[0], func(p cmpserver.Plugin, req *params.Request) error {
				if yg, ok := p.(cmpserver.YAMLGenerator); ok {
					if f, err := document.ParseFormat(output); err == nil && f == document.YAML {
						// The tool's own text (helm template's output).
						text, err := yg.GenerateYAML(cmd.Context(), req)
						if err != nil {
							return err
						}
						_, err = g.stdout.Write(text)
						return err
					}
				}
				manifests, err := p.Generate(cmd.Context(), req)
				if err != nil {
					return err
				}
				return writeManifests(g, manifests, output, flags.plugin.codecs)
			})
		},
	}
	flags.helm = new(helmCLIFlags)
	flags.bind(cmd.Flags())
	flags.helm.bind(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml (a stream) or json (a list); with --explain: text (the default), yaml or json")
	addExplainFlag(cmd.Flags(), &explain)
	cmd.Flags().Lookup("explain").Usage = "with --builtin helm: instead of the manifests, explain every value the chart gets (which values file, line or parameter set it, and what it overrode), or with =`PATH` one key or subtree"
	return cmd
}

func writeManifests(g *globals, manifests []string, output string, codecs document.Codecs) error {
	f, err := document.ParseFormat(output)
	if err != nil {
		return err
	}
	return manifest.Encoder{Format: f, Codecs: codecs}.Encode(g.stdout, manifests)
}

func newCmpParametersCmd(g *globals) *cobra.Command {
	var (
		flags  localFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "parameters [NAME] APPDIR --config PLUGIN.yaml|--builtin helm [-f FILE] [--set K=V]... [-o json|yaml]",
		Short: "Print the plugin's parameters announcement for an application (JSON, or YAML with -o yaml)",
		Example: `  strata cmp parameters examples/cmp/trivial/app --config examples/cmp/trivial/plugin.yaml
  strata cmp parameters examples/helm/chart --builtin helm -o yaml
  strata cmp parameters examples/helm/chart --builtin helm --set replicaCount=3 -o yaml`,
		Args: helmArgs(&flags),
		RunE: func(cmd *cobra.Command, args []string) error {
			args = flags.helm.takeReleaseName(args)
			if flags.helm.printParameter {
				return flags.printParameters(cmd, g, args[0], output)
			}
			format, err := document.ParseFormat(output)
			if err != nil {
				return err
			}
			return flags.run(cmd, g, args[0], func(p cmpserver.Plugin, req *params.Request) error {
				anns, err := p.Announce(cmd.Context(), req)
				if err != nil {
					return err
				}
				if anns == nil {
					anns = []params.Announcement{}
				}
				if format == document.YAML {
					return document.EncodeValue(g.stdout, anns)
				}
				return document.EncodeJSONValue(g.stdout, anns)
			})
		},
	}
	flags.helm = new(helmCLIFlags)
	flags.bind(cmd.Flags())
	flags.helm.bind(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "json", "output format: json (what Argo CD receives) or yaml")
	return cmd
}

func newCmpMatchCmd(g *globals) *cobra.Command {
	var flags localFlags
	cmd := &cobra.Command{
		Use:   "match APPDIR --config PLUGIN.yaml|--builtin helm",
		Short: "Say whether the plugin's discovery rules match an application (exit 0 match, 1 no match, 2 error)",
		Long: `Run the plugin's discovery rules on APPDIR as the sidecar runs them for the
repo-server, and say whether Argo CD would pick the plugin for it.

Exit status, as grep's: 0 when the plugin matches, 1 when it does not (a
plugin without discover rules never matches: Argo CD uses it only when an
Application names it), 2 on an error (a bad flag or argument, a plugin.yaml
that does not load, an APPDIR that is not a directory). A discovery command
that fails is "no match", as in Argo CD.`,
		Example: `  strata cmp match examples/cmp/kustomize/overlays/prod --config examples/cmp/kustomize/plugin.yaml
  if strata cmp match . --config plugin.yaml 2>/dev/null; then echo picked; fi`,
		Annotations: map[string]string{errorExitAnnotation: "2"},
		Args:        positional("APPDIR"),
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
