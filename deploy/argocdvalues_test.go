package deploy_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/deploy/deploytest"
	"github.com/strata-dev/strata/internal/golden"
)

const argocdValuesHeader = `# Values for Argo CD's community chart (argo/argo-cd) that add strata's
# sidecars to the repo-server, the same as the kustomize components
# deploy/cmp and deploy/cmp/helm do to Argo CD's install.yaml:
#
#   helm upgrade --install argocd argo/argo-cd -n argocd -f argocd-values.yaml
#
# - strata-install (init container) copies strata from strata's image into
#   the var-files volume the chart already has; strata-cmp runs it in the
#   plugin's tool image with the plugin.yaml of ConfigMap strata-cmp-plugin.
# - strata-helm runs strata's built-in Helm plugin from strata's image, with
#   the chart repositories of Secret strata-helm-repositories.
# Keep what you use; replace the example plugin.yaml, tool image and
# repositories with yours (docs/install.md).
#
# Generated from the components by TestArgoCDValues (go test ./deploy -update);
# do not edit by hand.
`

// TestArgoCDValues checks that argocd-values.yaml holds what the
// components add to install.yaml: the init container, the sidecars, their
// volumes, the plugin ConfigMap and the repositories Secret.
func TestArgoCDValues(t *testing.T) {
	objs := deploytest.Compose(t, "deploy/cmp", "deploy/cmp/helm")
	u := deploytest.Find(objs, "Deployment", "argocd-repo-server")
	if u == nil {
		t.Fatal("no argocd-repo-server")
	}
	pod, _, _ := unstructured.NestedMap(u.Object, "spec", "template", "spec")
	strata := func(list any) []any {
		var out []any
		for _, c := range list.([]any) {
			if strings.HasPrefix(c.(map[string]any)["name"].(string), "strata-") {
				out = append(out, c)
			}
		}
		return out
	}
	initContainers, containers := strata(pod["initContainers"]), strata(pod["containers"])
	// The volumes strata's containers mount that Argo CD's chart lacks
	// (it has var-files and plugins, as install.yaml).
	mounted := map[string]bool{}
	for _, c := range append(slices.Clone(initContainers), containers...) {
		for _, m := range c.(map[string]any)["volumeMounts"].([]any) {
			mounted[m.(map[string]any)["name"].(string)] = true
		}
	}
	var volumes []any
	for _, v := range pod["volumes"].([]any) {
		name := v.(map[string]any)["name"].(string)
		if mounted[name] && name != "var-files" && name != "plugins" {
			volumes = append(volumes, v)
		}
	}
	var extra []any
	for _, o := range []struct{ kind, name string }{{"ConfigMap", "strata-cmp-plugin"}, {"Secret", "strata-helm-repositories"}} {
		obj := deploytest.Find(objs, o.kind, o.name)
		if obj == nil {
			t.Fatalf("no %s %s", o.kind, o.name)
		}
		obj = obj.DeepCopy()
		obj.SetNamespace("") // the chart's release namespace
		extra = append(extra, obj.Object)
	}
	values := map[string]any{
		"repoServer": map[string]any{
			"initContainers":  initContainers,
			"extraContainers": containers,
			"volumes":         volumes,
		},
		"extraObjects": extra,
	}
	out, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	golden.CheckFile(t, deploytest.Path(t, deploytest.ChartDir+"/argocd-values.yaml"), append([]byte(argocdValuesHeader), out...))
}
