package deps

import (
	"errors"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/registry"
)

// FuzzRepositoryConfig reads a repositories.yaml and a registry
// config.json (the operator's input) and resolves a dependency's
// repository field (a chart's input) against them: nothing may panic, and
// a source that is not refused must be one the configuration names (or
// file://).
func FuzzRepositoryConfig(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nrepositories:\n  - name: bitnami\n    url: https://charts.bitnami.com/bitnami\n  - name: oci\n    url: oci://ghcr.io/org/charts\n    caFile: /ca.pem\n"),
		[]byte(`{"auths":{"https://index.docker.io/v1/":{"auth":"dTpw"},"ghcr.io":{}},"credHelpers":{"x.io":"ecr"}}`),
		"https://charts.bitnami.com/bitnami/")
	f.Add([]byte("repositories:\n- {name: a, url: 'http://h:80/p/../q'}\n"), []byte(`{}`), "http://h:80/q")
	f.Add([]byte("repositories: [{name: a, url: oci://h}]"), []byte(`{"auths":{"r.io":{}}}`), "oci://r.io/x/y")
	f.Add([]byte("repositories: [{name: a, url: https://h}]"), []byte(``), "@a")
	f.Add([]byte(""), []byte(`[`), "alias:a")
	f.Add([]byte("repositories: [{name: a}, {name: a, url: https://h}]"), []byte(`null`), "file://../x")
	f.Add([]byte("repositories: [null]"), []byte(`{"auths":null}`), "oci://h@x/y")
	f.Fuzz(func(t *testing.T, reposYAML, registryJSON []byte, repository string) {
		repos, err := parseRepositories(reposYAML)
		if err != nil {
			return
		}
		hosts, err := parseRegistryHosts(registryJSON)
		if err != nil {
			return
		}
		cfg := &Config{repos: repos, hosts: hosts}
		src, err := cfg.Source(repository, false)
		if err != nil {
			if errors.Is(err, ErrUnlisted) && (strings.HasPrefix(repository, "@") || strings.HasPrefix(repository, "alias:") || strings.HasPrefix(repository, "file://")) {
				t.Fatalf("%q: an alias or file:// cannot be unlisted", repository)
			}
			return
		}
		switch src.Kind {
		case "file":
			if !strings.HasPrefix(repository, "file://") {
				t.Fatalf("%q resolved to file://", repository)
			}
		case "http":
			if src.entry == nil || !urlEqual(src.entry.URL, src.URL) {
				t.Fatalf("%q resolved to %q with no entry naming it", repository, src.URL)
			}
			named := false
			for _, e := range repos {
				named = named || e == src.entry
			}
			if !named {
				t.Fatalf("%q resolved to an entry the configuration does not hold", repository)
			}
		case "oci":
			if !registry.IsOCI(src.URL) {
				t.Fatalf("%q resolved to OCI %q", repository, src.URL)
			}
			ok := false
			for _, e := range repos {
				ok = ok || (registry.IsOCI(e.URL) && ociUnder(src.URL, e.URL))
			}
			if h := registryHost(strings.TrimPrefix(src.URL, "oci://")); hosts[h] {
				ok = true
			}
			if !ok {
				t.Fatalf("%q resolved to %q, which no entry or registry host names", repository, src.URL)
			}
		default:
			t.Fatalf("%q: kind %q", repository, src.Kind)
		}
	})
}
