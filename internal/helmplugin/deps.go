package helmplugin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
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

// DependencyOptions say where the dependencies of Chart.yaml that charts/
// lacks come from, as `helm dependency build` (which Argo CD's Helm source
// runs) fetches them. Zero fields take the documented defaults.
type DependencyOptions struct {
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

func (o DependencyOptions) withDefaults() DependencyOptions {
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

// A depResolver fetches dependency charts for every request of a plugin:
// index files and resolutions are kept for IndexTTL, loaded charts by
// repository, name, version and digest, and concurrent requests for one
// of them fetch it once.
type depResolver struct {
	opts    DependencyOptions
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

func newDepResolver(o DependencyOptions) *depResolver {
	o = o.withDefaults()
	return &depResolver{
		opts:     o,
		config:   configFiles{repoPath: o.RepositoryConfig, registryPath: o.RegistryConfig},
		charts:   helmrender.NewCache[*chart.Chart](1<<16, o.CacheBytes),
		indexes:  helmrender.NewCache[*indexEntry](32, 1<<62),
		resolved: helmrender.NewCache[resolution](1<<14, 1<<62),
		now:      time.Now,
	}
}

// A DependencyError is a dependency that could not be resolved or
// fetched: it names the dependency, its repository and what to do.
type DependencyError struct {
	Chart, Dependency, Version, Repository string
	Err                                    error
	// Hint says what to do.
	Hint string
}

func (e *DependencyError) Error() string {
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

func (e *DependencyError) Unwrap() error { return e.Err }

// addDependencies gives the chart the dependencies of its Chart.yaml that
// charts/ lacks, as `helm dependency build` would put them there: with a
// Chart.lock, the locked versions (the lock must match Chart.yaml, as in
// helm); without, the newest version each range allows. file://
// dependencies are loaded from the repository (never from outside it);
// the others are fetched from the repositories the Helm configuration
// names, through a cache. Nothing is written to the repository: the
// charts are added to the chart in memory.
func (j *job) addDependencies(ctx context.Context, ch *chart.Chart) error {
	var missing []int
	for i, d := range ch.Metadata.Dependencies {
		if d != nil && !hasDependency(ch, d.Name) {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	r := j.p.deps
	derr := func(d *chart.Dependency, version string, err error, hint string) error {
		return &DependencyError{Chart: ch.Name(), Dependency: d.Name, Version: version, Repository: d.Repository, Err: err, Hint: hint}
	}
	cfg, err := r.config.load()
	if err != nil {
		return fmt.Errorf("chart %q: fetching its dependencies: %w", ch.Name(), err)
	}
	reqs := ch.Metadata.Dependencies
	sources := make([]depSource, len(reqs))
	for _, i := range missing {
		d := reqs[i]
		src, err := cfg.resolveSource(d.Repository, r.opts.AllowUnlistedRepositories)
		switch {
		case d.Repository == "":
			return derr(d, d.Version, fmt.Errorf("charts/ holds no chart %q and the dependency names no repository", d.Name),
				"vendor the chart under charts/ or give the dependency a repository")
		case errors.Is(err, errUnlisted):
			return derr(d, d.Version, errors.New("the Helm configuration of the sidecar names no such repository"),
				fmt.Sprintf("the operator must add it to the repositories configuration (%s) or the registry configuration (%s), or allow unlisted repositories (strata cmp serve --helm-allow-unlisted-repositories)", orNone(r.opts.RepositoryConfig), orNone(r.opts.RegistryConfig)))
		case err != nil:
			return derr(d, d.Version, err, "fix the repository in Chart.yaml")
		}
		sources[i] = src
	}
	// The lock, checked as helm dependency build checks it: the digest of
	// Chart.yaml's dependencies (aliases of repositories resolved to URLs)
	// and the locked ones.
	var locked []*chart.Dependency
	if ch.Lock != nil {
		hashed := make([]*chart.Dependency, len(reqs))
		for i, d := range reqs {
			if d == nil {
				continue
			}
			c := *d
			if strings.HasPrefix(c.Repository, "@") || strings.HasPrefix(c.Repository, "alias:") {
				if src, err := cfg.resolveSource(c.Repository, false); err == nil {
					c.Repository = src.url
				}
			}
			hashed[i] = &c
		}
		sum, err := hashRequirements(hashed, ch.Lock.Dependencies)
		if err != nil || sum != ch.Lock.Digest {
			return fmt.Errorf("chart %q in %s: the lock file (Chart.lock) is out of sync with the dependencies file (Chart.yaml): its digest is %q, Chart.yaml's dependencies give %q; run `helm dependency update` in the chart's directory and commit Chart.lock", ch.Name(), j.appRel, ch.Lock.Digest, sum)
		}
		locked = ch.Lock.Dependencies
	}
	added := map[string]bool{}
	for _, i := range missing {
		d := reqs[i]
		version := d.Version
		if l := lockedFor(locked, reqs, i); l != nil {
			version = l.Version
		}
		src := sources[i]
		var dep *chart.Chart
		var err error
		if src.kind == "file" {
			dep, err = j.localDependency(d, src.url)
		} else {
			dep, err = r.fetch(ctx, src, d.Name, version)
		}
		if err != nil {
			var de *DependencyError
			if errors.As(err, &de) {
				de.Chart, de.Dependency, de.Repository = ch.Name(), d.Name, d.Repository
				if de.Version == "" {
					de.Version = version
				}
				return de
			}
			return derr(d, version, err, "")
		}
		if dep.Name() != d.Name {
			return derr(d, version, fmt.Errorf("the chart fetched is named %q", dep.Name()), "fix the dependency's name in Chart.yaml")
		}
		// One chart under two aliases is one archive in charts/.
		if added[dep.Name()+"\x00"+dep.Metadata.Version] {
			continue
		}
		added[dep.Name()+"\x00"+dep.Metadata.Version] = true
		ch.AddDependency(dep)
	}
	return nil
}

func orNone(p string) string {
	if p == "" {
		return "none given"
	}
	return p
}

func hasDependency(ch *chart.Chart, name string) bool {
	for _, c := range ch.Dependencies() {
		if c.Name() == name {
			return true
		}
	}
	return false
}

// lockedFor returns the lock's entry for reqs[i]: Helm's resolver writes
// the lock in the order of Chart.yaml, so the entry at i when it names the
// same chart, else the first of that name and repository.
func lockedFor(locked, reqs []*chart.Dependency, i int) *chart.Dependency {
	if locked == nil {
		return nil
	}
	d := reqs[i]
	if i < len(locked) && locked[i] != nil && locked[i].Name == d.Name {
		return locked[i]
	}
	for _, l := range locked {
		if l != nil && l.Name == d.Name && l.Repository == d.Repository {
			return l
		}
	}
	return nil
}

// hashRequirements is the digest helm writes into Chart.lock: the SHA-256
// of the JSON of [Chart.yaml's dependencies, the locked ones].
func hashRequirements(req, lock []*chart.Dependency) (string, error) {
	data, err := json.Marshal([2][]*chart.Dependency{req, lock})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// localDependency loads a file:// dependency: a chart directory that must
// lie inside the repository (through symbolic links too), loaded and
// cached like the application's chart, its version within the range of
// Chart.yaml.
func (j *job) localDependency(d *chart.Dependency, repository string) (*chart.Chart, error) {
	rel, err := j.localPath(repository)
	if err != nil {
		return nil, &DependencyError{Err: err, Hint: "file:// dependencies must be chart directories inside the repository"}
	}
	sub := *j
	req := *j.req
	req.AppPath = filepath.Join(j.req.RepoRoot, filepath.FromSlash(rel))
	sub.req, sub.appRel = &req, rel
	fi, err := os.Stat(req.AppPath)
	if err != nil || !fi.IsDir() {
		return nil, &DependencyError{Err: fmt.Errorf("%s is not a directory in the repository", rel), Hint: "fix the file:// path (relative to the chart's directory)"}
	}
	ch, err := sub.loadChart()
	if err != nil {
		return nil, err
	}
	if d.Version != "" {
		c, err := semver.NewConstraint(d.Version)
		if err != nil {
			return nil, &DependencyError{Err: fmt.Errorf("invalid version constraint: %w", err), Hint: "fix the version in Chart.yaml"}
		}
		v, err := semver.NewVersion(ch.Metadata.Version)
		if err != nil || !c.Check(v) {
			return nil, &DependencyError{Err: fmt.Errorf("the chart in %s has version %q", rel, ch.Metadata.Version), Hint: "change the version range in Chart.yaml or the chart's version"}
		}
	}
	return ch, nil
}

// localPath resolves a file:// repository, relative to the chart's
// directory (an absolute path is taken from the repository's root), to
// a slash-separated path inside the repository, following symbolic links:
// a path or link leading out of the repository is refused.
func (j *job) localPath(repository string) (string, error) {
	p := strings.TrimPrefix(repository, "file://")
	if p == "" || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("%q names no directory", repository)
	}
	p = filepath.ToSlash(p)
	var rel string
	if path.IsAbs(p) {
		rel = path.Clean(strings.TrimLeft(p, "/"))
	} else {
		rel = path.Join(j.appRel, p)
	}
	if !filepath.IsLocal(filepath.FromSlash(rel)) && rel != "." {
		return "", fmt.Errorf("%q leads outside the repository", repository)
	}
	realRoot, err := filepath.EvalSymlinks(j.req.RepoRoot)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(filepath.Join(realRoot, filepath.FromSlash(rel)))
	if err != nil {
		return "", fmt.Errorf("%q: %w", repository, unwrapPath(err))
	}
	r, err := filepath.Rel(realRoot, real)
	if err != nil || (r != "." && !filepath.IsLocal(r)) {
		return "", fmt.Errorf("%q leads outside the repository (through a symbolic link)", repository)
	}
	return filepath.ToSlash(r), nil
}

// fetch returns the chart name at version (a version or range) from an
// http(s) repository or an OCI registry, from the cache when it was
// fetched before.
func (r *depResolver) fetch(ctx context.Context, src depSource, name, version string) (*chart.Chart, error) {
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
		return cloneChart(res.ch), nil
	case <-ctx.Done():
		return nil, &DependencyError{Err: fmt.Errorf("waiting for the download: %w", context.Cause(ctx))}
	}
}

// fetchShared resolves and fetches, each step shared by the requests that
// need it at the same time; the result is the cached chart (the caller
// copies it).
func (r *depResolver) fetchShared(src depSource, name, version string) (*chart.Chart, error) {
	res, err := r.resolve(src, name, version)
	if err != nil {
		return nil, err
	}
	key := sha256.Sum256([]byte(strings.Join([]string{src.kind, src.url, name, res.version, res.digest}, "\x00")))
	if ch, ok := r.charts.Get(key); ok {
		return ch, nil
	}
	v, err, _ := r.flight.Do("chart\x00"+string(key[:]), func() (any, error) {
		if ch, ok := r.charts.Get(key); ok {
			return ch, nil
		}
		var data []byte
		var err error
		switch src.kind {
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
			return nil, &DependencyError{Version: res.version, Err: fmt.Errorf("the archive fetched is not a chart: %w", err), Hint: "check the repository"}
		}
		if ch.Metadata.Version != res.version && src.kind == "http" {
			if !versionEqual(ch.Metadata.Version, res.version) {
				return nil, &DependencyError{Version: res.version, Err: fmt.Errorf("the archive fetched holds version %q", ch.Metadata.Version), Hint: "the repository's index is wrong; tell its owner"}
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
func (r *depResolver) resolve(src depSource, name, version string) (resolution, error) {
	key := sha256.Sum256([]byte(strings.Join([]string{src.kind, src.url, name, version}, "\x00")))
	if res, ok := r.resolved.Get(key); ok && r.now().Sub(res.at) < r.opts.IndexTTL {
		return res, nil
	}
	v, err, _ := r.flight.Do("resolve\x00"+string(key[:]), func() (any, error) {
		if res, ok := r.resolved.Get(key); ok && r.now().Sub(res.at) < r.opts.IndexTTL {
			return res, nil
		}
		var res resolution
		var err error
		if src.kind == "oci" {
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
func (r *depResolver) resolveHTTP(src depSource, name, version string) (resolution, error) {
	idx, err := r.index(src)
	if err != nil {
		return resolution{}, err
	}
	cv, err := idx.Get(name, version)
	if err != nil {
		return resolution{}, &DependencyError{Err: fmt.Errorf("the repository's index has no version of %q matching %q: %w", name, version, err),
			Hint: "check the chart's name and version range in Chart.yaml (and Chart.lock)"}
	}
	if len(cv.URLs) == 0 {
		return resolution{}, &DependencyError{Version: cv.Version, Err: errors.New("the repository's index gives no URL for it"), Hint: "tell the repository's owner"}
	}
	u, err := repo.ResolveReferenceURL(src.url, cv.URLs[0])
	if err != nil {
		return resolution{}, &DependencyError{Version: cv.Version, Err: fmt.Errorf("the index's URL %q: %w", cv.URLs[0], err)}
	}
	return resolution{version: cv.Version, url: u, digest: cv.Digest}, nil
}

// resolveOCI pins a version: an exact version is the tag; a range is
// matched against the repository's tags as Helm matches them.
func (r *depResolver) resolveOCI(src depSource, name, version string) (resolution, error) {
	ref := strings.TrimSuffix(strings.TrimPrefix(src.url, registry.OCIScheme+"://"), "/") + "/" + name
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
			return resolution{}, &DependencyError{Err: fmt.Errorf("%s: %w", ref, err), Hint: "check the version range in Chart.yaml"}
		}
	}
	b.reset(r.opts.MaxIndexBytes)
	desc, err := client.Resolve(ref + ":" + strings.ReplaceAll(tag, "+", "_"))
	if err != nil {
		return resolution{}, r.netError(b, fmt.Errorf("resolving %s:%s: %w", ref, tag, err), "the registry's manifest")
	}
	return resolution{version: tag, url: ref + ":" + tag, digest: desc.Digest.String()}, nil
}

// netError turns a failed network call into a DependencyError that says
// whether the size limit cut it.
func (r *depResolver) netError(b *budget, err error, what string) error {
	if b.exceeded() {
		return &DependencyError{Err: fmt.Errorf("%s is larger than the limit of %d bytes", what, b.limit.Load()), Hint: "the operator may raise the limit: cmp serve --helm-dependency-max-index-bytes for an index or a registry's manifest, --helm-dependency-max-archive-bytes for a chart archive"}
	}
	return &DependencyError{Err: err, Hint: "check that the repository is reachable from the sidecar and its credentials in the Helm configuration"}
}
