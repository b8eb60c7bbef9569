package deps

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

// TestDeployedHelmConfiguration reads deploy/cmp/helm: the Secret's
// repositories.yaml and registry config.json must be what the plugin
// reads, and the sidecar's HELM_* variables must point into the Secret's
// mount.
func TestDeployedHelmConfiguration(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "deploy", "cmp", "helm")
	var secret struct {
		Metadata   struct{ Name string }
		StringData map[string]string `json:"stringData"`
	}
	read := func(name string, v any) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := sigsyaml.Unmarshal(data, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	read("helm-repositories.yaml", &secret)
	repos, err := parseRepositories([]byte(secret.StringData["repositories.yaml"]))
	if err != nil || len(repos) == 0 {
		t.Fatalf("repositories.yaml: %v (%d entries)", err, len(repos))
	}
	hosts, err := parseRegistryHosts([]byte(secret.StringData["registry-config.json"]))
	if err != nil || len(hosts) == 0 {
		t.Fatalf("registry-config.json: %v (%v)", err, hosts)
	}
	var deploy struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Name         string
						Args         []string
						Env          []struct{ Name, Value string }
						VolumeMounts []struct{ Name, MountPath string } `json:"volumeMounts"`
					}
					Volumes []struct {
						Name   string
						Secret *struct{ SecretName string } `json:"secret"`
					}
				}
			}
		}
	}
	read("repo-server-helm-sidecar.yaml", &deploy)
	spec := deploy.Spec.Template.Spec
	if len(spec.Containers) != 1 || !strings.Contains(strings.Join(spec.Containers[0].Args, " "), "--builtin=helm") {
		t.Fatalf("want one container serving --builtin=helm: %+v", spec.Containers)
	}
	c := spec.Containers[0]
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	var secretMount string
	for _, v := range spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == secret.Metadata.Name {
			secretMount = mounts[v.Name]
		}
	}
	if secretMount == "" {
		t.Fatalf("the Secret %s is not mounted", secret.Metadata.Name)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	for name, key := range map[string]string{"HELM_REPOSITORY_CONFIG": "repositories.yaml", "HELM_REGISTRY_CONFIG": "registry-config.json"} {
		if env[name] != path.Join(secretMount, key) {
			t.Errorf("%s = %q, want the Secret's %s at %s", name, env[name], key, path.Join(secretMount, key))
		}
	}
	for _, e := range repos {
		if e.CAFile != "" && !strings.HasPrefix(e.CAFile, secretMount+"/") {
			t.Errorf("repository %s: caFile %s is not in the Secret's mount", e.Name, e.CAFile)
		} else if e.CAFile != "" && secret.StringData[path.Base(e.CAFile)] == "" {
			t.Errorf("repository %s: caFile %s is not a key of the Secret", e.Name, e.CAFile)
		}
	}
	if !strings.HasPrefix(env["HELM_REPOSITORY_CACHE"], mounts["strata-helm-tmp"]) {
		t.Errorf("HELM_REPOSITORY_CACHE %q is not on the writable volume", env["HELM_REPOSITORY_CACHE"])
	}
}
