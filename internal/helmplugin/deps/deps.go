package deps

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"golang.org/x/sync/singleflight"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/registry"
	"helm.sh/helm/v4/pkg/repo/v1"

	"github.com/strata-dev/strata/internal/helmrender"
)

// Options say where the dependencies of Chart.yaml that charts/
// lacks come from, as `helm dependency build` (which Argo CD's Helm source
// runs) fetches them. Zero fields take the documented defaults.
type Options struct {
	// RepositoryConfig is Helm's repositories.yaml: the chart
	// repositories a chart may fetch from, with their credentials and TLS
	// settings. "" or a file that does not exist names none.
	RepositoryConfig string
	// RegistryConfig is Helm's registry config.json (`helm registry
	// login`): credentials for OCI registries; its hosts are named too.
	// "" names none.
	RegistryConfig string
	// RepositoryCache holds the repositories' index files (Helm's
	// <name>-index.yaml). "" is a directory under os.TempDir().
	RepositoryCache string
	// AllowUnlistedRepositories lets a chart fetch from repositories the
	// configuration does not name (as the helm CLI does). Off, a chart in a
	// user's repository cannot make the sidecar reach any URL it likes.
	AllowUnlistedRepositories bool
	// Timeout bounds each network request (an index, a chart, a registry
	// call); 0 is 2 minutes.
	Timeout time.Duration
	// IndexTTL is how long an index file fetched (or found in the cache
	// directory) is used before it is fetched again; 0 is 5 minutes.
	IndexTTL time.Duration
	// CacheBytes bounds the dependency charts kept in memory, by
	// repository, name, version and digest (least recently used first
	// out); 0 is 256 MiB, a negative number keeps none.
	CacheBytes int64
	// MaxArchiveBytes bounds a downloaded chart archive (and everything a
	// registry sends for it); 0 is 32 MiB. MaxIndexBytes bounds an index
	// file; 0 is 128 MiB.
	MaxArchiveBytes, MaxIndexBytes int64
}

// WithDefaults returns the options with the defaults of their zero
// fields applied.
func (o Options) WithDefaults() Options {
	if o.RepositoryCache == "" {
		o.RepositoryCache = filepath.Join(os.TempDir(), "strata-helm-repository-cache")
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.IndexTTL <= 0 {
		o.IndexTTL = 5 * time.Minute
	}
	if o.CacheBytes == 0 {
		o.CacheBytes = 256 << 20
	}
	if o.MaxArchiveBytes <= 0 {
		o.MaxArchiveBytes = 32 << 20
	}
	if o.MaxIndexBytes <= 0 {
		o.MaxIndexBytes = 128 << 20
	}
	return o
}

// A Resolver fetches dependency charts for every request of a plugin:
// index files and resolutions are kept for IndexTTL, loaded charts by
// repository, name, version and digest, and concurrent requests for one
// of them fetch it once.
type Resolver struct {
	opts    Options
	config  configFiles
	charts  *helmrender.Cache[*chart.Chart]
	indexes *helmrender.Cache[*indexEntry]
	// resolved keeps what a version (range) resolved to, by source, name
	// and range, for IndexTTL.
	resolved *helmrender.Cache[resolution]
	flight   singleflight.Group
	now      func() time.Time
}

type indexEntry struct {
	idx     *repo.IndexFile
	fetched time.Time
}

// A resolution is a dependency pinned: the version, where its archive is,
// and the digest of its content (the archive's SHA-256 from the index, or
// the OCI manifest's digest), "" when the index gives none.
type resolution struct {
	version, url, digest string
	at                   time.Time
}

func New(o Options) *Resolver {
	o = o.WithDefaults()
	return &Resolver{
		opts:     o,
		config:   configFiles{repoPath: o.RepositoryConfig, registryPath: o.RegistryConfig},
		charts:   helmrender.NewCache[*chart.Chart](1<<16, o.CacheBytes),
		indexes:  helmrender.NewCache[*indexEntry](32, 1<<62),
		resolved: helmrender.NewCache[resolution](1<<14, 1<<62),
		now:      time.Now,
	}
}

// An Error is a dependency that could not be resolved or
// fetched: it names the dependency, its repository and what to do.
type Error struct {
	Chart, Dependency, Version, Repository string
	Err                                    error
	// Hint says what to do.
	Hint string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chart %q: dependency %q", e.Chart, e.Dependency)
	if e.Version != "" {
		fmt.Fprintf(&b, " version %q", e.Version)
	}
	if e.Repository != "" {
		fmt.Fprintf(&b, " from repository %q", e.Repository)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	if e.Hint != "" {
		b.WriteString("; " + e.Hint)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// fetch returns the chart name at version (a version or range) from an
// http(s) repository or an OCI registry, from the cache when it was
// fetched before.
func (r *Resolver) Fetch(ctx context.Context, src Source, name, version string) (*chart.Chart, error) {
	type result struct {
		ch  *chart.Chart
		err error
	}
	done := make(chan result, 1)
	go func() {
		ch, err := r.fetchShared(src, name, version)
		done <- result{ch, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return nil, res.err
		}
		return helmrender.CloneChart(res.ch), nil
	case <-ctx.Done():
		return nil, &Error{Err: fmt.Errorf("waiting for the download: %w", context.Cause(ctx))}
	}
}

// fetchShared resolves and fetches, each step shared by the requests that
// need it at the same time; the result is the cached chart (the caller
// copies it).
func (r *Resolver) fetchShared(src Source, name, version string) (*chart.Chart, error) {
	res, err := r.resolve(src, name, version)
	if err != nil {
		return nil, err
	}
	key := sha256.Sum256([]byte(strings.Join([]string{src.Kind, src.URL, name, res.version, res.digest}, "\x00")))
	if ch, ok := r.charts.Get(key); ok {
		return ch, nil
	}
	v, err, _ := r.flight.Do("chart\x00"+string(key[:]), func() (any, error) {
		if ch, ok := r.charts.Get(key); ok {
			return ch, nil
		}
		var data []byte
		var err error
		switch src.Kind {
		case "oci":
			data, err = r.pullOCI(src, name, res)
		default:
			data, err = r.downloadArchive(src, res)
		}
		if err != nil {
			return nil, err
		}
		ch, err := loader.LoadArchive(bytes.NewReader(data))
		if err != nil {
			return nil, &Error{Version: res.version, Err: fmt.Errorf("the archive fetched is not a chart: %w", err), Hint: "check the repository"}
		}
		if ch.Metadata.Version != res.version && src.Kind == "http" {
			if !versionEqual(ch.Metadata.Version, res.version) {
				return nil, &Error{Version: res.version, Err: fmt.Errorf("the archive fetched holds version %q", ch.Metadata.Version), Hint: "the repository's index is wrong; tell its owner"}
			}
		}
		r.charts.Add(key, chartSize(ch), ch)
		return ch, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*chart.Chart), nil
}

func versionEqual(a, b string) bool {
	va, err1 := semver.NewVersion(a)
	vb, err2 := semver.NewVersion(b)
	return err1 == nil && err2 == nil && va.Equal(vb)
}

// chartSize is what a loaded chart stands for in the cache: its files.
func chartSize(ch *chart.Chart) int64 {
	var n int64
	for _, f := range ch.Raw {
		n += int64(len(f.Data)) + int64(len(f.Name))
	}
	for _, d := range ch.Dependencies() {
		n += chartSize(d)
	}
	return n + 1
}

// resolve pins a version (range) to a version, the archive's URL and its
// digest, kept for IndexTTL.
func (r *Resolver) resolve(src Source, name, version string) (resolution, error) {
	key := sha256.Sum256([]byte(strings.Join([]string{src.Kind, src.URL, name, version}, "\x00")))
	if res, ok := r.resolved.Get(key); ok && r.now().Sub(res.at) < r.opts.IndexTTL {
		return res, nil
	}
	v, err, _ := r.flight.Do("resolve\x00"+string(key[:]), func() (any, error) {
		if res, ok := r.resolved.Get(key); ok && r.now().Sub(res.at) < r.opts.IndexTTL {
			return res, nil
		}
		var res resolution
		var err error
		if src.Kind == "oci" {
			res, err = r.resolveOCI(src, name, version)
		} else {
			res, err = r.resolveHTTP(src, name, version)
		}
		if err != nil {
			return nil, err
		}
		res.at = r.now()
		r.resolved.Add(key, 1, res)
		return res, nil
	})
	if err != nil {
		return resolution{}, err
	}
	return v.(resolution), nil
}

// resolveHTTP finds the version in the repository's index as Helm does
// (an exact version first, else the newest the range allows, pre-releases
// only when the range asks for them).
func (r *Resolver) resolveHTTP(src Source, name, version string) (resolution, error) {
	idx, err := r.index(src)
	if err != nil {
		return resolution{}, err
	}
	cv, err := idx.Get(name, version)
	if err != nil {
		return resolution{}, &Error{Err: fmt.Errorf("the repository's index has no version of %q matching %q: %w", name, version, err),
			Hint: "check the chart's name and version range in Chart.yaml (and Chart.lock)"}
	}
	if len(cv.URLs) == 0 {
		return resolution{}, &Error{Version: cv.Version, Err: errors.New("the repository's index gives no URL for it"), Hint: "tell the repository's owner"}
	}
	u, err := repo.ResolveReferenceURL(src.URL, cv.URLs[0])
	if err != nil {
		return resolution{}, &Error{Version: cv.Version, Err: fmt.Errorf("the index's URL %q: %w", cv.URLs[0], err)}
	}
	return resolution{version: cv.Version, url: u, digest: cv.Digest}, nil
}

// resolveOCI pins a version: an exact version is the tag; a range is
// matched against the repository's tags as Helm matches them.
func (r *Resolver) resolveOCI(src Source, name, version string) (resolution, error) {
	ref := strings.TrimSuffix(strings.TrimPrefix(src.URL, registry.OCIScheme+"://"), "/") + "/" + name
	client, b, err := r.registryClient(src)
	if err != nil {
		return resolution{}, err
	}
	tag := version
	if _, err := semver.NewVersion(version); err != nil || version == "" {
		b.reset(r.opts.MaxIndexBytes)
		tags, err := client.Tags(ref)
		if err != nil {
			return resolution{}, r.netError(b, fmt.Errorf("listing the tags of %s: %w", ref, err), "the registry's tag list")
		}
		if tag, err = registry.GetTagMatchingVersionOrConstraint(tags, version); err != nil {
			return resolution{}, &Error{Err: fmt.Errorf("%s: %w", ref, err), Hint: "check the version range in Chart.yaml"}
		}
	}
	b.reset(r.opts.MaxIndexBytes)
	desc, err := client.Resolve(ref + ":" + strings.ReplaceAll(tag, "+", "_"))
	if err != nil {
		return resolution{}, r.netError(b, fmt.Errorf("resolving %s:%s: %w", ref, tag, err), "the registry's manifest")
	}
	return resolution{version: tag, url: ref + ":" + tag, digest: desc.Digest.String()}, nil
}

// netError turns a failed network call into a Error that says
// whether the size limit cut it.
func (r *Resolver) netError(b *budget, err error, what string) error {
	if b.exceeded() {
		return &Error{Err: fmt.Errorf("%s is larger than the limit of %d bytes", what, b.limit.Load()), Hint: "the operator may raise the limit: cmp serve --helm-dependency-max-index-bytes for an index or a registry's manifest, --helm-dependency-max-archive-bytes for a chart archive"}
	}
	return &Error{Err: err, Hint: "check that the repository is reachable from the sidecar and its credentials in the Helm configuration"}
}

// Options returns the resolver's options, defaults applied.
func (r *Resolver) Options() Options { return r.opts }

// Config reads the Helm configuration the options name
// (RepositoryConfig, RegistryConfig), again only when a file changed.
func (r *Resolver) Config() (*Config, error) { return r.config.load() }
