package helmplugin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/registry"

	"github.com/strata-dev/strata/internal/helmplugin/deps"
)

// IsChartReference reports whether arg names a chart the way `helm
// template` takes one from a repository: oci://HOST/PATH/NAME, or
// REPO/NAME (a repository of the Helm repositories configuration).
// A path that exists is a directory, not a reference; the caller checks.
func IsChartReference(arg string) bool {
	if registry.IsOCI(arg) {
		return true
	}
	repo, name, ok := strings.Cut(arg, "/")
	return ok && repo != "" && name != "" && !strings.ContainsAny(name, "/\\") &&
		!strings.HasPrefix(arg, ".") && !strings.Contains(repo, ":")
}

// FetchChartDir fetches the chart ref names (see FetchChart) and writes it
// under dest as a chart directory, whose path it returns.
func FetchChartDir(ctx context.Context, o DependencyOptions, ref, version, dest string) (string, error) {
	ch, err := FetchChart(ctx, o, ref, version)
	if err != nil {
		return "", err
	}
	if err := chartutil.SaveDir(ch, dest); err != nil {
		return "", fmt.Errorf("writing %s to %s: %w", ref, dest, err)
	}
	return filepath.Join(dest, ch.Name()), nil
}

// FetchChart fetches the chart a `helm template` argument names, an
// oci://HOST/PATH/NAME[:TAG] reference or REPO/NAME, at version (a version
// or range; "" the newest), with the client, configuration, credentials
// and limits the plugin fetches dependencies with. The reference comes from
// the user running strata, not from a chart, so an oci:// registry the
// configuration does not list is allowed; REPO must be an entry of
// repositories.yaml, as for helm.
func FetchChart(ctx context.Context, o DependencyOptions, ref, version string) (*chart.Chart, error) {
	r := deps.New(o)
	cfg, err := r.Config()
	if err != nil {
		return nil, err
	}
	var repository, name string
	if registry.IsOCI(ref) {
		i := strings.LastIndex(ref, "/")
		repository, name = ref[:i], ref[i+1:]
		if n, tag, ok := strings.Cut(name, ":"); ok {
			if version != "" && version != tag {
				return nil, fmt.Errorf("%s: the tag %s and --version %s differ: give one", ref, tag, version)
			}
			name, version = n, tag
		}
		if u, err := url.Parse(repository); err != nil || u.Host == "" || name == "" {
			return nil, fmt.Errorf("%s is not an oci://HOST/PATH/CHART reference", ref)
		}
	} else {
		repo, n, ok := strings.Cut(ref, "/")
		if !ok || repo == "" || n == "" {
			return nil, fmt.Errorf("%s: write a chart directory, oci://HOST/PATH/CHART, or REPO/CHART (REPO a repository of %s)", ref, o.RepositoryConfig)
		}
		repository, name = "@"+repo, n
	}
	src, err := cfg.Source(repository, registry.IsOCI(ref))
	if err != nil {
		return nil, fmt.Errorf("%s: %w (add it with `helm repo add %s URL`, or name another file with --helm-repository-config)", ref, err, strings.TrimPrefix(repository, "@"))
	}
	ch, err := r.Fetch(ctx, src, name, version)
	if err != nil {
		var de *DependencyError
		if errors.As(err, &de) {
			msg := fmt.Sprintf("fetching %s", ref)
			if v := cmp.Or(de.Version, version); v != "" {
				msg += " version " + v
			}
			if de.Hint != "" {
				return nil, fmt.Errorf("%s: %w; %s", msg, de.Err, de.Hint)
			}
			return nil, fmt.Errorf("%s: %w", msg, de.Err)
		}
		return nil, fmt.Errorf("fetching %s: %w", ref, err)
	}
	return ch, nil
}
