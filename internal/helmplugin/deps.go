package helmplugin

import (
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

	"github.com/Masterminds/semver/v3"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/strata-dev/strata/internal/helmplugin/deps"
)

// DependencyOptions say where the dependencies of Chart.yaml that charts/
// lacks come from (see deps.Options).
type DependencyOptions = deps.Options

// A DependencyError is a dependency that could not be resolved or
// fetched (see deps.Error).
type DependencyError = deps.Error

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
	opts := r.Options()
	derr := func(d *chart.Dependency, version string, err error, hint string) error {
		return &DependencyError{Chart: ch.Name(), Dependency: d.Name, Version: version, Repository: d.Repository, Err: err, Hint: hint}
	}
	cfg, err := r.Config()
	if err != nil {
		return fmt.Errorf("chart %q: fetching its dependencies: %w", ch.Name(), err)
	}
	reqs := ch.Metadata.Dependencies
	sources := make([]deps.Source, len(reqs))
	for _, i := range missing {
		d := reqs[i]
		src, err := cfg.Source(d.Repository, opts.AllowUnlistedRepositories)
		switch {
		case d.Repository == "":
			return derr(d, d.Version, fmt.Errorf("charts/ holds no chart %q and the dependency names no repository", d.Name),
				"vendor the chart under charts/ or give the dependency a repository")
		case errors.Is(err, deps.ErrUnlisted):
			return derr(d, d.Version, errors.New("the Helm configuration of the sidecar names no such repository"),
				fmt.Sprintf("the operator must add it to the repositories configuration (%s) or the registry configuration (%s), or allow unlisted repositories (strata cmp serve --helm-allow-unlisted-repositories)", orNone(opts.RepositoryConfig), orNone(opts.RegistryConfig)))
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
				if src, err := cfg.Source(c.Repository, false); err == nil {
					c.Repository = src.URL
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
		if src.Kind == "file" {
			dep, err = j.localDependency(d, src.URL)
		} else {
			dep, err = r.Fetch(ctx, src, d.Name, version)
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
