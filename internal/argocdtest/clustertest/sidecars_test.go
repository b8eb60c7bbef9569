//go:build linux

package clustertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/internal/testbin"
)

// The plugins' sockets, as the repo-server names them in Applications.
const (
	e2ePlugin  = "strata-e2e-v1" // testdata/plugin.yaml: name strata-e2e, version v1
	helmPlugin = "helm"          // strata cmp serve --builtin helm
)

// startSidecars starts `strata cmp serve` three times, each socket in
// e.sockDir (the repo-server's ARGOCD_PLUGINSOCKFILEPATH): the test
// plugin of testdata/plugin.yaml, the built-in Helm plugin, and the
// sidecar exactly as deploy/cmp configures it.
func (e *env) startSidecars(ctx context.Context, baseEnv []string, dirs map[string]string) error {
	conf, err := filepath.Abs(filepath.Join("testdata", "plugin.yaml"))
	if err != nil {
		return err
	}
	sidecars := []struct {
		name, sock string
		args       []string
	}{
		{"strata-cmp-e2e", e2ePlugin, []string{"--config", conf}},
		{"strata-cmp-helm", helmPlugin, []string{"--builtin", "helm"}},
	}
	for _, s := range sidecars {
		cache := filepath.Join(dirs["tmp"], s.name+"-cache")
		argv := append([]string{e.strata, "cmp", "serve", "--socket-dir", e.sockDir, "--cache-dir", cache, "--log-format", "json"}, s.args...)
		p, err := start(s.name, e.logDir, baseEnv, argv...)
		if err != nil {
			return err
		}
		e.procs = append(e.procs, p)
		if err := p.waitFile(ctx, filepath.Join(e.sockDir, s.sock+".sock")); err != nil {
			return err
		}
	}
	return e.startDeploySidecar(ctx, baseEnv, dirs)
}

// deploySidecar is deploy/cmp as it is on this branch: the plugin.yaml of
// its ConfigMap and the container's command, args and environment.
type deploySidecar struct {
	pluginYAML string
	socket     string // NAME or NAME-VERSION of the plugin.yaml
	command    []string
	args       []string
	env        []string
}

// readDeployCMP reads deploy/cmp's plugin ConfigMap and sidecar patch.
func readDeployCMP() (*deploySidecar, error) {
	root, err := testbin.Root()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "deploy", "cmp")
	var cm struct {
		Data map[string]string `json:"data"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "plugin-config.yaml"))
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(data, &cm); err != nil {
		return nil, fmt.Errorf("deploy/cmp/plugin-config.yaml: %w", err)
	}
	var patch struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name    string   `json:"name"`
						Command []string `json:"command"`
						Args    []string `json:"args"`
						Env     []struct {
							Name  string `json:"name"`
							Value string `json:"value"`
						} `json:"env"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	data, err = os.ReadFile(filepath.Join(dir, "repo-server-sidecar.yaml"))
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(data, &patch); err != nil {
		return nil, fmt.Errorf("deploy/cmp/repo-server-sidecar.yaml: %w", err)
	}
	for _, c := range patch.Spec.Template.Spec.Containers {
		if c.Name != "strata-cmp" {
			continue
		}
		d := &deploySidecar{pluginYAML: cm.Data["plugin.yaml"], command: c.Command, args: c.Args}
		for _, v := range c.Env {
			d.env = append(d.env, v.Name+"="+v.Value)
		}
		var plugin struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				Version string `json:"version"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(d.pluginYAML), &plugin); err != nil || plugin.Metadata.Name == "" {
			return nil, fmt.Errorf("deploy/cmp/plugin-config.yaml: data.plugin.yaml has no metadata.name (%v)", err)
		}
		d.socket = plugin.Metadata.Name
		if plugin.Spec.Version != "" {
			d.socket += "-" + plugin.Spec.Version
		}
		return d, nil
	}
	return nil, fmt.Errorf("deploy/cmp/repo-server-sidecar.yaml has no container strata-cmp")
}

// startDeploySidecar runs the sidecar of deploy/cmp: its args as they are,
// but for the paths a pod mounts (the plugin.yaml, /tmp) and the metrics
// port, which are moved under the test's directory.
func (e *env) startDeploySidecar(ctx context.Context, baseEnv []string, dirs map[string]string) error {
	d, err := readDeployCMP()
	if err != nil {
		return err
	}
	conf := filepath.Join(dirs["home"], "cmp-server", "config", "plugin.yaml")
	if err := os.MkdirAll(filepath.Dir(conf), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(conf, []byte(d.pluginYAML), 0o600); err != nil {
		return err
	}
	metrics, err := freeAddr()
	if err != nil {
		return err
	}
	tmp := filepath.Join(dirs["tmp"], "deploy-sidecar")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	argv := []string{e.strata}
	for _, a := range d.args {
		switch {
		case strings.Contains(a, "/home/argocd/cmp-server/config/plugin.yaml"):
			a = strings.ReplaceAll(a, "/home/argocd/cmp-server/config/plugin.yaml", conf)
		case strings.HasPrefix(a, "--metrics-listen="):
			a = "--metrics-listen=" + metrics
		default:
			a = strings.ReplaceAll(a, "=/tmp/", "="+tmp+"/")
		}
		argv = append(argv, a)
	}
	// The pod mounts the plugins volume at the repo-server's default
	// socket directory, /home/argocd/cmp-server/plugins; here that
	// directory is ARGOCD_PLUGINSOCKFILEPATH, the same for both.
	env := append(append([]string{}, baseEnv...), d.env...)
	env = append(env, "ARGOCD_PLUGINSOCKFILEPATH="+e.sockDir, "TMPDIR="+tmp)
	p, err := start("strata-cmp-deploy", e.logDir, env, argv...)
	if err != nil {
		return err
	}
	e.procs = append(e.procs, p)
	if err := p.waitFile(ctx, filepath.Join(e.sockDir, d.socket+".sock")); err != nil {
		return err
	}
	return p.waitListen(ctx, metrics)
}
