package deploy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/strata-dev/strata/deploy/deploytest"
	"github.com/strata-dev/strata/internal/generator"
	"github.com/strata-dev/strata/internal/golden"
)

// valueSets are the chart's value sets under test: the defaults and the
// variants a user turns on.
var valueSets = []struct {
	name string
	vals string
}{
	{"defaults", ""},
	{"everything", `
operator: {enabled: true, image: {repository: registry.example.com/platform/modules, tag: "1.4.2"}}
metrics:
  serviceMonitor: {enabled: true}
  podMonitor: {enabled: true}
  prometheusRule: {enabled: true}
  dashboards: {enabled: true, namespace: monitoring}
`},
	{"operator-only", `
generator: {enabled: false}
layersController: {enabled: false}
operator:
  enabled: true
  replicas: 1
  image: {repository: registry.example.com/platform/modules, tag: "1.4.2"}
  rbac:
    clusterAdmin: false
    rules:
      - {apiGroups: [apps], resources: [deployments], verbs: [get, list, watch, create, update, patch, delete]}
`},
	{"single-replicas", `
generator: {replicas: 1, namespace: argocd, token: {existingSecret: my-token}}
layersController: {replicas: 1, watchNamespace: team-a, crds: {install: false}, extraArgs: [--no-catalog]}
image: {tag: v0.1.0, digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
`},
}

func parseValues(t *testing.T, s string) map[string]any {
	t.Helper()
	v := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestChartLint runs Helm's linter on the chart with each value set.
func TestChartLint(t *testing.T) {
	dir := deploytest.Path(t, deploytest.ChartDir)
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			l := lint.RunAll(dir, parseValues(t, vs.vals), "strata")
			for _, m := range l.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				}
			}
		})
	}
}

// TestChartTemplate renders the chart with each value set and checks the
// defaults it promises: every container secure, with a memory limit and
// STRATA_MEMORY_LIMIT from it, probes, a PodDisruptionBudget where there is
// more than one replica, one image version, valid server configuration.
func TestChartTemplate(t *testing.T) {
	ch := deploytest.LoadChart(t)
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			vals := parseValues(t, vs.vals)
			objs := deploytest.Render(t, ch, "strata", "strata", vals)
			deployments := deploytest.OfKind(objs, "Deployment")
			if len(deployments) == 0 {
				t.Fatal("no Deployment rendered")
			}
			for _, u := range deployments {
				var d appsv1.Deployment
				deploytest.Into(t, u, &d)
				checkChartDeployment(t, &d, objs)
			}
			if g := deploytest.Find(objs, "ConfigMap", "strata-generator-config"); g != nil {
				data, _, _ := unstructured.NestedString(g.Object, "data", "gen.yaml")
				if _, err := generator.ParseConfig([]byte(data), "strata-generator-config data.gen.yaml", "/etc/strata"); err != nil {
					t.Error(err)
				}
			}
			if op := deploytest.Find(objs, "Deployment", "strata-addon-operator"); op != nil {
				var d appsv1.Deployment
				deploytest.Into(t, op, &d)
				in := container(d.Spec.Template.Spec.InitContainers, "strata-install")
				if in == nil || fmt.Sprint(in.Args) != fmt.Sprint(installArgs("/var/run/strata/strata")) {
					t.Errorf("the operator's strata-install runs %+v, want %v", in, installArgs("/var/run/strata/strata"))
				}
				if c := container(d.Spec.Template.Spec.Containers, "addon-operator"); c == nil || len(c.Command) == 0 || c.Command[0] != "/var/run/strata/strata" {
					t.Errorf("the operator does not run the strata strata-install copied: %+v", c)
				}
			}
			if rule := deploytest.Find(objs, "PrometheusRule", "strata"); rule != nil {
				src := deploytest.Decode(t, readFile(t, "deploy/observability/prometheusrule.yaml"))[0]
				if !reflect.DeepEqual(rule.Object["spec"], src.Object["spec"]) {
					t.Error("the chart's PrometheusRule differs from deploy/observability/prometheusrule.yaml")
				}
			}
		})
	}
}

func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(deploytest.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func checkChartDeployment(t *testing.T, d *appsv1.Deployment, objs []*unstructured.Unstructured) {
	t.Helper()
	pod := &d.Spec.Template.Spec
	checkVolumes(t, pod)
	appVersion := deploytest.LoadChart(t).Metadata.AppVersion
	for _, c := range append(append([]corev1.Container{}, pod.InitContainers...), pod.Containers...) {
		checkSecure(t, &c, pod)
		if strings.HasPrefix(c.Image, "ghcr.io/strata-dev/strata:") && !strings.HasPrefix(c.Image, "ghcr.io/strata-dev/strata:"+appVersion) {
			t.Errorf("%s/%s: image %s, want strata's %s", d.Name, c.Name, c.Image, appVersion)
		}
	}
	for _, c := range pod.Containers {
		checkMemoryEnv(t, &c)
		if c.LivenessProbe == nil || c.ReadinessProbe == nil {
			t.Errorf("%s/%s: no liveness or readiness probe", d.Name, c.Name)
		}
	}
	if d.Spec.Template.Spec.AutomountServiceAccountToken == nil && d.Spec.Template.Spec.ServiceAccountName == "" {
		t.Errorf("%s: mounts the default ServiceAccount's token; it needs none", d.Name)
	}
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	pdb := deploytest.Find(objs, "PodDisruptionBudget", d.Name)
	if (replicas > 1) != (pdb != nil) {
		t.Errorf("%s: %d replicas, PodDisruptionBudget: %v", d.Name, replicas, pdb != nil)
	}
	if pdb != nil {
		sel, _, _ := unstructured.NestedStringMap(pdb.Object, "spec", "selector", "matchLabels")
		for k, v := range sel {
			if d.Spec.Template.Labels[k] != v {
				t.Errorf("%s: the PodDisruptionBudget selects %s=%s, which the pods lack", d.Name, k, v)
			}
		}
	}
}

// TestChartSchema checks that values.schema.json rejects bad values, each
// with the path Helm names.
func TestChartSchema(t *testing.T) {
	ch := deploytest.LoadChart(t)
	for _, tc := range []struct {
		vals, want string
	}{
		{"generator: {replicas: two}", "/generator/replicas"},
		{"generator: {replicas: 0}", "/generator/replicas"},
		{"layersController: {extraArgs: --flag}", "/layersController/extraArgs"},
		{"layersController: {unknown: 1}", "unknown"},
		{"nope: true", "nope"},
		{"image: {pullPolicy: Sometimes}", "/image/pullPolicy"},
		{"image: {digest: latest}", "/image/digest"},
		{"operator: {resources: {limits: {memory: lots}}}", "/operator/resources/limits/memory"},
		{"generator: {namespace: Argo_CD}", "/generator/namespace"},
		{"metrics: {serviceMonitor: {interval: soon}}", "/metrics/serviceMonitor/interval"},
	} {
		t.Run(tc.vals, func(t *testing.T) {
			_, err := deploytest.Template(ch, "strata", "strata", parseValues(t, tc.vals))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template with %s: %v, want an error naming %s", tc.vals, err, tc.want)
			}
		})
	}
	// Templates' own checks.
	_, err := deploytest.Template(ch, "strata", "strata", parseValues(t, "operator: {enabled: true}"))
	if err == nil || !strings.Contains(err.Error(), "operator.image.repository") {
		t.Errorf("the operator without a modules image: %v, want an error naming operator.image.repository", err)
	}
}

// TestChartFiles checks that the chart's copies of the CRDs and of
// deploy/observability are the same as the originals (-update copies them).
func TestChartFiles(t *testing.T) {
	root := deploytest.Root(t)
	for src, dst := range map[string]string{
		"deploy/crds/application.giantswarm.io_apps.yaml":     "files/crds/application.giantswarm.io_apps.yaml",
		"deploy/crds/application.giantswarm.io_catalogs.yaml": "files/crds/application.giantswarm.io_catalogs.yaml",
		"deploy/observability/prometheusrule.yaml":            "files/observability/prometheusrule.yaml",
	} {
		golden.CheckFile(t, filepath.Join(root, deploytest.ChartDir, dst), readFile(t, src))
	}
	dashboards, err := filepath.Glob(filepath.Join(root, "deploy/observability/dashboards/*.json"))
	if err != nil || len(dashboards) == 0 {
		t.Fatalf("no dashboards: %v", err)
	}
	for _, d := range dashboards {
		data, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		golden.CheckFile(t, filepath.Join(root, deploytest.ChartDir, "files/observability/dashboards", filepath.Base(d)), data)
	}
}
