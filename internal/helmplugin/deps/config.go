package deps

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v4/pkg/helmpath"
	"helm.sh/helm/v4/pkg/registry"
	"helm.sh/helm/v4/pkg/repo/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// DefaultRepositoryConfig, DefaultRegistryConfig and DefaultRepositoryCache
// return the paths the helm CLI uses: $HELM_REPOSITORY_CONFIG,
// $HELM_REGISTRY_CONFIG and $HELM_REPOSITORY_CACHE, else Helm's default
// paths under $HELM_CONFIG_HOME / $HELM_CACHE_HOME (XDG directories).
func DefaultRepositoryConfig() string {
	return envOr("HELM_REPOSITORY_CONFIG", helmpath.ConfigPath("repositories.yaml"))
}

// DefaultRegistryConfig: see DefaultRepositoryConfig.
func DefaultRegistryConfig() string {
	return envOr("HELM_REGISTRY_CONFIG", helmpath.ConfigPath("registry", "config.json"))
}

// DefaultRepositoryCache: see DefaultRepositoryConfig.
func DefaultRepositoryCache() string {
	return envOr("HELM_REPOSITORY_CACHE", helmpath.CachePath("repository"))
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// maxConfigBytes bounds repositories.yaml and the registry config.json.
const maxConfigBytes = 4 << 20

// Config is what the operator's Helm configuration names: the
// repositories of repositories.yaml and the registry hosts of the registry
// config.json.
type Config struct {
	repos []*repo.Entry
	// hosts are the registry hosts (host or host:port) the registry
	// config.json holds credentials for.
	hosts map[string]bool
}

// configFiles reads the configuration files again when they change (a
// Secret mounted into the pod is updated in place).
type configFiles struct {
	repoPath, registryPath string

	mu      sync.Mutex
	stamp   [2]fileStamp
	current *Config
}

type fileStamp struct {
	size  int64
	mtime time.Time
	ok    bool
}

func stampOf(p string) (fileStamp, error) {
	if p == "" {
		return fileStamp{}, nil
	}
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fileStamp{}, nil
	case err != nil:
		return fileStamp{}, err
	}
	return fileStamp{size: fi.Size(), mtime: fi.ModTime(), ok: true}, nil
}

// load returns the configuration, read again if a file changed. A file
// that does not exist names nothing, as in helm.
func (c *configFiles) load() (*Config, error) {
	s0, err := stampOf(c.repoPath)
	if err != nil {
		return nil, fmt.Errorf("the Helm repositories configuration %s: %w", c.repoPath, err)
	}
	s1, err := stampOf(c.registryPath)
	if err != nil {
		return nil, fmt.Errorf("the Helm registry configuration %s: %w", c.registryPath, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current != nil && c.stamp == [2]fileStamp{s0, s1} {
		return c.current, nil
	}
	cfg := &Config{hosts: map[string]bool{}}
	if s0.ok {
		data, err := readConfig(c.repoPath)
		if err != nil {
			return nil, fmt.Errorf("the Helm repositories configuration: %w", err)
		}
		if cfg.repos, err = parseRepositories(data); err != nil {
			return nil, fmt.Errorf("the Helm repositories configuration %s: %w", c.repoPath, err)
		}
	}
	if s1.ok {
		data, err := readConfig(c.registryPath)
		if err != nil {
			return nil, fmt.Errorf("the Helm registry configuration: %w", err)
		}
		if cfg.hosts, err = parseRegistryHosts(data); err != nil {
			return nil, fmt.Errorf("the Helm registry configuration %s: %w", c.registryPath, err)
		}
	}
	c.stamp, c.current = [2]fileStamp{s0, s1}, cfg
	return cfg, nil
}

func readConfig(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, maxConfigBytes)
	}
	return data, nil
}

// parseRepositories reads a repositories.yaml into Helm's own type, as
// repo.LoadFile does, and checks each entry: a name used once, a URL of a
// scheme strata can fetch.
func parseRepositories(data []byte) ([]*repo.Entry, error) {
	var f repo.File
	if err := sigsyaml.Unmarshal(data, &f); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	var out []*repo.Entry
	for i, e := range f.Repositories {
		if e == nil {
			continue
		}
		if e.Name == "" {
			return nil, fmt.Errorf("repositories[%d]: no name", i)
		}
		if names[e.Name] {
			return nil, fmt.Errorf("repositories[%d]: the name %q is used twice", i, e.Name)
		}
		names[e.Name] = true
		u, err := url.Parse(e.URL)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != registry.OCIScheme) {
			return nil, fmt.Errorf("repositories[%d] (%s): url %q is not an http://, https:// or oci:// URL", i, e.Name, e.URL)
		}
		out = append(out, e)
	}
	return out, nil
}

// parseRegistryHosts returns the hosts a registry config.json (Docker's
// format, which `helm registry login` writes) holds credentials for: the
// keys of "auths" and "credHelpers", without a scheme or path.
func parseRegistryHosts(data []byte) (map[string]bool, error) {
	var doc struct {
		Auths       map[string]json.RawMessage `json:"auths"`
		CredHelpers map[string]json.RawMessage `json:"credHelpers"`
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return map[string]bool{}, nil
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not a registry config.json: %w", err)
	}
	hosts := map[string]bool{}
	for _, m := range []map[string]json.RawMessage{doc.Auths, doc.CredHelpers} {
		for k := range m {
			if h := registryHost(k); h != "" {
				hosts[h] = true
			}
		}
	}
	return hosts, nil
}

// registryHost turns a key of config.json ("ghcr.io",
// "https://index.docker.io/v1/") into a host[:port], lower-cased.
func registryHost(k string) string {
	k = strings.TrimSpace(k)
	if _, rest, ok := strings.Cut(k, "://"); ok {
		k = rest
	}
	k, _, _ = strings.Cut(k, "/")
	return strings.ToLower(k)
}

// Source is where a dependency comes from, as its repository field
// names it.
type Source struct {
	Kind string // "file", "http", "oci"
	// URL is the repository's URL (http, oci), or the path of a file://
	// dependency as written.
	URL string
	// entry is the repositories.yaml entry for it: credentials and TLS
	// settings. For an unlisted repository the operator allowed, an entry
	// with only a name and URL.
	entry *repo.Entry
}

// ErrUnlisted marks a repository the configuration does not name.
var ErrUnlisted = errors.New("not named by the Helm configuration")

// resolveSource turns a dependency's repository field into a source, by
// Helm's rules: "@name" and "alias:name" name an entry of
// repositories.yaml; an http(s) URL must equal an entry's URL as Helm
// compares them (a trailing slash and a cleaned path aside); an oci://
// reference must lie under an oci:// entry or on a host of the registry
// config. Anything else is refused unless allowUnlisted.
func (c *Config) Source(repository string, allowUnlisted bool) (Source, error) {
	switch {
	case repository == "":
		return Source{}, errors.New("it names no repository")
	case strings.HasPrefix(repository, "file://"):
		return Source{Kind: "file", URL: repository}, nil
	case strings.HasPrefix(repository, "@") || strings.HasPrefix(repository, "alias:"):
		name := strings.TrimPrefix(strings.TrimPrefix(repository, "@"), "alias:")
		for _, e := range c.repos {
			if e.Name == name {
				kind := "http"
				if registry.IsOCI(e.URL) {
					kind = "oci"
				}
				return Source{Kind: kind, URL: e.URL, entry: e}, nil
			}
		}
		return Source{}, fmt.Errorf("no repository named %q in the Helm repositories configuration", name)
	case registry.IsOCI(repository):
		u, err := url.Parse(repository)
		if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return Source{}, fmt.Errorf("%q is not an oci://HOST/PATH reference", repository)
		}
		for _, e := range c.repos {
			if registry.IsOCI(e.URL) && ociUnder(repository, e.URL) {
				return Source{Kind: "oci", URL: repository, entry: e}, nil
			}
		}
		if c.hosts[strings.ToLower(u.Host)] || allowUnlisted {
			return Source{Kind: "oci", URL: repository, entry: &repo.Entry{Name: "oci", URL: repository}}, nil
		}
		return Source{}, ErrUnlisted
	}
	u, err := url.Parse(repository)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Source{}, fmt.Errorf("%q is not a repository Helm can use: write an http(s):// or oci:// URL, @NAME or alias:NAME (a repository of repositories.yaml), or file://PATH", repository)
	}
	for _, e := range c.repos {
		if !registry.IsOCI(e.URL) && urlEqual(e.URL, repository) {
			return Source{Kind: "http", URL: e.URL, entry: e}, nil
		}
	}
	if allowUnlisted {
		return Source{Kind: "http", URL: repository, entry: &repo.Entry{Name: "strata-unlisted-" + shortHash(repository), URL: repository}}, nil
	}
	return Source{}, ErrUnlisted
}

// urlEqual compares two repository URLs as Helm does: parsed, an empty
// path as "/", paths cleaned, then as strings.
func urlEqual(a, b string) bool {
	au, err := url.Parse(a)
	if err != nil {
		return false
	}
	bu, err := url.Parse(b)
	if err != nil {
		return false
	}
	for _, u := range []*url.URL{au, bu} {
		if u.Path == "" {
			u.Path = "/"
		}
		u.Path = path.Clean(u.Path)
		u.RawPath = ""
	}
	return au.String() == bu.String()
}

// ociUnder reports whether the oci:// reference ref is the entry's
// reference or below it (at a path boundary), on the same host.
func ociUnder(ref, entry string) bool {
	r, err := url.Parse(ref)
	if err != nil {
		return false
	}
	e, err := url.Parse(entry)
	if err != nil {
		return false
	}
	if !strings.EqualFold(r.Host, e.Host) {
		return false
	}
	rp, ep := path.Clean("/"+r.Path), path.Clean("/"+e.Path)
	return ep == "/" || rp == ep || strings.HasPrefix(rp, ep+"/")
}
