package helmplugin

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/strata-dev/strata/internal/document"
	"github.com/strata-dev/strata/internal/helmplugin/deps"
	"github.com/strata-dev/strata/internal/helmrender"
	"github.com/strata-dev/strata/internal/limits"
	"github.com/strata-dev/strata/internal/params"
)

// Limits bound what one request may cost. Zero fields take the defaults of
// DefaultLimits.
type Limits struct {
	// MaxParameters bounds the parameters of a request.
	MaxParameters int
	// MaxItems bounds the items of an array parameter and the entries of a
	// map parameter.
	MaxItems int
	// MaxParameterBytes bounds the length of all parameter values and map
	// keys together.
	MaxParameterBytes int
	// MaxValuesFiles bounds the values-files parameter.
	MaxValuesFiles int
	// MaxValuesBytes bounds one values file, the inline values, and one
	// file named by file-parameters; MaxTotalValuesBytes all of them
	// together.
	MaxValuesBytes, MaxTotalValuesBytes int64
	// MaxChartFiles and MaxChartBytes bound the chart directory, its
	// subcharts included.
	MaxChartFiles int
	MaxChartBytes int64
	// MaxManifests and MaxManifestBytes bound the rendered output: Argo CD
	// receives it in one gRPC message of at most 100 MiB.
	MaxManifests     int
	MaxManifestBytes int
	// MaxAnnouncedValues bounds the entries of the helm-parameters
	// announcement; past it the first ones in key order are announced.
	MaxAnnouncedValues int
	// MaxValuesNodes bounds the maps, lists and values of one values
	// document (the chart's values.yaml, a values file, the inline
	// values), counted on its text before it is parsed
	// (document.CheckNodes): parsing costs some 300 bytes a value.
	MaxValuesNodes int
}

// DefaultLimits returns the limits a zero Limits field takes.
func DefaultLimits() Limits {
	return Limits{
		MaxParameters:       params.MaxEntries,
		MaxItems:            params.MaxItems,
		MaxParameterBytes:   4 << 20,
		MaxValuesFiles:      100,
		MaxValuesBytes:      16 << 20,
		MaxTotalValuesBytes: 64 << 20,
		MaxChartFiles:       20000,
		MaxChartBytes:       100 << 20,
		MaxManifests:        100_000,
		MaxManifestBytes:    96 << 20,
		MaxAnnouncedValues:  params.MaxItems,
		MaxValuesNodes:      1 << 20,
	}
}

func (l Limits) withDefaults() Limits { return limits.Or(l, DefaultLimits()) }

// Options tune a Plugin.
type Options struct {
	Limits Limits
	// Timeout bounds one render, on top of the request's context; 0 is no
	// bound but the context's. In-process it bounds the templates' run
	// (and the wait for a slot); with Workers, all that Generate does (the
	// wait for a slot, loading the chart and its dependencies, rendering).
	Timeout time.Duration
	// MaxConcurrent bounds the renders running at once; 0 is GOMAXPROCS.
	// In-process, Go templates cannot be interrupted: a render past its
	// deadline is abandoned, but keeps its slot until it ends, so runaway
	// templates cannot pile up. With Workers, a render past its deadline
	// is stopped (its worker killed) and its slot freed at once.
	MaxConcurrent int
	// Workers, when Enabled, run every render (Generate) in
	// a warm worker process of its own, bounded in time and memory (see
	// WorkerOptions); one worker per slot of MaxConcurrent. The chart and
	// document caches are then the workers', each holding its share of
	// ChartCacheBytes and DocumentCacheBytes (and of
	// Dependencies.CacheBytes). Announce runs in the workers too (see
	// Announce); Match and GenerateYAML stay in-process.
	Workers WorkerOptions
	// Logger receives a line per render and the warnings about
	// parameters; nil discards them.
	Logger *slog.Logger
	// CacheEntries bounds the parsed values documents kept for
	// announcements, by the SHA-256 of their text, and as many finished
	// helm-parameters lists of charts announced without user values, by
	// the SHA-256 of values.yaml (see Announce); each cache holds at most
	// Limits.MaxTotalValuesBytes. 0 is 256, a negative number keeps none.
	CacheEntries int
	// ChartCacheEntries bounds the loaded charts kept for rendering, by
	// the SHA-256 of the chart's files (see Generate); 0 is 64, a
	// negative number keeps none. ChartCacheBytes bounds the size of
	// their files together; 0 is 256 MiB, a negative number keeps none.
	ChartCacheEntries int
	ChartCacheBytes   int64
	// DocumentCacheBytes bounds what is kept of the rendered documents
	// read before (their text and JSON form, by the SHA-256 of the text);
	// 0 is 64 MiB, a negative number keeps none.
	DocumentCacheBytes int64
	// Dependencies say where the dependencies of Chart.yaml that charts/
	// lacks are fetched from (see DependencyOptions).
	Dependencies DependencyOptions
	// Codecs is the reference switch of the fast YAML path:
	// document.ReferenceCodecs reads values files and rendered documents
	// with Helm's own functions (loader.LoadValues, loader.LoadDir,
	// sigs.k8s.io/yaml) only. The fast path gives the same results (its
	// differential tests and fuzzers hold it to them) in a fraction of the
	// time; this is the switch to rule it out when a result looks wrong.
	// The inline values parameter is read by the fast path either way.
	Codecs document.Codecs
}

// A Plugin is the built-in Helm plugin. Its methods are those of a
// config management plugin (cmpserver.Plugin, less Info) and may be called
// concurrently.
type Plugin struct {
	opts   Options
	lim    Limits
	log    *slog.Logger
	values valuesCache
	// flat keeps the flattened helm-parameters of charts announced
	// without user values, by the SHA-256 of values.yaml (see Announce).
	flat   *helmrender.Cache[map[string]string]
	charts chartCache
	// render renders in-process: the slots of MaxConcurrent, the
	// timeout, the rendered documents' cache.
	render *helmrender.Renderer
	deps   *deps.Resolver
	// pool runs the renders when Options.Workers are enabled.
	pool *renderPool
}

// Name is the plugin's name: Argo CD finds it on the socket helm.sock.
const Name = "helm"

// New returns a plugin with the given options.
func New(opts Options) *Plugin {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := opts.MaxConcurrent
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	orDefault := func(v, def int) int {
		if v == 0 {
			return def
		}
		return v
	}
	chartBytes := opts.ChartCacheBytes
	if chartBytes == 0 {
		chartBytes = 256 << 20
	}
	docBytes := opts.DocumentCacheBytes
	if docBytes == 0 {
		docBytes = 64 << 20
	}
	lim := opts.Limits.withDefaults()
	p := &Plugin{opts: opts, lim: lim, log: log.With("plugin", Name),
		values: valuesCache{lru: helmrender.NewCache[map[string]any](orDefault(opts.CacheEntries, 256), lim.MaxTotalValuesBytes), codecs: opts.Codecs, maxNodes: lim.MaxValuesNodes},
		flat:   helmrender.NewCache[map[string]string](orDefault(opts.CacheEntries, 256), lim.MaxTotalValuesBytes),
		charts: chartCache{helmrender.NewCache[*chart.Chart](orDefault(opts.ChartCacheEntries, 64), chartBytes)},
		render: helmrender.New(helmrender.Options{
			Limits:  helmrender.Limits{MaxManifests: lim.MaxManifests, MaxManifestBytes: lim.MaxManifestBytes},
			Timeout: opts.Timeout, MaxConcurrent: n, DocumentCacheBytes: docBytes, Codecs: opts.Codecs,
		}),
		deps: deps.New(opts.Dependencies),
	}
	if opts.Workers.Enabled {
		p.pool = p.newRenderPool(opts, n, chartBytes, docBytes)
	}
	return p
}

// Close stops the plugin's render workers (renders under way end with
// their workers); a Plugin rendering in-process has nothing to stop.
func (p *Plugin) Close() error {
	if p.pool != nil {
		p.pool.Close()
	}
	return nil
}

// ErrNotChart is returned when the application's directory holds no
// Chart.yaml.
var ErrNotChart = errors.New("not a Helm chart")

// Match reports whether the application's directory holds a Chart.yaml (a
// regular file), as Argo CD detects a Helm source.
func (p *Plugin) Match(_ context.Context, req *params.Request) (bool, error) {
	fi, err := os.Lstat(filepath.Join(req.AppPath, "Chart.yaml"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discovery: %w", err)
	}
	return fi.Mode().IsRegular(), nil
}

// Announce returns the parameters the plugin accepts, each with its current
// value: what is set, else the default. helm-parameters lists the chart's
// values flattened, with the values files, inline values and parameters
// set (see the package documentation). Only Chart.yaml, values.yaml and
// the values files are read; the parsed documents are cached by content
// (Options.CacheEntries).
//
// With Options.Workers, the announcement is made in a worker process, as
// a render is, under the same budgets of time and memory: values files of
// millions of values cost the worker, not the server, and the worker's
// memory goes back to the system when it is replaced.
func (p *Plugin) Announce(ctx context.Context, req *params.Request) ([]params.Announcement, error) {
	if p.pool == nil {
		return p.announce(ctx, req)
	}
	// A chart announced before without user values is answered from the
	// server's cache of helm-parameters, by the SHA-256 of values.yaml,
	// as in-process: no worker, nothing parsed.
	j, err := p.newJob(req)
	if err != nil {
		return nil, err
	}
	defer j.close()
	var key [sha256.Size]byte
	plain := !j.s.userValues()
	if plain {
		data, err := j.chartValuesText()
		if err != nil {
			return nil, err
		}
		key = sha256.Sum256(data)
		if m, ok := p.flat.Get(key); ok {
			return j.announce(maps.Clone(m))
		}
	}
	if p.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, p.opts.Timeout, fmt.Errorf("the render's time budget of %s is spent", p.opts.Timeout))
		defer cancel()
	}
	anns, err := p.announceInWorker(ctx, req)
	if err == nil && plain {
		for _, a := range anns {
			if a.Name == ParamHelmParameters && len(a.Map) < p.lim.MaxAnnouncedValues {
				p.flat.Add(key, flatSize(a.Map), maps.Clone(a.Map))
			}
		}
	}
	return anns, err
}

// announce makes the announcement in this process.
func (p *Plugin) announce(ctx context.Context, req *params.Request) ([]params.Announcement, error) {
	j, err := p.newJob(req)
	if err != nil {
		return nil, err
	}
	defer j.close()
	if !j.s.userValues() {
		// No user values: helm-parameters is values.yaml flattened, which
		// depends on its text only.
		data, err := j.chartValuesText()
		if err != nil {
			return nil, err
		}
		key := sha256.Sum256(data)
		if m, ok := p.flat.Get(key); ok {
			return j.announce(maps.Clone(m))
		}
		vals, err := j.parseChartValues(data)
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// vals is the chart's merged with no user values (MergeMaps
		// copies: flatten only reads).
		m, complete := j.flatValues(&valueSet{chart: vals, user: map[string]any{}})
		if complete {
			p.flat.Add(key, flatSize(m), maps.Clone(m))
		}
		return j.announce(m)
	}
	chartVals, err := j.chartValues()
	if err != nil {
		return nil, err
	}
	vals, err := j.userValues(chartVals)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m, _ := j.flatValues(vals)
	return j.announce(m)
}

// flatSize is what a flattened values list stands for in the cache: its
// text and a map entry's overhead per entry.
func flatSize(m map[string]string) int64 {
	n := int64(0)
	for k, v := range m {
		n += int64(len(k)+len(v)) + 64
	}
	return n
}

// Generate renders the chart and returns its manifests, each a JSON object.
// The chart is loaded once per content: a chart whose files are the same
// as those of a chart rendered before is taken from a cache (by the
// SHA-256 of its files, Options.ChartCacheEntries), as a copy that shares
// nothing with the cached one.
//
// With Options.Workers, the render runs in a worker process, bounded in
// time by ctx and Options.Timeout and in memory by WorkerOptions.Memory: a
// render past either is stopped and fails with an error naming the chart
// and the budget, and the worker is replaced.
func (p *Plugin) Generate(ctx context.Context, req *params.Request) ([]string, error) {
	if p.pool == nil {
		return p.generate(ctx, req, nil)
	}
	if p.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, p.opts.Timeout, fmt.Errorf("the render's time budget of %s is spent", p.opts.Timeout))
		defer cancel()
	}
	return p.generateInWorker(ctx, req)
}

// GenerateYAML renders the chart as Generate does, with the same checks and
// errors, and returns what `helm template --include-crds` prints for it
// (with the parameters' settings: the CRDs left out with skip-crds, the
// test hooks with skip-tests): every CRD file, manifest and hook as
// "---\n# Source: PATH\n" + its text + "\n", the CRDs and manifests
// trimmed of the white space at their end and ended by one line break, in
// helm's order. Read as Argo CD reads helm's output (one line break
// dropped from the end, split into documents by Kubernetes' YAML reader,
// each converted by sigs.k8s.io/yaml, empty documents dropped, Lists
// unpacked), it gives the manifests Generate returns. It is the local
// CLI's YAML output: printing helm's own text costs nothing, where writing
// every manifest again as YAML costs as much as rendering. It always
// renders in-process, in the calling process, whatever Options.Workers
// says.
func (p *Plugin) GenerateYAML(ctx context.Context, req *params.Request) ([]byte, error) {
	var printed []byte
	_, err := p.generateWith(ctx, req, nil, &printed)
	if err != nil {
		return nil, err
	}
	return printed, nil
}

// generate renders in-process; loaded, if not nil, is told the chart's
// name once it is loaded.
func (p *Plugin) generate(ctx context.Context, req *params.Request, loaded func(chart string)) ([]string, error) {
	return p.generateWith(ctx, req, loaded, nil)
}

// generateWith is generate; with printed, it also sets *printed to helm
// template's output (see GenerateYAML).
func (p *Plugin) generateWith(ctx context.Context, req *params.Request, loaded func(chart string), printed *[]byte) ([]string, error) {
	start := time.Now()
	j, err := p.newJob(req)
	if err != nil {
		return nil, err
	}
	defer j.close()
	j.printed = printed
	ch, err := j.loadChart()
	if err != nil {
		return nil, err
	}
	if loaded != nil {
		loaded(ch.Name())
	}
	if err := j.addDependencies(ctx, ch); err != nil {
		return nil, err
	}
	vals, err := j.userValues(ch.Values)
	if err != nil {
		return nil, err
	}
	out, err := j.render(ctx, ch, vals.user)
	if err != nil {
		return nil, err
	}
	p.log.Debug("rendered chart", "app", req.AppName, "chart", ch.Name(), "manifests", len(out), "duration", time.Since(start))
	return out, nil
}

// A job is one request being served.
type job struct {
	p   *Plugin
	lim Limits
	req *params.Request
	s   *settings
	// root is the repository; appRel the application's directory inside
	// it, slash-separated ("." for the root).
	root   *os.Root
	appRel string
	// env holds the build environment variables that values and paths
	// may refer to.
	env map[string]string
	// read counts the bytes of values read so far.
	read int64
	// printed, if not nil, receives helm template's output (GenerateYAML).
	printed *[]byte
}

func (p *Plugin) newJob(req *params.Request) (*job, error) {
	s, warnings, err := decodeSettings(req.Parameters, p.lim)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		p.log.Warn("parameters", "app", req.AppName, "warning", w)
	}
	if len(s.valuesFiles) > p.lim.MaxValuesFiles {
		return nil, &paramError{name: ParamValuesFiles, msg: fmt.Sprintf("%d values files, more than the limit of %d", len(s.valuesFiles), p.lim.MaxValuesFiles)}
	}
	if req.RepoRoot == "" || req.AppPath == "" {
		return nil, errors.New("the request names no repository or application directory")
	}
	rel, err := filepath.Rel(req.RepoRoot, req.AppPath)
	if err != nil || (rel != "." && !filepath.IsLocal(rel)) {
		return nil, fmt.Errorf("the application directory %s is not inside the repository %s", req.AppPath, req.RepoRoot)
	}
	root, err := os.OpenRoot(req.RepoRoot)
	if err != nil {
		return nil, fmt.Errorf("opening the repository: %w", err)
	}
	j := &job{p: p, lim: p.lim, req: req, s: s, root: root, appRel: filepath.ToSlash(rel), env: buildEnv(req.Env)}
	return j, nil
}

func (j *job) close() { j.root.Close() }

// buildEnv picks the variables of Argo CD's build environment from the
// request's environment: ARGOCD_APP_*, KUBE_VERSION and KUBE_API_VERSIONS.
func buildEnv(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if ok && (strings.HasPrefix(name, "ARGOCD_APP_") || name == "KUBE_VERSION" || name == "KUBE_API_VERSIONS") {
			m[name] = value
		}
	}
	return m
}
