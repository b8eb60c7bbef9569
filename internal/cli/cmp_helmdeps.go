package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/strata-dev/strata/internal/helmplugin"
	"github.com/strata-dev/strata/internal/helmplugin/deps"
)

// helmDepFlags say where the built-in Helm plugin fetches the dependencies
// of Chart.yaml that charts/ lacks: Helm's own configuration files, as the
// helm CLI finds them (see docs/helm.md).
type helmDepFlags struct {
	repositoryConfig string
	registryConfig   string
	repositoryCache  string
	allowUnlisted    bool
	timeout          time.Duration
	cacheBytes       int64
	maxArchiveBytes  int64
	maxIndexBytes    int64
}

func (f *helmDepFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.repositoryConfig, "helm-repository-config", deps.DefaultRepositoryConfig(), "with --builtin helm: Helm's repositories.yaml, the chart repositories (and oci:// registries) dependencies may come from, with credentials and TLS settings ($HELM_REPOSITORY_CONFIG)")
	fs.StringVar(&f.registryConfig, "helm-registry-config", deps.DefaultRegistryConfig(), "with --builtin helm: Helm's registry config.json, credentials for OCI registries ($HELM_REGISTRY_CONFIG)")
	fs.StringVar(&f.repositoryCache, "helm-repository-cache", deps.DefaultRepositoryCache(), "with --builtin helm: directory of the repositories' index files ($HELM_REPOSITORY_CACHE); must be writable")
	fs.BoolVar(&f.allowUnlisted, "helm-allow-unlisted-repositories", false, "with --builtin helm: let charts fetch dependencies from repositories the Helm configuration does not name (off: a chart cannot make strata reach any URL it likes)")
	fs.DurationVar(&f.timeout, "helm-dependency-timeout", 2*time.Minute, "with --builtin helm: bound on each network request fetching a dependency")
	fs.Int64Var(&f.maxArchiveBytes, "helm-dependency-max-archive-bytes", 32<<20, "with --builtin helm: largest dependency chart archive fetched (0: the default)")
	fs.Int64Var(&f.maxIndexBytes, "helm-dependency-max-index-bytes", 128<<20, "with --builtin helm: largest repository index.yaml or registry manifest fetched (0: the default)")
	fs.Int64Var(&f.cacheBytes, "helm-dependency-cache-bytes", 256<<20, "with --builtin helm: size of the dependency charts kept in memory by repository, name, version and digest (0 keeps none)")
}

func (f *helmDepFlags) options() helmplugin.DependencyOptions {
	o := helmplugin.DependencyOptions{
		RepositoryConfig:          f.repositoryConfig,
		RegistryConfig:            f.registryConfig,
		RepositoryCache:           f.repositoryCache,
		AllowUnlistedRepositories: f.allowUnlisted,
		Timeout:                   f.timeout,
		CacheBytes:                f.cacheBytes,
		MaxArchiveBytes:           max(f.maxArchiveBytes, 0),
		MaxIndexBytes:             max(f.maxIndexBytes, 0),
	}
	if o.CacheBytes <= 0 {
		o.CacheBytes = -1
	}
	return o
}
