//go:build linux

package clustertest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// gitSets are the ApplicationSets of TestGitAndClusterGenerators: the
// most common real ApplicationSet (git directories × clusters, Go
// templates) and a git files generator over YAML values files (the
// default templates), both on the shared repository.
func (e *env) gitSets() []map[string]any {
	set := func(name string, goTemplate bool, generators []any, tmpl map[string]any) map[string]any {
		spec := map[string]any{"generators": generators, "template": tmpl}
		if goTemplate {
			spec["goTemplate"] = true
			spec["goTemplateOptions"] = []any{"missingkey=error"}
		}
		return map[string]any{
			"apiVersion": "argoproj.io/v1alpha1",
			"kind":       "ApplicationSet",
			"metadata":   map[string]any{"name": name, "namespace": argoNS},
			"spec":       spec,
		}
	}
	app := func(name, path, server, ns string, labels, annotations map[string]any) map[string]any {
		return map[string]any{
			"metadata": map[string]any{"name": name, "labels": labels, "annotations": annotations},
			"spec": map[string]any{
				"project":     "default",
				"source":      map[string]any{"repoURL": e.repo.url, "targetRevision": "main", "path": path},
				"destination": map[string]any{"server": server, "namespace": ns},
			},
		}
	}
	return []map[string]any{
		set("e2e-git-clusters", true, []any{map[string]any{"matrix": map[string]any{"generators": []any{
			map[string]any{"git": map[string]any{
				"repoURL": e.repo.url, "revision": "main",
				"directories": []any{map[string]any{"path": "*"}, map[string]any{"path": "static", "exclude": true}},
			}},
			// The matrix templates its second generator with the first's
			// parameters: values see the git generator's, not the cluster's.
			map[string]any{"clusters": map[string]any{"values": map[string]any{"suffix": "{{.path.basename}}"}}},
		}}}},
			app("{{.path.basename}}-{{.name}}", "{{.path.path}}", "{{.server}}", "git-{{.path.basenameNormalized}}",
				map[string]any{"cluster": "{{.name}}", "suffix": "{{.values.suffix}}", "segment": "{{index .path.segments 0}}"},
				map[string]any{"server": "{{.server}}", "repo": "{{.path.path}} on {{.name}}"})),
		set("e2e-git-files", false, []any{map[string]any{"git": map[string]any{
			"repoURL": e.repo.url, "revision": "main",
			"files": []any{map[string]any{"path": "chart/values*.yaml"}},
		}}},
			app("files-{{path.filenameNormalized}}", "{{path}}", "https://kubernetes.default.svc", "files-{{tier}}",
				map[string]any{"tier": "{{tier}}"},
				map[string]any{"greeting": "{{greeting}}", "file": "{{path.filename}} in {{path.basename}}", "features": "{{features}}"})),
	}
}

// TestGitAndClusterGenerators: the real ApplicationSet controller
// generates from the repository (through the repo-server) and from Argo
// CD's cluster Secrets; `strata appset render`, given the same repository
// as a local bare clone (--repo) and the Secrets from the cluster
// (--kubeconfig), makes exactly the same Applications.
func TestGitAndClusterGenerators(t *testing.T) {
	t.Parallel()
	e := setup(t)
	sets := e.gitSets()

	// A second cluster, as `argocd cluster add` stores it (the controller
	// need not reach it: the Applications are not synced).
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-staging", Namespace: argoNS, Labels: map[string]string{
			"argocd.argoproj.io/secret-type": "cluster", "env": "staging",
		}},
		StringData: map[string]string{"name": "staging", "server": "https://staging.invalid:6443", "config": `{"tlsClientConfig":{"insecure":true}}`},
	}
	if _, err := e.cluster.Client.CoreV1().Secrets(argoNS).Create(t.Context(), secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range sets {
			name := s["metadata"].(map[string]any)["name"].(string)
			_ = e.cluster.Dynamic.Resource(appSetGVR).Namespace(argoNS).Delete(t.Context(), name, metav1.DeleteOptions{})
		}
	})
	var docs [][]byte
	for _, s := range sets {
		data, err := yaml.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, data)
		e.apply(t, appSetGVR, s)
	}
	file := filepath.Join(t.TempDir(), "git-appsets.yaml")
	if err := os.WriteFile(file, bytes.Join(docs, []byte("---\n")), 0o600); err != nil {
		t.Fatal(err)
	}

	// chart and cmp (static excluded) × in-cluster and staging.
	e.waitApps(t, "e2e-git-clusters", map[string]string{
		"chart-in-cluster": "", "chart-staging": "", "cmp-in-cluster": "", "cmp-staging": "",
	})
	e.waitApps(t, "e2e-git-files", map[string]string{"files-values.yaml": "bronze", "files-values-prod.yaml": "gold"})
	e.compareRender(t, file, []string{"e2e-git-clusters", "e2e-git-files"},
		"--repo", e.repo.url+"="+e.repo.bare, "--kubeconfig", e.cluster.Kubeconfig, "--argocd-namespace", argoNS)
}
